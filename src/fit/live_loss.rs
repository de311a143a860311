//! The loss log as the fit runs, so that a run without a terminal (piped,
//! under nohup, on a cluster) can be followed (`tail -F`): every record
//! of `loss.jsonl` appended as its iteration ends, in the output
//! directory's staging folder (docs/design.md § Output directories), as
//! `loss.jsonl`. There it is what the outputs' own `loss.jsonl` will be
//! when they are written (which starts by clearing the staging folder and
//! ends by moving the finished file into place), and it never stays
//! behind as an output: a run that stops or fails removes its staging
//! folder, and the next run removes a stale one. The checkpoint holds the
//! same records.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::record::{jsonl_lines, IterationRecord};
use super::session_error::SessionError;

/// The followed log: its path and the records written to it so far.
pub struct LiveLoss {
    path: PathBuf,
    written: usize,
}

impl LiveLoss {
    /// The log in `staging` (the output directory's staging folder).
    pub fn path_in(staging: &Path) -> PathBuf {
        staging.join("loss.jsonl")
    }

    /// Starts the log in `staging` with the `records` so far (a resumed
    /// fit's, from its checkpoint).
    pub fn start(staging: &Path, records: &[IterationRecord]) -> Result<Self, SessionError> {
        let path = Self::path_in(staging);
        let text = jsonl_lines(records).map_err(SessionError::output)?;
        std::fs::write(&path, text).map_err(SessionError::io(&path))?;
        Ok(Self {
            path,
            written: records.len(),
        })
    }

    /// Appends the records after those written so far (an iteration may
    /// add two: an L-BFGS stage's start with its first step).
    pub fn append(&mut self, records: &[IterationRecord]) -> Result<(), SessionError> {
        let new = records.get(self.written..).unwrap_or_default();
        if new.is_empty() {
            return Ok(());
        }
        let text = jsonl_lines(new).map_err(SessionError::output)?;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(SessionError::io(&self.path))?;
        file.write_all(text.as_bytes())
            .map_err(SessionError::io(&self.path))?;
        self.written = records.len();
        Ok(())
    }
}
