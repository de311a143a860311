//! The one writer discipline of every command that writes (`align`, `fit`,
//! `render` in its three forms, `simulate`, `synth`; docs/design.md
//! § Output directories). [`OutputDir::open`], before any work:
//!
//! 1. refuses a root, the home directory, a file, a place holding or
//!    inside the command's inputs ([`super::output_place`]) and a linked
//!    folder among those the command writes into;
//! 2. refuses an earlier run's files ([`Owned`], exact names and frame
//!    patterns) unless asked to replace or continue them ([`Earlier`]);
//! 3. creates the directory, takes its lock ([`RunLock`]: one run per
//!    directory; creating the lock file checks that it is writable);
//! 4. removes a staging folder an interrupted run left, saying so, and
//!    creates this run's: `DIR/.physfit-<command>.staging`, one name per
//!    command, inside DIR so that moving out of it is a rename.
//!
//! Outputs are written into the staging folder and moved into place by
//! [`OutputDir::commit`], which first removes the earlier run's files of
//! the same names and patterns, and nothing else: no folder is ever
//! removed whole, and a link where a file goes is replaced, never written
//! through. Files a run must write in place while it runs (a fit's
//! checkpoint and camera-check pictures) go through
//! [`OutputDir::write_in_place`]. Dropped, it removes the staging folder,
//! the lock, and the directory itself when this run created it and left
//! it empty.

use std::path::{Path, PathBuf};

use super::atomic_write::write_atomic;
use super::output_error::OutputDirError;
use super::output_place::{check_links, check_place, refuse_link, Input};
use super::owned::{found_all, Owned};
use super::run_lock::RunLock;
use super::shown::shown;

/// What to do with an earlier run's files in the output directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Earlier {
    /// Refuse to start ([`OutputDirError::Earlier`]).
    Refuse,
    /// Keep them: the run continues them (a resumed fit); its own outputs
    /// replace those of the same names at [`OutputDir::commit`].
    Keep,
    /// Replace them (`--force`), removing them only when this run writes
    /// its first file there ([`OutputDir::write_in_place`] or
    /// [`OutputDir::commit`]), so that a run refused or stopped before then
    /// leaves them whole.
    Replace,
}

/// What a command writes and reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputPlan {
    /// The command, as `physfit <command>` names it ("render --params").
    pub command: String,
    /// The files written into staging and moved in at the end.
    pub staged: Vec<Owned>,
    /// The files written in place while the run goes on.
    pub in_place: Vec<Owned>,
    /// The inputs the directory may neither hold nor lie inside.
    pub inputs: Vec<Input>,
    /// The fix named when an earlier run's files are refused.
    pub earlier_fix: String,
    /// The staged file moved into place last, whose presence marks the
    /// outputs whole.
    pub last: Option<PathBuf>,
}

impl OutputPlan {
    /// A command that writes `staged` only, refusing an earlier run's
    /// files unless `--force`.
    pub fn staged(command: &str, staged: Vec<Owned>, inputs: Vec<Input>) -> Self {
        Self {
            command: command.to_string(),
            staged,
            in_place: Vec::new(),
            inputs,
            earlier_fix: "choose another --out, or add --force to replace those files (nothing \
                          else in it is touched)"
                .to_string(),
            last: None,
        }
    }

    fn all_owned(&self) -> Vec<Owned> {
        self.staged.iter().chain(&self.in_place).cloned().collect()
    }
}

/// An output directory opened for one run (module doc).
#[derive(Debug)]
pub struct OutputDir {
    target: PathBuf,
    plan: OutputPlan,
    staging: PathBuf,
    lock: Option<RunLock>,
    created_target: bool,
    earlier_files: Vec<PathBuf>,
    replace_pending: bool,
    /// Files this run wrote in place (relative), which no removal of the
    /// earlier run's files touches.
    written: Vec<PathBuf>,
    stale_staging: Option<PathBuf>,
    /// The staging folder is this run's: made once the lock was held (a
    /// run refused by the lock must not touch the holder's).
    staging_made: bool,
}

