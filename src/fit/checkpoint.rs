//! Fit checkpoints: the [`FitState`] of a running
//! fit with a fingerprint of everything it depends on, written atomically as
//! JSON (`OUT/checkpoint.json`; serde_json writes every `f64` so that it
//! reads back bit for bit, so a resumed fit continues from exactly the
//! parameters and Adam moments it stopped at).
//!
//! The fingerprint names each input by its scene.toml field (or `stages`,
//! `reference frames`), so that resuming with another scene or other
//! settings is refused with the list of what differs. Iteration counts are
//! left out on purpose: a resumed fit may raise `iterations`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::discretisation::YoungsStatistic;
use super::plan::{StageChoice, StageKind, StagePlan};
use super::state::FitState;
use crate::io::atomic_write::write_atomic;
use crate::output::{ply_sha256, PlyHashError, SimulationRecord};
use crate::scene::{FieldSetting, FitStage, FrameSet, Scene};

/// The `format` field of a checkpoint.
pub const CHECKPOINT_FORMAT: &str = "physfit.checkpoint";
/// The version this physfit writes and reads (3: the fingerprint's
/// `fit.velocity.frames` and `fit.stiffness.frames` are frame counts with
/// the rest frame 0 included, as the scene keys are; 4: each level of the
/// discretisation check records its grid and drivers beside its substeps).
pub const CHECKPOINT_VERSION: u32 = 4;

