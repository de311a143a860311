//! What `physfit fit` refuses before it spends any simulation time. Each
//! refusal names the scene file, the field and the fix. (Views with
//! different frame counts are refused by [`Scene::load`] already; an
//! output directory holding an earlier fit is the command's to refuse.)
//! Memory is estimated from the scene and checked against the machine
//! before anything is allocated ([`crate::budget`], run by
//! [`super::FitSession::open`] once the adapter is known).

use std::path::PathBuf;

use glam::Vec3;

use super::plan::{StageChoice, StageKind};
use crate::mpm::simulator::check_stability_at;
use crate::scene::Scene;

/// Why a fit of a scene cannot work.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// No view has reference frames.
    #[error("{path}: no view has reference frames, so there is nothing to fit; fix: give at least one `[[views]]` a `frames` directory or glob (or make twin-experiment frames with `physfit synth`)")]
    NoFrames {
        /// The scene file.
        path: PathBuf,
    },
    /// Only the rest frame.
    #[error("{path}: `views[{view}].frames` has {frames} frame(s); a fit needs the rest frame 0 and at least one frame of motion")]
    TooFewFrames {
        /// The scene file.
        path: PathBuf,
        /// A view with frames.
        view: usize,
        /// Its frame count.
        frames: usize,
    },
    /// A stage asks for more frames than exist.
    #[error("{path}: `{field}` = {asked} but the reference has {available} frames per view, 0..{} (a frame count counts the rest frame 0); fix: set it to at most {available}", available - 1)]
    StageFrames {
        /// The scene file.
        path: PathBuf,
        /// `fit.velocity.frames` or `fit.stiffness.frames`.
        field: &'static str,
        /// Its value: a frame count, the rest frame 0 included.
        asked: u32,
        /// Reference frames per view, the rest frame 0 included.
        available: usize,
    },
    /// The substeps are below the explicit bound at the top of the E range.
    #[error("{path}: `simulation.substeps` fails the stability bound: {error}; fix: remove `simulation.substeps` (the fewest stable are chosen) or lower `material.log10_youngs_range`'s top")]
    Unstable {
        /// The scene file.
        path: PathBuf,
        /// The simulator's check.
        error: crate::mpm::MpmError,
    },
    /// No simulated splat projects into any view with frames.
    #[error("{path}: the simulated object projects outside every image (no simulated splat centre lands inside views {views:?}); fix: check `[views.camera]` (pose, look_at, a nerfstudio dataparser transform that was not undone) and `regions.simulated` with `physfit render`")]
    OutsideImages {
        /// The scene file.
        path: PathBuf,
        /// The views with frames.
        views: Vec<String>,
    },
}

/// The views a fit uses and its frame count, once nothing is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitInputs {
    /// Views with reference frames (indices into [`Scene::views`]).
    pub views: Vec<usize>,
    /// Frames per view, the rest frame 0 included.
    pub frames: usize,
}

/// Simulated splat centres of `scene` inside view `view`'s image.
pub fn splats_in_view(scene: &Scene, view: usize) -> usize {
    let camera = &scene.views[view].camera;
    let means = &scene.gaussians().means;
    scene
        .simulated
        .iter()
        .zip(means)
        .filter(|(s, _)| **s)
        .filter(|(_, p)| {
            let c = camera.rotation * Vec3::from(**p) + camera.translation;
            if c.z <= camera.near {
                return false;
            }
            let u = camera.fx * c.x / c.z + camera.cx;
            let v = camera.fy * c.y / c.z + camera.cy;
            (0.0..camera.width as f32).contains(&u) && (0.0..camera.height as f32).contains(&v)
        })
        .count()
}

/// The checks of the module doc for fitting `scene` with `--stage choice`.
pub fn preflight(scene: &Scene, choice: StageChoice) -> Result<FitInputs, PreflightError> {
    let path = scene.path.clone();
    let views: Vec<usize> = (0..scene.views.len())
        .filter(|&v| scene.views[v].frames.is_some())
        .collect();
    let Some(frames) = scene.frame_count() else {
        return Err(PreflightError::NoFrames { path });
    };
    if frames < 2 {
        return Err(PreflightError::TooFewFrames {
            path,
            view: views[0],
            frames,
        });
    }
    let kinds: &[StageKind] = match choice {
        StageChoice::Velocity => &[StageKind::Velocity],
        StageChoice::Stiffness => &[StageKind::Stiffness],
        StageChoice::Both => &[StageKind::Velocity, StageKind::Stiffness],
    };
    for kind in kinds {
        let (field, stage) = match kind {
            StageKind::Velocity => ("fit.velocity.frames", &scene.fit.velocity),
            StageKind::Scan | StageKind::Stiffness => {
                ("fit.stiffness.frames", &scene.fit.stiffness)
            }
        };
        if let Some(asked) = stage.frames {
            if asked as usize > frames {
                return Err(PreflightError::StageFrames {
                    path,
                    field,
                    asked,
                    available: frames,
                });
            }
        }
    }
    let stability = scene.stability();
    if let Err(error) = check_stability_at(
        &scene.mpm_config(),
        stability.youngs_max,
        stability.poisson_max,
    ) {
        return Err(PreflightError::Unstable { path, error });
    }
    if views.iter().all(|&v| splats_in_view(scene, v) == 0) {
        return Err(PreflightError::OutsideImages {
            path,
            views: views.iter().map(|&v| scene.views[v].name.clone()).collect(),
        });
    }
    Ok(FitInputs { views, frames })
}