/// The staging folder's name for `command`: one per command, so that the
/// next run finds one an interrupted run left.
pub fn staging_name(command: &str) -> String {
    let words: Vec<&str> = command
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!(".physfit-{}.staging", words.join("-"))
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

impl OutputDir {
    /// Opens `out` for a run of `plan` (module doc, steps 1–4).
    pub fn open(out: &Path, plan: OutputPlan, earlier: Earlier) -> Result<Self, OutputDirError> {
        let command = plan.command.clone();
        check_place(out, &plan.inputs, &command)?;
        let owned = plan.all_owned();
        check_links(out, &owned, &command)?;
        let earlier_files = found_all(out, &owned).map_err(OutputDirError::io("reading", out))?;
        if earlier == Earlier::Refuse && !earlier_files.is_empty() {
            return Err(OutputDirError::Earlier {
                out: out.to_path_buf(),
                command,
                listing: listing(&earlier_files),
                fix: plan.earlier_fix.clone(),
            });
        }
        let created_target = !out.exists();
        std::fs::create_dir_all(out)
            .map_err(OutputDirError::io("creating the output directory", out))?;
        let mut dir = Self {
            target: out.to_path_buf(),
            staging: out.join(staging_name(&command)),
            plan,
            lock: None,
            created_target,
            replace_pending: earlier == Earlier::Replace && !earlier_files.is_empty(),
            earlier_files,
            written: Vec::new(),
            stale_staging: None,
            staging_made: false,
        };
        // From here on, a refusal drops `dir`, which removes what it made.
        dir.lock = Some(RunLock::take(out, &command)?);
        if std::fs::symlink_metadata(&dir.staging).is_ok() {
            let removed = if dir.staging.is_symlink() || dir.staging.is_file() {
                std::fs::remove_file(&dir.staging)
            } else {
                std::fs::remove_dir_all(&dir.staging)
            };
            removed.map_err(OutputDirError::io(
                "removing the staging folder an interrupted run left,",
                &dir.staging,
            ))?;
            log::warn!(
                "removed {}: the staging folder of an interrupted `physfit {command}` (its \
                 partial output)",
                shown(&dir.staging)
            );
            dir.stale_staging = Some(dir.staging.clone());
        }
        dir.staging_made = true;
        std::fs::create_dir(&dir.staging).map_err(OutputDirError::io("creating", &dir.staging))?;
        Ok(dir)
    }

    /// Where to write the staged files.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// The output directory.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Whether this run created the output directory.
    pub fn created(&self) -> bool {
        self.created_target
    }

    /// The earlier run's files found when it was opened.
    pub fn earlier_files(&self) -> &[PathBuf] {
        &self.earlier_files
    }

    /// The staging folder of an interrupted run that opening removed.
    pub fn stale_staging(&self) -> Option<&Path> {
        self.stale_staging.as_deref()
    }

    /// Removes the earlier run's files ([`Earlier::Replace`]) if that is
    /// still pending: those of the plan's names and patterns found now,
    /// except what this run wrote.
    pub fn replace_earlier(&mut self) -> Result<(), OutputDirError> {
        if !self.replace_pending {
            return Ok(());
        }
        let owned = self.plan.all_owned();
        self.remove_found(&owned)?;
        self.replace_pending = false;
        Ok(())
    }

    fn remove_found(&self, owned: &[Owned]) -> Result<(), OutputDirError> {
        check_links(&self.target, owned, &self.plan.command)?;
        let found =
            found_all(&self.target, owned).map_err(OutputDirError::io("reading", &self.target))?;
        for f in found.iter().filter(|f| !self.written.contains(f)) {
            let path = self.target.join(f);
            std::fs::remove_file(&path)
                .map_err(OutputDirError::io("removing the earlier", &path))?;
        }
        Ok(())
    }

    /// Writes `bytes` to `relative` in the output directory itself,
    /// atomically; `relative` must be one of the plan's in-place files. The
    /// earlier run's files go first when they are being replaced.
    pub fn write_in_place(&mut self, relative: &Path, bytes: &[u8]) -> Result<(), OutputDirError> {
        self.replace_earlier()?;
        self.replace_one_in_place(relative, bytes)
    }

    /// Writes `bytes` to `relative` as [`OutputDir::write_in_place`] does,
    /// replacing only an earlier file of that name: a replacement of the
    /// earlier run's other files stays pending. For a diagnostic written
    /// before the run has anything of its own to put in their place (a
    /// fit's camera-check picture).
    pub fn replace_one_in_place(
        &mut self,
        relative: &Path,
        bytes: &[u8],
    ) -> Result<(), OutputDirError> {
        debug_assert!(
            self.plan.in_place.iter().any(|o| o.matches(relative)),
            "{} is not among the files written in place",
            relative.display()
        );
        let path = self.target.join(relative);
        let folder = self.target.join(relative.parent().unwrap_or(Path::new("")));
        check_links(
            &self.target,
            &[Owned::File(relative.to_path_buf())],
            &self.plan.command,
        )?;
        std::fs::create_dir_all(&folder).map_err(OutputDirError::io("creating", &folder))?;
        write_atomic(&path, bytes).map_err(OutputDirError::io("writing", &path))?;
        if !self.written.iter().any(|w| w == relative) {
            self.written.push(relative.to_path_buf());
        }
        Ok(())
    }

    /// Removes the in-place file `relative` of an earlier run, now stale,
    /// unless the earlier run is still being kept for a replacement that
    /// has not happened (which will remove it then).
    pub fn remove_in_place(&mut self, relative: &Path) -> Result<(), OutputDirError> {
        if self.replace_pending {
            return Ok(());
        }
        let path = self.target.join(relative);
        refuse_link(path.parent().unwrap_or(&self.target), &self.plan.command)?;
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_dir()) {
            std::fs::remove_file(&path).map_err(OutputDirError::io("removing the stale", &path))?;
        }
        self.written.retain(|w| w != relative);
        Ok(())
    }

    /// Empties the staging folder (what a failed attempt left in it).
    pub fn clear_staging(&mut self) -> Result<(), OutputDirError> {
        std::fs::remove_dir_all(&self.staging)
            .map_err(OutputDirError::io("removing", &self.staging))?;
        std::fs::create_dir(&self.staging).map_err(OutputDirError::io("creating", &self.staging))
    }

    /// Moves the staged files into place (module doc): the earlier run's
    /// files of the staged names and patterns go first, then every staged
    /// file is renamed to its place; the staging folder is left empty.
    pub fn commit(&mut self) -> Result<(), OutputDirError> {
        self.replace_earlier()?;
        let staged = self.plan.staged.clone();
        self.remove_found(&staged)?;
        let command = &self.plan.command;
        let last = self.plan.last.as_deref();
        merge(&self.staging, &self.target, command, last)?;
        if let Some(last) = last {
            let (from, to) = (self.staging.join(last), self.target.join(last));
            if from.exists() {
                std::fs::rename(&from, &to)
                    .map_err(OutputDirError::io("moving the output into", &to))?;
            }
        }
        Ok(())
    }
}