/// Why a checkpoint could not be written, read or used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing the file failed.
    #[error("{path}: {error}")]
    Io {
        /// The checkpoint.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The file is not a checkpoint this physfit reads.
    #[error("{path}: not a physfit checkpoint of this version ({problem})")]
    Format {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The checkpoint belongs to another scene or other settings.
    #[error("{path} was written for other inputs:\n  {}", differences.join("\n  "))]
    Mismatch {
        /// The checkpoint.
        path: PathBuf,
        /// `field: checkpoint → now`, one per difference.
        differences: Vec<String>,
    },
    /// A field of the checkpoint does not fit the plan it claims to
    /// continue (a stage past the plan, an array of another length, a
    /// value outside its range).
    #[error(
        "{}: `{field}` {problem}, which the fit it continues cannot have written; fix: start \
         over with --force (or restore the checkpoint that fit wrote)",
        crate::io::shown::shown(path)
    )]
    Invalid {
        /// The checkpoint.
        path: PathBuf,
        /// The field, as the JSON names it.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Hashing the `.ply` failed.
    #[error(transparent)]
    Hash(#[from] PlyHashError),
}

/// Everything a fit depends on apart from iteration counts, by name
/// (module doc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FitFingerprint(pub BTreeMap<String, String>);

fn stage_fields(out: &mut BTreeMap<String, String>, table: &str, s: &FitStage) {
    let mut put = |field: &str, value: String| {
        out.insert(format!("{table}.{field}"), value);
    };
    put("learning_rate", s.learning_rate.to_string());
    // The scene key's value: a frame count, the rest frame 0 included.
    put("frames", format!("{:?}", s.frames));
    put("warmup", s.warmup.to_string());
    put("decay", s.decay.to_string());
    put("grad_clip", s.grad_clip.to_string());
    put("tolerance", s.tolerance.to_string());
    put("w_l1", s.w_l1.to_string());
    put("w_ssim", s.w_ssim.to_string());
    put("tv_weight", s.tv_weight.to_string());
    put("velocity_tv_weight", s.velocity_tv_weight.to_string());
    put(
        "field",
        match &s.field {
            FieldSetting::Drivers => "drivers".to_string(),
            FieldSetting::Global => "global".to_string(),
            FieldSetting::Rigid => "rigid".to_string(),
            FieldSetting::Regions(regions) => format!("regions {regions:?}"),
        },
    );
    // Only when ν is fitted, so that a fit of ν held fixed keeps the
    // fingerprint its checkpoints had before ν could be fitted.
    if s.poisson.fitted() {
        put("poisson", format!("{:?}", s.poisson).to_lowercase());
        // Only a range other than the default, for the same reason: `z`
        // means another ν over another range.
        if s.poisson_range != crate::scene::PoissonRange::default() {
            let r = s.poisson_range;
            put("poisson_range", format!("{} {}", r.low, r.high));
        }
    }
}

/// Feeds every file of `set` to `hash`, each as its length then its bytes.
fn hash_files(hash: &mut Sha256, set: &FrameSet) -> Result<(), CheckpointError> {
    for path in &set.paths {
        let bytes = std::fs::read(path).map_err(|error| CheckpointError::Io {
            path: path.clone(),
            error,
        })?;
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(())
}

/// SHA-256 over every reference frame's bytes, view by view, in order.
fn frames_sha256(scene: &Scene) -> Result<String, CheckpointError> {
    let mut hash = Sha256::new();
    for view in &scene.views {
        hash.update(view.name.as_bytes());
        if let Some(frames) = &view.frames {
            hash_files(&mut hash, frames)?;
        }
    }
    Ok(format!("{:x}", hash.finalize()))
}

/// SHA-256 over every loss mask's bytes (`views[i].masks`), view by view;
/// `None` when no view has masks, so that the fingerprint of an unmasked
/// fit is what it was before masks existed. Other masks are another loss.
fn masks_sha256(scene: &Scene) -> Result<Option<String>, CheckpointError> {
    if scene.views.iter().all(|v| v.masks.is_none()) {
        return Ok(None);
    }
    let mut hash = Sha256::new();
    for view in &scene.views {
        hash.update(view.name.as_bytes());
        if let Some(masks) = &view.masks {
            hash_files(&mut hash, masks)?;
        }
    }
    Ok(Some(format!("{:x}", hash.finalize())))
}

impl FitFingerprint {
    /// The fingerprint of fitting `scene`'s stages `choice`; `velocity`
    /// names where a stiffness-only fit takes its velocity from.
    pub fn of(
        scene: &Scene,
        choice: StageChoice,
        velocity: Option<&str>,
    ) -> Result<Self, CheckpointError> {
        let mut m: BTreeMap<String, String> = SimulationRecord::from_scene(scene)
            .fields()
            .into_iter()
            .collect();
        m.insert(
            "gaussians.path (SHA-256)".into(),
            ply_sha256(&scene.gaussians_path)?,
        );
        m.insert("reference frames (SHA-256)".into(), frames_sha256(scene)?);
        if let Some(masks) = masks_sha256(scene)? {
            m.insert("loss masks (SHA-256)".into(), masks);
        }
        // A view's colour correction changes what its loss compares; only
        // views that have one are named, so that the fingerprint of a scene
        // without corrections is what it was before they existed.
        for (i, view) in scene.views.iter().enumerate() {
            let c = view.color_correction;
            if !c.is_identity() {
                m.insert(
                    format!("views[{i}].color_correction"),
                    format!("gain {:?}, offset {:?}", c.gain, c.offset),
                );
            }
        }
        m.insert(
            "material.youngs_modulus".into(),
            scene.material.youngs_modulus.to_string(),
        );
        m.insert("regions (simulated, anchored)".into(), {
            let count = |v: &[bool]| v.iter().filter(|b| **b).count();
            format!(
                "{} simulated, {} anchored splats",
                count(&scene.simulated),
                count(&scene.anchored)
            )
        });
        m.insert("fit.rounds".into(), scene.fit.rounds.to_string());
        m.insert("fit.scan.points".into(), scene.fit.scan.points.to_string());
        m.insert(
            "fit.scan.velocity_evaluations".into(),
            scene.fit.scan.velocity_evaluations.to_string(),
        );
        // Only where ν is fitted, so that a checkpoint of a fit of E alone
        // made before ν could be scanned still resumes.
        if scene.fit.stiffness.poisson.fitted() {
            m.insert(
                "fit.scan.poisson_points".into(),
                scene.fit.scan.poisson_points.to_string(),
            );
        }
        stage_fields(&mut m, "fit.velocity", &scene.fit.velocity);
        stage_fields(&mut m, "fit.stiffness", &scene.fit.stiffness);
        m.insert("stages".into(), format!("{choice:?}").to_lowercase());
        m.insert(
            "velocity held from".into(),
            velocity.unwrap_or("none").to_string(),
        );
        Ok(Self(m))
    }

    /// `field: checkpoint → now` for every field that differs (`self` is
    /// the checkpoint's).
    pub fn differences(&self, now: &Self) -> Vec<String> {
        let mut out = Vec::new();
        let none = String::from("(absent)");
        for key in self
            .0
            .keys()
            .chain(now.0.keys().filter(|k| !self.0.contains_key(*k)))
        {
            let (a, b) = (
                self.0.get(key).unwrap_or(&none),
                now.0.get(key).unwrap_or(&none),
            );
            if a != b {
                out.push(format!("`{key}`: {a} in the checkpoint, {b} now"));
            }
        }
        out
    }
}

/// A checkpoint: the state of a fit and what it was fitting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// [`CHECKPOINT_VERSION`].
    pub version: u32,
    /// The inputs it belongs to.
    pub fingerprint: FitFingerprint,
    /// Seconds each finished stage took, in plan order (for `fit.json`).
    pub stage_seconds: Vec<f64>,
    /// The fit's state.
    pub state: FitState,
}

impl Checkpoint {
    /// A checkpoint of `state`.
    pub fn new(fingerprint: FitFingerprint, state: FitState, stage_seconds: Vec<f64>) -> Self {
        Self {
            format: CHECKPOINT_FORMAT.into(),
            version: CHECKPOINT_VERSION,
            fingerprint,
            stage_seconds,
            state,
        }
    }

    /// Writes it to `path` atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        let json = self.to_json(path)?;
        write_atomic(path, &json).map_err(|error| CheckpointError::Io {
            path: path.to_path_buf(),
            error,
        })
    }

    /// Its JSON, for a writer that places the file itself (`path` names it
    /// in an error).
    pub fn to_json(&self, path: &Path) -> Result<Vec<u8>, CheckpointError> {
        serde_json::to_vec(self).map_err(|e| CheckpointError::Format {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })
    }

    /// Refuses a checkpoint (read from `path`) whose state the fit of
    /// `plan` cannot have written: a stage past the plan, a per-stage list
    /// of another length than the stages finished, an array of another
    /// length than its parameterisation (`youngs` log10 E parameters,
    /// `velocity` velocity parameters), or a log10 E that is not finite
    /// or lies outside `youngs_bounds` (the range, widened to hold the
    /// start). A crafted or damaged checkpoint would otherwise skip stages
    /// or fail later with a message that names no file.
    pub fn check_against(
        &self,
        path: &Path,
        plan: &[StagePlan],
        youngs: usize,
        velocity: usize,
        poisson: usize,
        youngs_bounds: (f64, f64),
    ) -> Result<(), CheckpointError> {
        check_state(
            path,
            "state",
            &self.state,
            plan,
            (youngs, velocity, poisson),
            youngs_bounds,
        )
    }
    /// Reads the checkpoint at `path` and refuses it unless it was written
    /// for `now` (the fingerprint of the fit being resumed).
    pub fn load(path: &Path, now: &FitFingerprint) -> Result<Self, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|error| CheckpointError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let format = |problem: String| CheckpointError::Format {
            path: path.to_path_buf(),
            problem,
        };
        // The format and version first, so that a checkpoint of another
        // version is named as such rather than by the first field it lacks.
        #[derive(Deserialize)]
        struct Stamp {
            format: serde_json::Value,
            version: serde_json::Value,
        }
        let stamp: Stamp = serde_json::from_slice(&bytes).map_err(|e| format(e.to_string()))?;
        if stamp.format != CHECKPOINT_FORMAT || stamp.version != CHECKPOINT_VERSION {
            return Err(format(format!(
                "format {} version {}, expected \"{CHECKPOINT_FORMAT}\" version {CHECKPOINT_VERSION}",
                stamp.format, stamp.version
            )));
        }
        let c: Checkpoint = serde_json::from_slice(&bytes).map_err(|e| format(e.to_string()))?;
        let differences = c.fingerprint.differences(now);
        if !differences.is_empty() {
            return Err(CheckpointError::Mismatch {
                path: path.to_path_buf(),
                differences,
            });
        }
        Ok(c)
    }
}

