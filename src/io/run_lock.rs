//! One run per output directory (docs/design.md § Output directories): an
//! advisory lock (`flock`, through `fs4`) on `DIR/.physfit.lock`, taken
//! before any work and held to the end. A second run finds it held and is
//! refused, naming the first as its lock file does (process id and
//! command). The lock dies with its process, so a killed run blocks no
//! one; its file is removed when the run ends.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use super::output_error::OutputDirError;

/// The lock file's name in the output directory.
pub const LOCK_FILE: &str = ".physfit.lock";

/// The held lock of one output directory; released (and its file removed)
/// when dropped.
#[derive(Debug)]
pub struct RunLock {
    file: std::fs::File,
    path: PathBuf,
}

impl RunLock {
    /// Takes the lock of `dir` (which exists) for `command`. Creating the
    /// lock file is also the first write there: a directory physfit cannot
    /// write is refused here, before any work.
    pub fn take(dir: &Path, command: &str) -> Result<Self, OutputDirError> {
        let path = dir.join(LOCK_FILE);
        super::output_place::refuse_link(&path, command)?;
        // A run that ends removes the file while it still holds the lock: a
        // run that opened the old file then locks a file no longer there,
        // sees it and tries again.
        for _ in 0..8 {
            let mut options = std::fs::OpenOptions::new();
            options.read(true).write(true).create(true).truncate(false);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.custom_flags(libc::O_NOFOLLOW);
            }
            let mut file = options
                .open(&path)
                .map_err(OutputDirError::io("creating the lock file", &path))?;
            let held =
                FileExt::try_lock_exclusive(&file).map_err(OutputDirError::io("locking", &path))?;
            if !held {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(OutputDirError::Locked {
                    out: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "its lock file names none".to_string()
                    } else {
                        holder.to_string()
                    },
                });
            }
            if !same_file(&file, &path) {
                continue;
            }
            let note = format!("`physfit {command}`, process {}", std::process::id());
            let written = (|| {
                file.set_len(0)?;
                file.rewind()?;
                file.write_all(note.as_bytes())?;
                file.flush()
            })();
            written.map_err(OutputDirError::io("writing the lock file", &path))?;
            return Ok(Self { file, path });
        }
        Err(OutputDirError::Locked {
            out: dir.to_path_buf(),
            holder: "runs that keep replacing its lock file".to_string(),
        })
    }
}

/// Whether the open `file` is still the one at `path`.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while held (module doc); the lock goes with the handle.
        let _ = std::fs::remove_file(&self.path);
        let _ = FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_is_refused_naming_the_first_and_the_lock_goes_with_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::take(dir.path(), "fit").unwrap();
        let text = RunLock::take(dir.path(), "render").unwrap_err().to_string();
        assert!(
            text.contains("another physfit run")
                && text.contains("`physfit fit`, process")
                && text.contains(&std::process::id().to_string()),
            "{text}"
        );
        drop(first);
        assert!(!dir.path().join(LOCK_FILE).exists());
        let again = RunLock::take(dir.path(), "render");
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn a_lock_left_by_a_killed_run_holds_no_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "`physfit fit`, process 1").unwrap();
        let lock = RunLock::take(dir.path(), "synth");
        assert!(lock.is_ok(), "{lock:?}");
    }
}
