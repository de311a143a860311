//! An output directory written atomically (nothing partial on an error or
//! a blow-up): everything is
//! written into a hidden staging sibling (`.NAME.staging-PID`, same parent,
//! so the final rename stays on one file system), which replaces the
//! destination only at [`StagedDir::commit`]. Dropped uncommitted (an
//! error, a blow-up), the staging directory is removed and the destination
//! is untouched. An existing non-empty destination is refused unless
//! `force`; with it, the old directory is moved aside, the new one renamed
//! in, and the old one deleted.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// A directory being written (module doc).
pub struct StagedDir {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
}

/// `.NAME.<what>-PID` beside `target`.
fn sibling(target: &Path, what: &str) -> Result<PathBuf> {
    let name = target
        .file_name()
        .with_context(|| format!("{}: the output directory needs a name", target.display()))?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok(parent.join(format!(
        ".{}.{what}-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

impl StagedDir {
    /// Refuses a `target` that is a file, or a non-empty directory unless
    /// `force`; then creates the empty staging directory (and `target`'s
    /// parents).
    pub fn new(target: &Path, force: bool, flag: &str) -> Result<Self> {
        if target.exists() {
            if !target.is_dir() {
                bail!(
                    "{} exists and is not a directory; fix: choose another {flag}",
                    target.display()
                );
            }
            let non_empty = std::fs::read_dir(target)
                .with_context(|| format!("reading {}", target.display()))?
                .next()
                .is_some();
            if non_empty && !force {
                bail!(
                    "{} exists and is not empty; fix: choose another {flag}, or pass --force to \
                     replace it",
                    target.display()
                );
            }
        }
        let staging = sibling(target, "staging")?;
        if staging.exists() {
            std::fs::remove_dir_all(&staging)
                .with_context(|| format!("removing a stale {}", staging.display()))?;
        }
        std::fs::create_dir_all(&staging)
            .with_context(|| format!("creating {}", staging.display()))?;
        Ok(Self {
            target: target.to_path_buf(),
            staging,
            committed: false,
        })
    }

    /// Where to write the files now.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Puts the staged directory in place of the destination.
    pub fn commit(mut self) -> Result<()> {
        let old = if self.target.exists() {
            let old = sibling(&self.target, "replaced")?;
            std::fs::rename(&self.target, &old)
                .with_context(|| format!("moving the old {} aside", self.target.display()))?;
            Some(old)
        } else {
            None
        };
        if let Err(e) = std::fs::rename(&self.staging, &self.target) {
            if let Some(old) = &old {
                let _ = std::fs::rename(old, &self.target);
            }
            return Err(e)
                .with_context(|| format!("renaming the output into {}", self.target.display()));
        }
        self.committed = true;
        if let Some(old) = old {
            std::fs::remove_dir_all(&old)
                .with_context(|| format!("removing the replaced {}", old.display()))?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// `path` relative to the directory `base` (both made absolute first), for
/// telling the user what to write in a file that lives in `base`.
pub fn relative_to(path: &Path, base: &Path) -> Result<PathBuf> {
    let abs =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("resolving {}", p.display()));
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