/// [`Checkpoint::check_against`] for the state `s`, named `prefix` in
/// the checkpoint's JSON (a finished stage's kept state is checked too).
fn check_state(
    path: &Path,
    prefix: &str,
    s: &FitState,
    plan: &[StagePlan],
    (youngs, velocity, poisson): (usize, usize, usize),
    youngs_bounds: (f64, f64),
) -> Result<(), CheckpointError> {
    let invalid = |field: &str, problem: String| CheckpointError::Invalid {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem,
    };
    let length = |field: &str, got: usize, want: usize, of: &str| {
        if got == want {
            Ok(())
        } else {
            Err(invalid(
                field,
                format!("holds {got} values where {of} has {want}"),
            ))
        }
    };
    if s.stage > plan.len() {
        return Err(invalid(
            &format!("{prefix}.stage"),
            format!("is {}, past the plan's {} stages", s.stage, plan.len()),
        ));
    }
    length(
        &format!("{prefix}.converged"),
        s.converged.len(),
        s.stage,
        "the stages finished",
    )?;
    length(
        &format!("{prefix}.stage_losses"),
        s.stage_losses.len(),
        s.stage,
        "the stages finished",
    )?;
    // Empty in a checkpoint of a physfit that did not keep them.
    if !s.tallies.is_empty() {
        length(
            &format!("{prefix}.tallies"),
            s.tallies.len(),
            s.stage,
            "the stages finished",
        )?;
    }
    for (i, capped) in s.capped.iter().enumerate() {
        if capped.stage >= s.stage || capped.state.stage != capped.stage {
            return Err(invalid(
                &format!("{prefix}.capped[{i}].stage"),
                format!(
                    "is {} (its state's {}), not one of the {} stages finished",
                    capped.stage, capped.state.stage, s.stage
                ),
            ));
        }
        // The state a raised cap continues must fit the plan too.
        check_state(
            path,
            &format!("{prefix}.capped[{i}].state"),
            &capped.state,
            plan,
            (youngs, velocity, poisson),
            youngs_bounds,
        )?;
    }
    length(
        &format!("{prefix}.log10_youngs"),
        s.log10_youngs.len(),
        youngs,
        "the E parameterisation",
    )?;
    length(
        &format!("{prefix}.velocity"),
        s.velocity.len(),
        velocity,
        "the velocity parameterisation",
    )?;
    length(
        &format!("{prefix}.poisson"),
        s.poisson.len(),
        poisson,
        "the parameterisation of Poisson's ratio",
    )?;
    if let Some(bad) = s.poisson.iter().position(|z| !z.is_finite()) {
        return Err(invalid(
            &format!("{prefix}.poisson[{bad}]"),
            "is not finite".to_string(),
        ));
    }
    if let Some(u) = &s.uncertainty {
        for (field, got) in [
            ("youngs_log10_std", u.youngs_log10_std.len()),
            ("youngs_constrained", u.youngs_constrained.len()),
        ] {
            if got > 0 {
                length(
                    &format!("{prefix}.uncertainty.{field}"),
                    got,
                    youngs,
                    "the E parameterisation",
                )?;
            }
        }
        if !u.velocity_std.is_empty() {
            length(
                &format!("{prefix}.uncertainty.velocity_std"),
                u.velocity_std.len(),
                velocity,
                "the velocity parameterisation",
            )?;
        }
        if !u.poisson_std.is_empty() {
            length(
                &format!("{prefix}.uncertainty.poisson_std"),
                u.poisson_std.len(),
                s.poisson.len(),
                "the parameterisation of Poisson's ratio",
            )?;
        }
    }
    if let Some(d) = &s.discretisation {
        let levels = d.levels.iter().enumerate().flat_map(|(i, l)| {
            [
                (format!("levels[{i}].log10_youngs"), l.log10_youngs.len()),
                (format!("levels[{i}].shift"), l.shift.len()),
            ]
        });
        for (field, got) in [
            (
                "fitted_log10_youngs".to_string(),
                d.fitted_log10_youngs.len(),
            ),
            (
                "answer_log10_youngs".to_string(),
                d.answer_log10_youngs.len(),
            ),
        ]
        .into_iter()
        .chain(levels)
        {
            // A per-driver field's check keeps its median alone.
            let (expected, what) = match d.youngs_statistic {
                YoungsStatistic::Parameters => (youngs, "the E parameterisation"),
                YoungsStatistic::FreeDriverMedian => (1, "the free drivers' median of a per-driver E"),
            };
            length(&format!("{prefix}.discretisation.{field}"), got, expected, what)?;
        }
        // ν's values: empty in a checkpoint of a physfit that kept none.
        let levels = d.levels.iter().enumerate().flat_map(|(i, l)| {
            [
                (format!("levels[{i}].poisson"), l.poisson.len()),
                (format!("levels[{i}].poisson_shift"), l.poisson_shift.len()),
            ]
        });
        for (field, got) in [
            ("fitted_poisson".to_string(), d.fitted_poisson.len()),
            ("answer_poisson".to_string(), d.answer_poisson.len()),
        ]
        .into_iter()
        .chain(levels)
        .filter(|(_, got)| *got > 0)
        {
            length(
                &format!("{prefix}.discretisation.{field}"),
                got,
                s.poisson.len(),
                "the parameterisation of Poisson's ratio",
            )?;
        }
    }
    let (low, high) = youngs_bounds;
    for (i, &e) in s.log10_youngs.iter().enumerate() {
        if !(e.is_finite() && (low..=high).contains(&e)) {
            return Err(invalid(
                &format!("{prefix}.log10_youngs[{i}]"),
                format!("is {e:.6e}, outside `material.log10_youngs_range` [{low}, {high}]"),
            ));
        }
    }
    if let Some(bad) = s.velocity.iter().position(|v| !v.is_finite()) {
        return Err(invalid(
            &format!("{prefix}.velocity[{bad}]"),
            "is not finite".to_string(),
        ));
    }
    let running = plan.get(s.stage).map_or(0, |p| match p.kind {
        StageKind::Velocity => velocity,
        StageKind::Scan | StageKind::Stiffness => youngs + poisson,
    });
    let of = "the running stage's parameters";
    // A finished fit's Adam is never read again; one that ended by
    // skipping its converged rounds kept the next stage's (physfit before
    // 2026-12-04), and must still resume to write its outputs.
    if s.stage < plan.len() {
        length(&format!("{prefix}.adam.m"), s.adam.m.len(), running, of)?;
        length(&format!("{prefix}.adam.v"), s.adam.v.len(), running, of)?;
    }
    if let Some(l) = &s.lbfgs {
        length(
            &format!("{prefix}.lbfgs.solver.x"),
            l.solver.x.len(),
            running,
            of,
        )?;
        length(
            &format!("{prefix}.lbfgs.solver.grad"),
            l.solver.grad.len(),
            running,
            of,
        )?;
        for (i, pair) in l.solver.pairs.iter().enumerate() {
            length(
                &format!("{prefix}.lbfgs.solver.pairs[{i}].s"),
                pair.s.len(),
                running,
                of,
            )?;
            length(
                &format!("{prefix}.lbfgs.solver.pairs[{i}].y"),
                pair.y.len(),
                running,
                of,
            )?;
        }
    }
    if let Some(scan) = &s.scan {
        for (i, point) in scan.points.iter().enumerate() {
            length(
                &format!("{prefix}.scan.points[{i}].velocity"),
                point.velocity.len(),
                velocity,
                "the velocity parameterisation",
            )?;
        }
    }
    Ok(())
}
