//! The flags of `physfit fit`: their definitions, the flags refused
//! because they would be ignored, the flags that fix a session's refusal,
//! and the command that resumes a stopped run.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use physfit::fit::CheckpointError;
use physfit::fit::{SessionError, StageChoice};
use physfit::io::shown;

/// `--stage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StageArg {
    /// Stage 1 only: the initial velocity, E frozen at `material.youngs_modulus`.
    Velocity,
    /// Stage 2 only: log10 E, with the velocity of an earlier fit (`--velocity-from`).
    Stiffness,
    /// Both, `fit.rounds` times.
    Both,
}

impl From<StageArg> for StageChoice {
    fn from(s: StageArg) -> Self {
        match s {
            StageArg::Velocity => StageChoice::Velocity,
            StageArg::Stiffness => StageChoice::Stiffness,
            StageArg::Both => StageChoice::Both,
        }
    }
}

/// Options of `physfit fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// The scene description (with reference frames in at least one view).
    pub scene: PathBuf,
    /// Output directory (default: the scene's `output.directory`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Which stages to run.
    #[arg(long, value_enum, default_value_t = StageArg::Both)]
    pub stage: StageArg,
    /// With `--stage stiffness` (refused otherwise): the drivers.safetensors
    /// of an earlier fit whose velocity to hold (default: the output
    /// directory's).
    #[arg(long)]
    pub velocity_from: Option<PathBuf>,
    /// Continue the fit checkpointed in the output directory (iterations may be raised).
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace an earlier fit in the output directory.
    #[arg(long)]
    pub force: bool,
    /// A twin experiment's truth file (docs/truth.md): report how well the fit recovers it
    /// (default: the `truth.toml` that `physfit synth` left beside the frames, if any).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

/// The session's refusal with the flags that fix it.
pub(super) fn with_flag_advice(error: SessionError, args: &FitArgs) -> anyhow::Error {
    let advice = match &error {
        SessionError::EarlierFit { .. } => Some(
            "fix: --resume to continue it, --force to replace those files (nothing else in it is \
             touched), or --out another directory",
        ),
        SessionError::NoCheckpoint { .. } => Some("fix: run without --resume"),
        SessionError::Checkpoint(CheckpointError::Format { .. }) => {
            Some("fix: run without --resume, with --force to start over")
        }
        SessionError::Checkpoint(CheckpointError::Mismatch { .. }) => {
            Some("fix: restore them, or start over with --force")
        }
        SessionError::HeldVelocity { .. } if args.velocity_from.is_none() => Some(
            "(--stage stiffness holds the velocity of the output directory's earlier fit; \
             give another with --velocity-from, or run --stage velocity first)",
        ),
        _ => None,
    };
    match advice {
        Some(a) => anyhow::anyhow!("{error}; {a}"),
        None => anyhow::Error::new(error),
    }
}

/// How a `--resume` of this run reads.
pub(super) fn resume_command(args: &FitArgs) -> String {
    let mut command = format!("physfit fit {} --resume", shown(&args.scene));
    if let Some(o) = &args.out {
        command.push_str(&format!(" --out {}", shown(o)));
    }
    if args.stage != StageArg::Both {
        command.push_str(&format!(
            " --stage {}",
            args.stage
                .to_possible_value()
                .expect("no skipped value")
                .get_name()
        ));
    }
    if let Some(v) = &args.velocity_from {
        command.push_str(&format!(" --velocity-from {}", shown(v)));
    }
    if let Some(t) = &args.truth {
        command.push_str(&format!(" --truth {}", shown(t)));
    }
    command
}

/// The flags that would be ignored: refused, naming when they apply.
pub(super) fn check_flags(args: &FitArgs) -> Result<()> {
    if args.velocity_from.is_some() && args.stage != StageArg::Stiffness {
        anyhow::bail!(
            "--velocity-from applies only with --stage stiffness (the velocity a stiffness-only \
             fit holds; the velocity stage fits its own); fix: add --stage stiffness, or drop \
             --velocity-from"
        );
    }
    Ok(())
}
