//! Progress where no terminal shows a bar: piped, redirected to a file,
//! under nohup or a batch system, indicatif draws nothing, so a long
//! phase would print nothing for minutes. There the commands print plain
//! lines instead, at most one every [`PLAIN_EVERY`] (the first of each
//! phase at once), so that a log shows the run moving without filling up.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// The least time between two plain progress lines.
pub(super) const PLAIN_EVERY: Duration = Duration::from_secs(2);

/// Plain progress lines, on only when stderr is not a terminal (and the
/// run is not `--quiet`).
pub(super) struct PlainProgress {
    on: bool,
    last: Option<Instant>,
}

impl PlainProgress {
    /// On when stderr is not a terminal, unless `quiet`.
    pub(super) fn new(quiet: bool) -> Self {
        Self {
            on: !quiet && !std::io::stderr().is_terminal(),
            last: None,
        }
    }

    /// A new phase: its first line is printed whatever the time.
    pub(super) fn restart(&mut self) {
        self.last = None;
    }

    /// Prints `text()` when due (module doc).
    pub(super) fn line(&mut self, text: impl FnOnce() -> String) {
        if !self.on || self.last.is_some_and(|t| t.elapsed() < PLAIN_EVERY) {
            return;
        }
        eprintln!("{}", text());
        self.last = Some(Instant::now());
    }
}
