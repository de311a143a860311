//! A private `XDG_RUNTIME_DIR` for a process that has none (a container,
//! CI, ssh without a login session). The Vulkan loader reads the variable
//! while wgpu creates its instance and, when it is unset or invalid,
//! prints `error: XDG_RUNTIME_DIR is invalid or not set` on stderr, which a
//! user reads as physfit's own error. Setting it to a fresh directory of
//! the user's (mode 0700, as the XDG Base Directory specification asks)
//! before the instance exists keeps stderr for physfit's messages.

use std::path::PathBuf;

/// The directory made by [`RuntimeDir::ensure`], removed when dropped.
#[derive(Debug)]
pub struct RuntimeDir {
    made: Option<PathBuf>,
}

impl RuntimeDir {
    /// Leaves a set `XDG_RUNTIME_DIR` alone; otherwise creates a private
    /// directory in the temp dir and points the variable at it. Call at
    /// the start of `main`, while the process has one thread (the
    /// environment is process-wide) and before any wgpu instance. A
    /// directory that cannot be made leaves the variable unset: the
    /// loader's complaint is noise, not a failure.
    pub fn ensure() -> Self {
        if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
            return Self { made: None };
        }
        let made = make_private_dir();
        if let Some(dir) = &made {
            std::env::set_var("XDG_RUNTIME_DIR", dir);
        }
        Self { made }
    }

    /// The directory this process made, if it made one.
    pub fn made(&self) -> Option<&std::path::Path> {
        self.made.as_deref()
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        if let Some(dir) = self.made.take() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// A new directory `physfit-runtime-<pid>-<n>` in the temp dir, only the
/// user's (0700 on Unix); `None` when none could be made.
fn make_private_dir() -> Option<PathBuf> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    (0..100).find_map(|n| {
        let dir = base.join(format!("physfit-runtime-{pid}-{n}"));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        // `create`, not `create_all`: a directory someone else made first
        // is not taken over.
        builder.create(&dir).ok().map(|()| dir)
    })
}