/// Moves every file under `from` (but `skip`, relative to it) to the same
/// place under `to`, creating real folders and refusing linked ones; a
/// file or link in the way was the earlier run's and is replaced by the
/// rename.
fn merge(from: &Path, to: &Path, command: &str, skip: Option<&Path>) -> Result<(), OutputDirError> {
    for entry in std::fs::read_dir(from).map_err(OutputDirError::io("reading", from))? {
        let entry = entry.map_err(OutputDirError::io("reading", from))?;
        if skip.is_some_and(|s| s.as_os_str() == entry.file_name()) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let is_dir = entry
            .file_type()
            .map_err(OutputDirError::io("reading", &src))?
            .is_dir();
        if is_dir {
            refuse_link(&dst, command)?;
            if !dst.is_dir() {
                std::fs::create_dir(&dst).map_err(OutputDirError::io("creating", &dst))?;
            }
            merge(&src, &dst, command, None)?;
            std::fs::remove_dir(&src).map_err(OutputDirError::io("removing", &src))?;
        } else {
            std::fs::rename(&src, &dst)
                .map_err(OutputDirError::io("moving the output into", &dst))?;
        }
    }
    Ok(())
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if self.staging_made {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
        drop(self.lock.take());
        if self.created_target {
            // Only when empty: nothing of anyone else's is removed.
            let _ = std::fs::remove_dir(&self.target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(staged: Vec<Owned>) -> OutputPlan {
        OutputPlan::staged("test", staged, Vec::new())
    }

    fn hidden(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect()
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
        let refused = OutputDir::open(&out, plan(owned.clone()), Earlier::Refuse).unwrap_err();
        let text = refused.to_string();
        assert!(
            text.contains("--force") && text.contains("v/frame_0000.png"),
            "{text}"
        );
        let mut staged = OutputDir::open(&out, plan(owned), Earlier::Replace).unwrap();
        std::fs::create_dir(staged.staging().join("v")).unwrap();
        std::fs::write(staged.staging().join("v/frame_0000.png"), "new").unwrap();
        std::fs::write(staged.staging().join("a.json"), "new").unwrap();
        staged.commit().unwrap();
        drop(staged);
        let read = |f: &str| std::fs::read_to_string(out.join(f)).ok();
        assert_eq!(read("keep.txt").as_deref(), Some("old"));
        assert_eq!(read("v/notes.png").as_deref(), Some("old"));
        assert_eq!(read("v/frame_0000.png").as_deref(), Some("new"));
        assert_eq!(read("v/frame_0001.png"), None, "the stale frame is gone");
        assert_eq!(read("a.json").as_deref(), Some("new"));
        assert!(hidden(&out).is_empty(), "no staging or lock left");
    }

    #[test]
    fn an_uncommitted_run_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new");
        let staged = OutputDir::open(&out, plan(vec![Owned::file("x")]), Earlier::Refuse).unwrap();
        std::fs::write(staged.staging().join("x"), "half").unwrap();
        drop(staged);
        assert!(!out.exists());
    }

    #[test]
    fn a_stale_staging_folder_is_removed_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let stale = out.join(staging_name("render --params"));
        std::fs::create_dir_all(stale.join("front")).unwrap();
        std::fs::write(stale.join("front/frame_0000.png"), "partial").unwrap();
        let opened = OutputDir::open(
            out,
            OutputPlan::staged("render --params", vec![Owned::file("x")], Vec::new()),
            Earlier::Refuse,
        )
        .unwrap();
        assert_eq!(opened.stale_staging(), Some(stale.as_path()));
        assert!(!stale.join("front").exists());
        // A second run is refused by the lock and leaves the first's
        // staging folder alone.
        let second = OutputDir::open(
            out,
            OutputPlan::staged("render --params", vec![Owned::file("x")], Vec::new()),
            Earlier::Refuse,
        );
        assert!(
            matches!(second, Err(OutputDirError::Locked { .. })),
            "{second:?}"
        );
        assert!(opened.staging().is_dir());
        assert_eq!(
            staging_name("render --params"),
            ".physfit-render-params.staging"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_folder_is_refused_and_a_linked_file_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (out, elsewhere) = (dir.path().join("out"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("frame_0000.png"), "theirs").unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("front")).unwrap();
        let text = OutputDir::open(
            &out,
            plan(vec![Owned::frames("front", "png")]),
            Earlier::Replace,
        )
        .unwrap_err()
        .to_string();
        assert!(text.contains("symbolic link"), "{text}");
        std::fs::remove_file(out.join("front")).unwrap();

        std::os::unix::fs::symlink(elsewhere.join("frame_0000.png"), out.join("a.json")).unwrap();
        let mut staged =
            OutputDir::open(&out, plan(vec![Owned::file("a.json")]), Earlier::Replace).unwrap();
        std::fs::write(staged.staging().join("a.json"), "new").unwrap();
        staged.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("frame_0000.png")).unwrap(),
            "theirs"
        );
        assert!(!out.join("a.json").is_symlink());
        assert_eq!(std::fs::read_to_string(out.join("a.json")).unwrap(), "new");
    }

    #[test]
    fn a_replacement_keeps_the_earlier_files_until_the_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        std::fs::write(out.join("checkpoint.json"), "old").unwrap();
        std::fs::write(out.join("fit.json"), "old").unwrap();
        let plan = OutputPlan {
            in_place: vec![Owned::file("checkpoint.json")],
            ..plan(vec![Owned::file("fit.json")])
        };
        let mut opened = OutputDir::open(out, plan.clone(), Earlier::Replace).unwrap();
        assert_eq!(opened.earlier_files().len(), 2);
        drop(opened);
        assert!(
            out.join("fit.json").exists(),
            "nothing written, nothing removed"
        );
        opened = OutputDir::open(out, plan, Earlier::Replace).unwrap();
        opened
            .write_in_place(Path::new("checkpoint.json"), b"new")
            .unwrap();
        assert!(
            !out.join("fit.json").exists(),
            "replaced at the first write"
        );
        std::fs::write(opened.staging().join("fit.json"), "new").unwrap();
        opened.commit().unwrap();
        let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
        assert_eq!(
            (read("checkpoint.json"), read("fit.json")),
            ("new".into(), "new".into())
        );
    }
}
