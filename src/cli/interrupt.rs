//! SIGINT and SIGTERM, handled alike by every command that works for long
//! (docs/design.md § Output directories): the first asks the work to stop
//! at its next safe point ([`StopSignal`], polled between frames and
//! evaluations); the command then removes its staging folder (and an
//! output directory it created and left empty), says in one line what was
//! kept, and exits 130 (SIGINT) or 143 (SIGTERM). A second signal exits
//! at once with the same status; what is written atomically (a fit's
//! checkpoint) stays whole, and the next run removes the staging folder
//! left behind, saying so.
//!
//! [`INTERRUPT_HOOK`] makes the signal arrive at a named point of a run, a
//! deterministic way to test every command's interruption, which timing
//! real signals is not. On Unix the hook sends the process a real signal,
//! so that the handler itself is what the tests exercise.

use anyhow::{Context, Result};

use physfit::stop::{StopCause, StopSignal};

/// The environment variable that makes a signal arrive at a point of a
/// run: `PHASE[@N][,twice][,term]`. `PHASE` is one of the command's phase
/// names, at its start, or once it has taken N steps with `@N`; `twice`
/// sends two signals, `term` SIGTERM instead of SIGINT.
pub const INTERRUPT_HOOK: &str = "PHYSFIT_TEST_INTERRUPT_AT";

/// A run stopped by a signal: its one line of what was kept, and the exit
/// status. `main` prints the line and exits with the status.
#[derive(Debug)]
pub struct Interrupted {
    /// What was kept, in one line.
    pub message: String,
    /// 130 or 143.
    pub status: i32,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Interrupted {}

/// The first signal asks for a stop; a second exits at once.
fn on_signal(stop: &StopSignal, cause: StopCause) {
    if stop.raised() {
        eprintln!(
            "interrupted again ({}): exiting at once; whatever was written atomically is kept \
             whole (a fit's last complete checkpoint), the output being staged is not",
            cause.name()
        );
        std::process::exit(stop.cause().unwrap_or(cause).exit_status());
    }
    stop.raise_for(cause);
    eprintln!(
        "interrupted: stopping at the next safe point ({}; a second Ctrl-C or SIGTERM exits at \
         once)",
        cause.name()
    );
}

/// Where the hook makes the signal arrive.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hook {
    phase: String,
    at: Option<usize>,
    times: u32,
    cause: StopCause,
}

impl Hook {
    /// Reads `PHASE[@N][,twice][,term]`, refusing phases not in `phases`
    /// and counts on phases not in `counted`.
    fn parse(value: &str, phases: &[&str], counted: &[&str]) -> Result<Self> {
        let mut parts = value.split(',');
        let first = parts.next().unwrap_or_default();
        let (mut times, mut cause) = (1, StopCause::Interrupt);
        for option in parts {
            match option {
                "twice" => times = 2,
                "term" => cause = StopCause::Terminate,
                other => anyhow::bail!(
                    "{INTERRUPT_HOOK}={value}: `{other}` is not an option; fix: give `twice` or \
                     `term` after a comma, or nothing"
                ),
            }
        }
        let (name, at) = match first.split_once('@') {
            Some((name, n)) => {
                let n: usize = n.parse().with_context(|| {
                    format!(
                        "{INTERRUPT_HOOK}={value}: `@{n}` is not a count of steps; fix: give a \
                         whole number, as in {name}@2"
                    )
                })?;
                (name, Some(n))
            }
            None => (first, None),
        };
        if !phases.contains(&name) {
            anyhow::bail!(
                "{INTERRUPT_HOOK}={value}: not a phase of this command; fix: give one of {} \
                 (with ',twice' for two signals, ',term' for SIGTERM), or unset it",
                phases.join(", ")
            );
        }
        if at.is_some() && !counted.contains(&name) {
            anyhow::bail!(
                "{INTERRUPT_HOOK}={value}: {name} counts no steps; fix: drop `@…`, or give one \
                 of {} with it",
                counted.join(", ")
            );
        }
        Ok(Self {
            phase: name.to_string(),
            at,
            times,
            cause,
        })
    }
}

/// The signal handlers of a run and its hook.
#[derive(Clone, Debug)]
pub struct Interrupt {
    stop: StopSignal,
    hook: Option<Hook>,
}

