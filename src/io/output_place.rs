//! Where an output directory may be (docs/design.md § Output directories):
//! not a file system root nor the home directory, neither holding nor
//! inside the command's inputs, and with no symbolic link among the
//! folders physfit writes into. Checked before any work, with or without
//! `--force`: these are places whose files no flag makes physfit's.

use std::path::{Path, PathBuf};

use super::output_error::OutputDirError;
use super::owned::Owned;

/// An input of a command, which its output directory may neither hold nor
/// lie inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The file, or the folder the command reads files from.
    pub path: PathBuf,
    /// What it is, for the refusal ("scene file", "reference frames", …).
    pub what: &'static str,
    /// A folder (reference frames, masks): the output directory may not
    /// lie inside it either.
    pub folder: bool,
}

impl Input {
    /// A file the command reads.
    pub fn file(path: impl Into<PathBuf>, what: &'static str) -> Self {
        Self {
            path: path.into(),
            what,
            folder: false,
        }
    }

    /// A folder the command reads files from.
    pub fn folder(path: impl Into<PathBuf>, what: &'static str) -> Self {
        Self {
            path: path.into(),
            what,
            folder: true,
        }
    }
}

/// `path` absolute with every link resolved, whether or not it exists: its
/// longest existing ancestor resolved, the rest appended (after `.` and
/// `..` are taken lexically).
pub fn resolved(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let absolute = super::shown::normalised(&absolute);
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(mut found) => {
                for part in rest.iter().rev() {
                    found.push(part);
                }
                return Ok(found);
            }
            Err(e) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return Err(e),
            },
        }
    }
}

/// Refuses `out` as a root, the home directory, a file, or a place over
/// `inputs` (module doc).
pub fn check_place(out: &Path, inputs: &[Input], command: &str) -> Result<(), OutputDirError> {
    let here = resolved(out).map_err(OutputDirError::io("resolving", out))?;
    if here.parent().is_none() {
        return Err(OutputDirError::Forbidden {
            out: out.to_path_buf(),
            what: "is a file system root",
        });
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        if resolved(Path::new(&home)).is_ok_and(|h| h == here) {
            return Err(OutputDirError::Forbidden {
                out: out.to_path_buf(),
                what: "is the home directory",
            });
        }
    }
    if out.exists() && !out.is_dir() {
        return Err(OutputDirError::NotADirectory {
            out: out.to_path_buf(),
        });
    }
    for input in inputs {
        let Ok(there) = resolved(&input.path) else {
            continue;
        };
        let relation = if there.starts_with(&here) {
            "holds"
        } else if input.folder && here.starts_with(&there) {
            "lies inside"
        } else {
            continue;
        };
        return Err(OutputDirError::OverInput {
            out: out.to_path_buf(),
            command: command.to_string(),
            relation,
            input: input.path.clone(),
            what: input.what,
        });
    }
    Ok(())
}

/// Refuses a symbolic link among the folders under `out` that `owned`'s
/// files lie in (`out` itself, named by the user, may be one).
pub fn check_links(out: &Path, owned: &[Owned], command: &str) -> Result<(), OutputDirError> {
    for o in owned {
        let mut folder = out.to_path_buf();
        for part in o.folder().components() {
            folder.push(part);
            refuse_link(&folder, command)?;
        }
    }
    Ok(())
}

/// Refuses `path` when it is a symbolic link.
pub fn refuse_link(path: &Path, command: &str) -> Result<(), OutputDirError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputDirError::Link {
            path: path.to_path_buf(),
            command: command.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_does_not_exist_resolves_through_its_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            resolved(&dir.path().join("a/../b/c")).unwrap(),
            base.join("b/c")
        );
    }

    #[test]
    fn the_root_and_the_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("frames")).unwrap();
        std::fs::write(d.join("scene.toml"), "").unwrap();
        let inputs = [
            Input::file(d.join("scene.toml"), "scene file"),
            Input::folder(d.join("frames"), "reference frames"),
        ];
        let refusal = |out: &Path| {
            check_place(out, &inputs, "test")
                .err()
                .map(|e| e.to_string())
        };
        assert!(refusal(Path::new("/"))
            .unwrap()
            .contains("file system root"));
        assert!(refusal(d).unwrap().contains("holds"));
        assert!(refusal(&d.join("frames/sub"))
            .unwrap()
            .contains("lies inside"));
        assert_eq!(refusal(&d.join("out")), None);
    }
}
