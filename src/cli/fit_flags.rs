//! The flags of `physfit fit` as advice: the flags that fix a session's
//! refusal, the command that resumes a stopped run, and the flags refused
//! because they would be ignored.

use anyhow::Result;
use clap::ValueEnum;

use physfit::fit::checkpoint::CheckpointError;
use physfit::fit::SessionError;
use physfit::io::shown::shown;

use super::fit::{FitArgs, StageArg};

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
