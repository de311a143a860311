//! A request to stop long work at its next safe point, shared between the
//! work and whoever may ask (a Ctrl-C or SIGTERM handler). The fit, and any
//! other long command, polls it; nothing here knows about signals.

/// A request to stop a fit, shared with whoever may ask (a Ctrl-C
/// handler): the fit polls it at every evaluation of the problem
/// ([`crate::fit::FitProblem::set_stop`]), not only between iterations, so
/// that a stop asked during a long first evaluation or a line search is
/// honoured at the next safe point rather than an iteration later.
#[derive(Clone, Debug, Default)]
pub struct StopSignal(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl StopSignal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the fit to stop at its next safe point.
    pub fn raise(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a stop was asked.
    pub fn raised(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
