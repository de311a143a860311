//! The one overwrite rule of every command that writes, and its output
//! written atomically (nothing partial on an error, a blow-up or Ctrl-C).
//!
//! The rule: an output directory may hold anything, but one holding files
//! of the kind the command writes (an earlier run's: [`Owned`]) is refused
//! unless `--force`; with it, only those files are replaced, and nothing
//! else in the directory is touched. Deleting the whole directory instead
//! would make `--out .` (or a directory the user keeps other things in)
//! lose files physfit never wrote.
//!
//! Everything is written into a hidden staging directory inside the
//! destination (`DIR/.physfit-<command>.staging-PID`, on the same file
//! system, and writable wherever DIR is, even for `--out .`), whose files
//! replace the command's earlier ones only at [`StagedDir::commit`].
//! Dropped uncommitted, the staging directory is removed, and so is the
//! destination when this run created it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use physfit::io::shown::shown;

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

    /// The files of this kind under `root`, relative to it.
    fn found(&self, root: &Path) -> Result<Vec<PathBuf>> {
        match self {
            Self::File(f) => Ok(if root.join(f).exists() {
                vec![f.clone()]
            } else {
                Vec::new()
            }),
            Self::Frames { dir, ext } => {
                let folder = root.join(dir);
                if !folder.is_dir() {
                    return Ok(Vec::new());
                }
                let mut found = Vec::new();
                for entry in std::fs::read_dir(&folder)
                    .with_context(|| format!("reading {}", shown(&folder)))?
                {
                    let name = entry
                        .with_context(|| format!("reading {}", shown(&folder)))?
                        .file_name();
                    if is_frame(&name.to_string_lossy(), ext) {
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
fn is_frame(name: &str, ext: &str) -> bool {
    name.strip_prefix("frame_")
        .and_then(|rest| rest.strip_suffix(ext))
        .and_then(|rest| rest.strip_suffix('.'))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Every file of `owned` under `root`.
fn found_all(root: &Path, owned: &[Owned]) -> Result<Vec<PathBuf>> {
    let mut all = Vec::new();
    for o in owned {
        all.extend(o.found(root)?);
    }
    Ok(all)
}

/// "a, b, c" or "a, b, … (N files)".
fn listing(files: &[PathBuf]) -> String {
    const SHOWN: usize = 4;
    let mut names: Vec<String> = files
        .iter()
        .take(SHOWN)
        .map(|f| f.display().to_string())
        .collect();
    if files.len() > SHOWN {
        names.push(format!("… ({} files)", files.len()));
    }
    names.join(", ")
}

/// Refuses `target` when it is a file, or holds files of `owned` and not
/// `force` (module doc), naming the command, the files and the fix.
pub fn check_overwrite(target: &Path, owned: &[Owned], force: bool, command: &str) -> Result<()> {
    if target.exists() && !target.is_dir() {
        bail!(
            "--out {} exists and is not a directory; fix: choose another --out",
            shown(target)
        );
    }
    let earlier = found_all(target, owned)?;
    if !earlier.is_empty() && !force {
        bail!(
            "--out {} holds the files of an earlier `physfit {command}` ({}); fix: choose another \
             --out, or add --force to replace those files (nothing else in it is touched)",
            shown(target),
            listing(&earlier)
        );
    }
    Ok(())
}

/// A directory being written (module doc).
pub struct StagedDir {
    target: PathBuf,
    staging: PathBuf,
    owned: Vec<Owned>,
    created_target: bool,
    committed: bool,
}

impl StagedDir {
    /// Applies the overwrite rule ([`check_overwrite`]), then creates
    /// `target` (and its parents) when missing and the empty staging
    /// directory in it.
    pub fn new(target: &Path, owned: Vec<Owned>, force: bool, command: &str) -> Result<Self> {
        check_overwrite(target, &owned, force, command)?;
        let created_target = !target.exists();
        std::fs::create_dir_all(target)
            .with_context(|| format!("creating the output directory {}", shown(target)))?;
        let staging = target.join(format!(
            ".physfit-{}.staging-{}",
            command.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
            std::process::id()
        ));
        let made = (|| {
            if staging.exists() {
                std::fs::remove_dir_all(&staging)?;
            }
            std::fs::create_dir(&staging)
        })();
        if let Err(e) = made {
            if created_target {
                let _ = std::fs::remove_dir(target);
            }
            return Err(e).with_context(|| format!("creating {}", shown(&staging)));
        }
        Ok(Self {
            target: target.to_path_buf(),
            staging,
            owned,
            created_target,
            committed: false,
        })
    }

    /// Where to write the files now.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Removes the command's earlier files from the destination and moves
    /// the staged ones in.
    pub fn commit(mut self) -> Result<()> {
        for f in found_all(&self.target, &self.owned)? {
            let path = self.target.join(&f);
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the earlier {}", shown(&path)))?;
        }
        merge(&self.staging, &self.target)?;
        self.committed = true;
        std::fs::remove_dir_all(&self.staging)
            .with_context(|| format!("removing {}", shown(&self.staging)))?;
        Ok(())
    }
}

/// Moves every file under `from` to the same place under `to`, creating
/// folders; a folder missing in `to` is moved whole.
fn merge(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", shown(from)))? {
        let entry = entry.with_context(|| format!("reading {}", shown(from)))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() && dst.is_dir() {
            merge(&src, &dst)?;
        } else {
            std::fs::rename(&src, &dst)
                .with_context(|| format!("moving the output into {}", shown(&dst)))?;
        }
    }
    Ok(())
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
            if self.created_target {
                // Only when empty: nothing of anyone else's is removed.
                let _ = std::fs::remove_dir(&self.target);
            }
        }
    }
}

/// `path` relative to the directory `base` (both made absolute first), for
/// telling the user what to write in a file that lives in `base`.
pub fn relative_to(path: &Path, base: &Path) -> Result<PathBuf> {
    let abs =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("resolving {}", shown(p)));
    let (path, base) = (abs(path)?, abs(base)?);
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Ok(out)
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
    fn force_replaces_only_the_commands_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("v")).unwrap();
        for f in [
            "keep.txt",
            "v/frame_0000.png",
            "v/frame_0001.png",
            "v/notes.png",
        ] {
            std::fs::write(out.join(f), "old").unwrap();
        }
        let owned = vec![Owned::frames("v", "png"), Owned::file("a.json")];
        let refused = StagedDir::new(&out, owned.clone(), false, "test")
            .err()
            .unwrap();
        let text = format!("{refused:#}");
        assert!(
            text.contains("--force") && text.contains("v/frame_0000.png"),
            "{text}"
        );
        let staged = StagedDir::new(&out, owned, true, "test").unwrap();
        std::fs::create_dir(staged.path().join("v")).unwrap();
        std::fs::write(staged.path().join("v/frame_0000.png"), "new").unwrap();
        std::fs::write(staged.path().join("a.json"), "new").unwrap();
        staged.commit().unwrap();
        let read = |f: &str| std::fs::read_to_string(out.join(f)).ok();
        assert_eq!(read("keep.txt").as_deref(), Some("old"));
        assert_eq!(read("v/notes.png").as_deref(), Some("old"));
        assert_eq!(read("v/frame_0000.png").as_deref(), Some("new"));
        assert_eq!(read("v/frame_0001.png"), None, "the stale frame is gone");
        assert_eq!(read("a.json").as_deref(), Some("new"));
        let hidden = std::fs::read_dir(&out)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(hidden, 0, "no staging left");
    }

    #[test]
    fn an_uncommitted_run_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new");
        let staged = StagedDir::new(&out, vec![Owned::file("x")], false, "test").unwrap();
        std::fs::write(staged.path().join("x"), "half").unwrap();
        drop(staged);
        assert!(!out.exists());
    }
}
