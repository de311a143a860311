//! A path relative to another directory, for telling the user what to
//! write in a file that lives there (`synth` names the frames a scene's
//! views should read).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use physfit::io::shown;

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