impl Interrupt {
    /// Installs the handlers of SIGINT and SIGTERM (once per process) and
    /// reads the hook, whose phases must be among `phases` (`counted`: those
    /// that count steps).
    pub fn install(phases: &[&str], counted: &[&str]) -> Result<Self> {
        let hook = match std::env::var(INTERRUPT_HOOK) {
            Ok(value) => Some(Hook::parse(&value, phases, counted)?),
            Err(_) => None,
        };
        let stop = StopSignal::new();
        install_handlers(stop.clone())?;
        Ok(Self { stop, hook })
    }

    /// The stop the work polls.
    pub fn stop(&self) -> &StopSignal {
        &self.stop
    }

    /// Whether a signal arrived.
    pub fn raised(&self) -> bool {
        self.stop.raised()
    }

    /// `phase` starts: the hook's signal arrives if it names it.
    pub fn enter(&self, phase: &str) {
        self.arrive(phase, None);
    }

    /// `phase` has taken `steps` steps: the hook's signal arrives if it
    /// names them (`PHASE@N`).
    pub fn reach(&self, phase: &str, steps: usize) {
        self.arrive(phase, Some(steps));
    }

    fn arrive(&self, phase: &str, at: Option<usize>) {
        if let Some(hook) = &self.hook {
            if hook.phase == phase && hook.at == at {
                for n in 0..hook.times {
                    self.send(hook.cause);
                    if n == 1 {
                        // The second signal's handler exits the process:
                        // no more work meanwhile.
                        std::thread::sleep(std::time::Duration::from_secs(10));
                    }
                }
            }
        }
    }

    /// Sends the process `cause`'s signal and waits for the handler to
    /// have seen it (on Unix; elsewhere calls the handler).
    fn send(&self, cause: StopCause) {
        #[cfg(unix)]
        {
            let signal = match cause {
                StopCause::Terminate => libc::SIGTERM,
                _ => libc::SIGINT,
            };
            // SAFETY: kill(2) on our own process id has no memory effects.
            unsafe {
                libc::kill(libc::getpid(), signal);
            }
            let started = std::time::Instant::now();
            while !self.stop.raised() && started.elapsed() < std::time::Duration::from_secs(5) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        #[cfg(not(unix))]
        on_signal(&self.stop, cause);
    }

    /// An error ending the run when a signal arrived ([`Interrupted`],
    /// with `kept` the line of what was kept); `Ok` otherwise.
    pub fn check(&self, kept: impl FnOnce() -> String) -> Result<()> {
        match self.stop.cause() {
            Some(cause) => Err(anyhow::Error::new(Interrupted {
                message: format!("interrupted: {}", kept()),
                status: cause.exit_status(),
            })),
            None => Ok(()),
        }
    }
}

/// One thread that receives SIGINT and SIGTERM and tells which.
#[cfg(unix)]
fn install_handlers(stop: StopSignal) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("installing the SIGINT and SIGTERM handlers")?;
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let cause = if signal == SIGTERM {
                StopCause::Terminate
            } else {
                StopCause::Interrupt
            };
            on_signal(&stop, cause);
        }
    });
    Ok(())
}

/// Ctrl-C (and the console's close) where there are no Unix signals.
#[cfg(not(unix))]
fn install_handlers(stop: StopSignal) -> Result<()> {
    ctrlc::set_handler(move || on_signal(&stop, StopCause::Interrupt))
        .context("installing the Ctrl-C handler")
}

/// What an interrupted command that stages its output kept, in one line.
pub fn nothing_kept(out: &physfit::io::OutputDir) -> String {
    let shown = physfit::io::shown(out.target());
    if out.created() {
        format!("nothing was written; {shown}, which this run created, is removed")
    } else {
        format!("nothing was written; {shown} is as it was")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_reads_phases_counts_and_options() {
        let hook = Hook::parse("render@2,term", &["render"], &["render"]).unwrap();
        assert_eq!(
            hook,
            Hook {
                phase: "render".into(),
                at: Some(2),
                times: 1,
                cause: StopCause::Terminate
            }
        );
        assert_eq!(Hook::parse("x,twice", &["x"], &[]).unwrap().times, 2);
        assert!(Hook::parse("x@1", &["x"], &[]).is_err());
        assert!(Hook::parse("y", &["x"], &[]).is_err());
        assert!(Hook::parse("x,thrice", &["x"], &[]).is_err());
    }
}
