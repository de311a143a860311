//! A request to stop long work at its next safe point, shared between the
//! work and whoever may ask (a SIGINT or SIGTERM handler). The fit, and
//! every other long command, polls it; nothing here installs a handler:
//! the asker says why ([`StopCause`]), so that the caller can exit as the
//! signal asks (130 or 143).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Why a stop was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopCause {
    /// A caller asked ([`StopSignal::raise`]).
    Requested,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`kill`, `timeout`, a batch scheduler).
    Terminate,
}

impl StopCause {
    /// The exit status a process stopped this way ends with: 128 + the
    /// signal's number, as a shell reports a process the signal killed.
    pub fn exit_status(self) -> i32 {
        match self {
            Self::Requested | Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }

    /// The signal's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Requested => "a stop request",
            Self::Interrupt => "Ctrl-C (SIGINT)",
            Self::Terminate => "SIGTERM",
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Requested => 1,
            Self::Interrupt => 2,
            Self::Terminate => 3,
        }
    }

    fn of_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Requested),
            2 => Some(Self::Interrupt),
            3 => Some(Self::Terminate),
            _ => None,
        }
    }
}

/// A request to stop a fit or any long command, shared with whoever may
/// ask: the fit polls it at every evaluation of the problem
/// ([`crate::fit::FitProblem::set_stop`]), not only between iterations, so
/// that a stop asked during a long first evaluation or a line search is
/// honoured at the next safe point rather than an iteration later; the
/// other commands poll it between frames and evaluations. The first cause
/// raised is the one kept.
#[derive(Clone, Debug, Default)]
pub struct StopSignal(Arc<AtomicU8>);

impl StopSignal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the work to stop at its next safe point.
    pub fn raise(&self) {
        self.raise_for(StopCause::Requested);
    }

    /// Asks the work to stop, for `cause` (kept unless one was raised
    /// before).
    pub fn raise_for(&self, cause: StopCause) {
        let _ = self
            .0
            .compare_exchange(0, cause.code(), Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Whether a stop was asked.
    pub fn raised(&self) -> bool {
        self.cause().is_some()
    }

    /// Why a stop was asked, if one was.
    pub fn cause(&self) -> Option<StopCause> {
        StopCause::of_code(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cause_is_kept_and_gives_the_exit_status() {
        let stop = StopSignal::new();
        assert_eq!(stop.cause(), None);
        stop.raise_for(StopCause::Terminate);
        stop.raise_for(StopCause::Interrupt);
        assert_eq!(stop.cause(), Some(StopCause::Terminate));
        assert_eq!(stop.cause().unwrap().exit_status(), 143);
        assert!(stop.clone().raised());
    }
}
