//! The record that decides what physfit may remove or replace in an output
//! directory: exact names and name patterns, per command, not a manifest
//! (docs/design.md § Output directories). A command's files are exact
//! names (`fit.json`) or frame sequences `dir/frame_<digits>.<ext>` in a
//! named folder; nothing else there is ever touched, and no folder is
//! removed whole.

use std::path::{Path, PathBuf};

/// A file, or a family of files, a command writes in its output
/// directory: what an earlier run of it left there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owned {
    /// One file, relative to the output directory.
    File(PathBuf),
    /// `dir/frame_NNNN.ext` for every N (`dir` relative to the output
    /// directory, empty for the directory itself): a sequence of any
    /// length, so that a longer earlier sequence leaves no stale frames.
    Frames {
        /// The folder, relative to the output directory.
        dir: PathBuf,
        /// The extension, without its dot.
        ext: &'static str,
    },
}

impl Owned {
    /// One file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::File(path.into())
    }

    /// A frame sequence in `dir`.
    pub fn frames(dir: impl Into<PathBuf>, ext: &'static str) -> Self {
        Self::Frames {
            dir: dir.into(),
            ext,
        }
    }

    /// The folder the file or sequence lies in, relative to the output
    /// directory (empty for the directory itself).
    pub fn folder(&self) -> &Path {
        match self {
            Self::File(f) => f.parent().unwrap_or(Path::new("")),
            Self::Frames { dir, .. } => dir,
        }
    }

    /// Whether `relative` (a path relative to the output directory) is a
    /// file of this kind.
    pub fn matches(&self, relative: &Path) -> bool {
        match self {
            Self::File(f) => f == relative,
            Self::Frames { dir, ext } => {
                relative.parent() == Some(dir.as_path())
                    && relative
                        .file_name()
                        .is_some_and(|n| is_frame(&n.to_string_lossy(), ext))
            }
        }
    }

    /// The files of this kind under `root`, relative to it: entries that
    /// exist, links included (a link is replaced, never followed), folders
    /// excluded (a folder of the same name is never physfit's file).
    pub fn found(&self, root: &Path) -> std::io::Result<Vec<PathBuf>> {
        let is_file_or_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir());
        match self {
            Self::File(f) => Ok(if is_file_or_link(&root.join(f)) {
                vec![f.clone()]
            } else {
                Vec::new()
            }),
            Self::Frames { dir, ext } => {
                let folder = root.join(dir);
                // A linked folder is not listed through: the caller refuses it.
                if !std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
                    return Ok(Vec::new());
                }
                let mut found = Vec::new();
                for entry in std::fs::read_dir(&folder)? {
                    let entry = entry?;
                    let name = entry.file_name();
                    if is_frame(&name.to_string_lossy(), ext) && !entry.file_type()?.is_dir() {
                        found.push(dir.join(name));
                    }
                }
                found.sort();
                Ok(found)
            }
        }
    }
}

/// `frame_<digits>.<ext>`, the sequence layout every command writes.
pub fn is_frame(name: &str, ext: &str) -> bool {
    name.strip_prefix("frame_")
        .and_then(|rest| rest.strip_suffix(ext))
        .and_then(|rest| rest.strip_suffix('.'))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Every file of `owned` under `root`, each once.
pub fn found_all(root: &Path, owned: &[Owned]) -> std::io::Result<Vec<PathBuf>> {
    let mut all = Vec::new();
    for o in owned {
        for f in o.found(root)? {
            if !all.contains(&f) {
                all.push(f);
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names() {
        assert!(is_frame("frame_0000.png", "png"));
        assert!(is_frame("frame_12345.ply", "ply"));
        assert!(!is_frame("frame_.png", "png"));
        assert!(!is_frame("frame_0001.png", "ply"));
        assert!(!is_frame("frame_00a1.png", "png"));
        assert!(!is_frame("my_frame_0001.png", "png"));
    }

    #[test]
    fn only_exact_names_and_frames_in_their_folder_match() {
        let frames = Owned::frames("front", "png");
        assert!(frames.matches(Path::new("front/frame_0003.png")));
        assert!(!frames.matches(Path::new("front/notes.png")));
        assert!(!frames.matches(Path::new("front/sub/frame_0003.png")));
        assert!(!frames.matches(Path::new("frame_0003.png")));
        let file = Owned::file("fit.json");
        assert!(file.matches(Path::new("fit.json")));
        assert!(!file.matches(Path::new("fit.json.bak")));
    }

    #[test]
    fn a_folder_named_like_a_file_is_not_owned() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fit.json")).unwrap();
        std::fs::create_dir_all(dir.path().join("v/frame_0000.png")).unwrap();
        let owned = [Owned::file("fit.json"), Owned::frames("v", "png")];
        assert!(found_all(dir.path(), &owned).unwrap().is_empty());
    }
}
