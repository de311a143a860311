//! The phases of `physfit fit`, in the order the fit's session runs its
//! steps ([`physfit::fit::FitSession`]), as SIGINT/SIGTERM handling
//! ([`super::interrupt`]) and the interruption message name them.

use anyhow::Result;

use super::interrupt::Interrupt;

/// The phases of `physfit fit`, as the interruption hook
/// ([`super::interrupt::INTERRUPT_HOOK`]) names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Prepare,
    CameraCheck,
    TruthCheck,
    Scan,
    Velocity,
    Stiffness,
    Discretisation,
    Outputs,
}

impl Phase {
    const ALL: [Phase; 8] = [
        Phase::Prepare,
        Phase::CameraCheck,
        Phase::TruthCheck,
        Phase::Scan,
        Phase::Velocity,
        Phase::Stiffness,
        Phase::Discretisation,
        Phase::Outputs,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::CameraCheck => "camera-check",
            Phase::TruthCheck => "truth-check",
            Phase::Scan => "scan",
            Phase::Velocity => "velocity",
            Phase::Stiffness => "stiffness",
            Phase::Discretisation => "discretisation-check",
            Phase::Outputs => "outputs",
        }
    }

    /// What the interruption message says the fit was doing.
    pub(super) fn doing(self) -> &'static str {
        match self {
            Phase::Prepare => "while preparing the fit",
            Phase::CameraCheck => "during the camera check",
            Phase::TruthCheck => "during the truth check",
            Phase::Scan => "during the scan",
            Phase::Velocity => "during the velocity stage",
            Phase::Stiffness => "during the stiffness stage",
            Phase::Discretisation => "during the discretisation check",
            Phase::Outputs => "while writing the outputs",
        }
    }

    pub(super) fn of_stage(kind: physfit::fit::StageKind) -> Self {
        match kind {
            physfit::fit::StageKind::Scan => Phase::Scan,
            physfit::fit::StageKind::Velocity => Phase::Velocity,
            physfit::fit::StageKind::Stiffness => Phase::Stiffness,
        }
    }
}

/// SIGINT/SIGTERM and the hook, with the fit's phase names.
pub(super) fn install_interrupt() -> Result<Interrupt> {
    let names: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
    Interrupt::install(&names, &[Phase::TruthCheck.name()])
}
