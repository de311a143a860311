//! Paths as a user would type them from the working directory: every
//! command prints its files through [`shown`]. Paths are built by joining
//! (a scene's directory with a `../out/fox` it names, an output directory
//! with a file name), so printed raw they read `scenes/../out/fox/fit.json`,
//! which nobody would type and which hides where the file is.

use std::path::{Component, Path, PathBuf};

/// `path` with `.` dropped and each `..` cancelling the component before
/// it, without touching the file system (a symbolic link followed by `..`
/// is taken lexically, as a shell's `cd` does). A leading `..` of a
/// relative path stays; an empty result is `.`.
pub fn normalised(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            _ => out.push(c),
        }
    }
    let p: PathBuf = out.iter().collect();
    if p.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        p
    }
}

/// `path` as typed from the working directory `cwd`: normalised
/// ([`normalised`]) and, when it lies under `cwd`, relative to it; a path
/// outside keeps its form (relative paths stay relative, e.g.
/// `../other/out`, absolute ones absolute).
pub fn shown_from(path: &Path, cwd: &Path) -> PathBuf {
    let cwd = normalised(cwd);
    let absolute = normalised(&cwd.join(path));
    match absolute.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) if path.is_absolute() => absolute,
        Err(_) => normalised(path),
    }
}

/// [`shown_from`] the process's working directory, for printing
/// (`format!("{}", shown(p))`); the normalised path when the working
/// directory is unknown.
pub fn shown(path: &Path) -> Shown {
    Shown(match std::env::current_dir() {
        Ok(cwd) => shown_from(path, &cwd),
        Err(_) => normalised(path),
    })
}

/// A path as [`shown`] prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown(pub PathBuf);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.display().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_paths_read_as_typed() {
        let cwd = Path::new("/work/p");
        let s = |p: &str| shown_from(Path::new(p), cwd).display().to_string();
        assert_eq!(
            s("scenes/../out/fox/checkpoint.json"),
            "out/fox/checkpoint.json"
        );
        assert_eq!(s("./out/./fox"), "out/fox");
        assert_eq!(s("/work/p/out/fox"), "out/fox");
        assert_eq!(s("/work/p"), ".");
        assert_eq!(s("."), ".");
        assert_eq!(s("../p/out"), "out");
        assert_eq!(s("../q/out/../x"), "../q/x");
        assert_eq!(s("/tmp/a/../b"), "/tmp/b");
    }
}
