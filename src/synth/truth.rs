//! The truth file of a twin experiment (docs/truth.md; docs/design.md §
//! Verification 5): the known `log10 E` field
//! (normalised units, the units of `[material]` and `log10_youngs_range`),
//! the known initial velocity (world units/s) and the number of frames.
//! `physfit synth` renders reference frames from it; `physfit fit --truth`
//! reports how well a fit recovered it ([`Truth::per_driver`]).
//!
//! Each of `[youngs]` and `[velocity]` has a `kind` and that kind's fields
//! only (unknown fields are errors, as in scene.toml). Every `log10 E` given
//! must lie in the scene's `material.log10_youngs_range`, whose top fixes
//! the substeps' stability bound: a truth stiffer than the range would
//! simulate unstably, so it is refused rather than clamped (the random
//! field's values are clamped; its mean must lie in the range).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::error::TruthError;
use super::field::{RandomField, ValueBox, VelocityTruth, YoungsTruth};
use crate::drive::DriverSet;

/// Frames written when the truth file gives no `frames` (the demo's 12).
pub const DEFAULT_FRAMES: usize = 12;

/// Fourier modes of a random field when `modes` is not given.
pub const DEFAULT_MODES: usize = 16;

/// Most Fourier modes a random field may have.
pub const MAX_MODES: usize = 4096;

/// The kinds of `[youngs]`.
const YOUNGS_KINDS: &str = "\"constant\", \"boxes\", \"random\"";

/// The kinds of `[velocity]`.
const VELOCITY_KINDS: &str = "\"uniform\", \"boxes\", \"rotation\"";

/// The file's top level; the two tables are read by `kind`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TruthFile {
    frames: Option<i64>,
    poisson_ratio: Option<f64>,
    youngs: toml::Table,
    velocity: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConstantYoungs {
    log10: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YoungsBox {
    min: [f64; 3],
    max: [f64; 3],
    log10: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxesYoungs {
    default: f64,
    boxes: Vec<YoungsBox>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RandomYoungs {
    #[serde(default)]
    seed: u64,
    mean: f64,
    amplitude: f64,
    length_scale: f64,
    modes: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UniformVelocity {
    value: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VelocityBox {
    min: [f64; 3],
    max: [f64; 3],
    value: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxesVelocity {
    default: [f64; 3],
    boxes: Vec<VelocityBox>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RotationVelocity {
    point: [f64; 3],
    axis: [f64; 3],
    angular_speed: f64,
    linear: Option<[f64; 3]>,
}

/// The truth's values on a driver set, in driver order: what a fit's
/// recovery is measured against.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthValues {
    /// `log10 E` per driver (normalised units).
    pub log10_youngs: Vec<f64>,
    /// Initial velocity, 3 per driver (world units/s), 0 on anchored
    /// drivers (as the fit's velocity map holds them).
    pub velocity: Vec<f64>,
    /// The initial affine velocity `C0` of each driver, 9 per driver
    /// (row-major `∂v_a/∂x_b`, 1/s): the truth field's gradient where it is
    /// affine (`rotation`: `[ω]×`), 0 where it is piecewise constant
    /// (`uniform`, `boxes`) and on anchored drivers; what a rollout of the
    /// truth starts APIC's `C` at (docs/design.md § Loss, parameters, fit).
    pub velocity_gradient: Vec<f64>,
    /// Poisson's ratio of every driver, when the truth gives one
    /// ([`Truth::poisson_ratio`]).
    pub poisson_ratio: Option<f64>,
}

/// A loaded, validated truth file (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Truth {
    /// The truth file.
    pub path: PathBuf,
    /// Its text (copied into synth's output as written).
    pub text: String,
    /// Frames to write, the rest frame 0 included (≥ 2).
    pub frames: usize,
    /// The `log10 E` field.
    pub youngs: YoungsTruth,
    /// The initial-velocity field.
    pub velocity: VelocityTruth,
    /// Poisson's ratio of the whole object, in `[0, 0.5)` (absent: the
    /// scene's `material.poisson_ratio`). A twin made by another engine
    /// with its own ν says it here, so that the truth's rollout and a fit
    /// of ν are measured against it.
    pub poisson_ratio: Option<f64>,
}

/// Checks and names fields of one truth file.
struct Checker<'a> {
    path: &'a Path,
    range: [f64; 2],
}

impl Checker<'_> {
    fn invalid(
        &self,
        field: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> TruthError {
        TruthError::Invalid {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// A `log10 E` inside the scene's range.
    fn log10(&self, field: &str, value: f64) -> Result<f64, TruthError> {
        if !(value >= self.range[0] && value <= self.range[1]) {
            return Err(TruthError::OutOfRange {
                path: self.path.to_path_buf(),
                field: field.to_string(),
                value,
                low: self.range[0],
                high: self.range[1],
            });
        }
        Ok(value)
    }

    fn finite(&self, field: &str, value: f64) -> Result<f64, TruthError> {
        if !value.is_finite() {
            return Err(self.invalid(
                field,
                format!("{value} is not finite"),
                "give a finite number",
            ));
        }
        Ok(value)
    }

    fn finite3(&self, field: &str, value: [f64; 3]) -> Result<[f64; 3], TruthError> {
        if value.iter().any(|v| !v.is_finite()) {
            return Err(self.invalid(
                field,
                format!("{value:?} is not three finite numbers"),
                "give [x, y, z] with finite numbers",
            ));
        }
        Ok(value)
    }

    /// A box with finite corners and `min < max` on every axis.
    fn value_box<T>(
        &self,
        field: &str,
        min: [f64; 3],
        max: [f64; 3],
        value: T,
    ) -> Result<ValueBox<T>, TruthError> {
        let min = self.finite3(&format!("{field}.min"), min)?;
        let max = self.finite3(&format!("{field}.max"), max)?;
        if (0..3).any(|a| min[a] >= max[a]) {
            return Err(self.invalid(
                field,
                format!("min {min:?} is not below max {max:?} on every axis"),
                "give min < max on x, y and z (world units)",
            ));
        }
        Ok(ValueBox { min, max, value })
    }

    /// Deserialises `table` (its `kind` removed) as `T`.
    fn table<T: DeserializeOwned>(&self, field: &str, table: toml::Table) -> Result<T, TruthError> {
        T::deserialize(toml::Value::Table(table)).map_err(|e| TruthError::Parse {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Removes and returns the `kind` of table `field`.
    fn kind(
        &self,
        field: &str,
        table: &mut toml::Table,
        expected: &str,
    ) -> Result<String, TruthError> {
        match table.remove("kind") {
            Some(toml::Value::String(kind)) => Ok(kind),
            Some(other) => Err(self.invalid(
                &format!("{field}.kind"),
                format!("{other} is not a string"),
                format!("write kind = one of {expected}"),
            )),
            None => Err(self.invalid(
                &format!("{field}.kind"),
                "missing",
                format!("add kind = one of {expected}"),
            )),
        }
    }

    fn unknown_kind(&self, field: &str, kind: String, expected: &'static str) -> TruthError {
        TruthError::UnknownKind {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            kind,
            expected,
        }
    }

    fn youngs(&self, mut table: toml::Table) -> Result<YoungsTruth, TruthError> {
        let f = "youngs";
        let kind = self.kind(f, &mut table, YOUNGS_KINDS)?;
        Ok(match kind.as_str() {
            "constant" => {
                let c: ConstantYoungs = self.table(f, table)?;
                YoungsTruth::Constant(self.log10("youngs.log10", c.log10)?)
            }
            "boxes" => {
                let c: BoxesYoungs = self.table(f, table)?;
                let default = self.log10("youngs.default", c.default)?;
                let mut boxes = Vec::with_capacity(c.boxes.len());
                for (i, b) in c.boxes.into_iter().enumerate() {
                    let bf = format!("youngs.boxes[{i}]");
                    let value = self.log10(&format!("{bf}.log10"), b.log10)?;
                    boxes.push(self.value_box(&bf, b.min, b.max, value)?);
                }
                YoungsTruth::Boxes { default, boxes }
            }
            "random" => {
                let c: RandomYoungs = self.table(f, table)?;
                let mean = self.log10("youngs.mean", c.mean)?;
                let amplitude = self.finite("youngs.amplitude", c.amplitude)?;
                if amplitude < 0.0 {
                    return Err(self.invalid(
                        "youngs.amplitude",
                        format!("{amplitude} is negative"),
                        "give the field's standard deviation in log10 units, ≥ 0",
                    ));
                }
                let length_scale = self.finite("youngs.length_scale", c.length_scale)?;
                if length_scale <= 0.0 {
                    return Err(self.invalid(
                        "youngs.length_scale",
                        format!("{length_scale} is not positive"),
                        "give the distance over which E varies, > 0 world units",
                    ));
                }
                let modes = match c.modes {
                    None => DEFAULT_MODES,
                    Some(m) if (1..=MAX_MODES as i64).contains(&m) => m as usize,
                    Some(m) => {
                        return Err(self.invalid(
                            "youngs.modes",
                            format!("{m} Fourier modes"),
                            format!("give 1..={MAX_MODES} (default {DEFAULT_MODES})"),
                        ))
                    }
                };
                YoungsTruth::Random(RandomField::new(
                    mean,
                    amplitude,
                    length_scale,
                    c.seed,
                    modes,
                    self.range,
                ))
            }
            _ => return Err(self.unknown_kind("youngs.kind", kind, YOUNGS_KINDS)),
        })
    }

    fn velocity(&self, mut table: toml::Table) -> Result<VelocityTruth, TruthError> {
        let f = "velocity";
        let kind = self.kind(f, &mut table, VELOCITY_KINDS)?;
        Ok(match kind.as_str() {
            "uniform" => {
                let c: UniformVelocity = self.table(f, table)?;
                VelocityTruth::Uniform(self.finite3("velocity.value", c.value)?)
            }
            "boxes" => {
                let c: BoxesVelocity = self.table(f, table)?;
                let default = self.finite3("velocity.default", c.default)?;
                let mut boxes = Vec::with_capacity(c.boxes.len());
                for (i, b) in c.boxes.into_iter().enumerate() {
                    let bf = format!("velocity.boxes[{i}]");
                    let value = self.finite3(&format!("{bf}.value"), b.value)?;
                    boxes.push(self.value_box(&bf, b.min, b.max, value)?);
                }
                VelocityTruth::Boxes { default, boxes }
            }
            "rotation" => {
                let c: RotationVelocity = self.table(f, table)?;
                let point = self.finite3("velocity.point", c.point)?;
                let axis = self.finite3("velocity.axis", c.axis)?;
                let norm = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
                if norm == 0.0 {
                    return Err(self.invalid(
                        "velocity.axis",
                        "the axis is the zero vector",
                        "give the axis direction, e.g. [0, 0, 1] (any length but 0)",
                    ));
                }
                VelocityTruth::Rotation {
                    point,
                    axis: axis.map(|a| a / norm),
                    angular_speed: self.finite("velocity.angular_speed", c.angular_speed)?,
                    linear: self.finite3("velocity.linear", c.linear.unwrap_or([0.0; 3]))?,
                }
            }
            _ => return Err(self.unknown_kind("velocity.kind", kind, VELOCITY_KINDS)),
        })
    }
}

impl Truth {
    /// Reads and validates the truth file at `path` for a scene whose
    /// `material.log10_youngs_range` is `log10_youngs_range` (module doc).
    pub fn load(path: &Path, log10_youngs_range: [f64; 2]) -> Result<Truth, TruthError> {
        let text = std::fs::read_to_string(path).map_err(|error| TruthError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Self::parse(&text, path, log10_youngs_range)
    }

    /// [`Truth::load`] of `text`, reported as the file `path`.
    pub fn parse(
        text: &str,
        path: &Path,
        log10_youngs_range: [f64; 2],
    ) -> Result<Truth, TruthError> {
        let check = Checker {
            path,
            range: log10_youngs_range,
        };
        let file: TruthFile = toml::from_str(text).map_err(|e| TruthError::Parse {
            path: path.to_path_buf(),
            field: "(top level)".into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let frames = match file.frames {
            None => DEFAULT_FRAMES,
            Some(n) if n >= 2 => n as usize,
            Some(n) => {
                return Err(check.invalid(
                    "frames",
                    format!("{n} frames"),
                    "give at least 2: the rest frame 0 and one after it",
                ))
            }
        };
        let poisson_ratio = match file.poisson_ratio {
            Some(nu) if !(0.0..0.5).contains(&nu) => {
                return Err(check.invalid(
                    "poisson_ratio",
                    format!("{nu} is outside [0, 0.5)"),
                    "give the object's Poisson's ratio, 0 ≤ ν < 0.5 (or leave it out for the \
                     scene's material.poisson_ratio)",
                ))
            }
            nu => nu,
        };
        Ok(Truth {
            path: path.to_path_buf(),
            text: text.to_string(),
            frames,
            poisson_ratio,
            youngs: check.youngs(file.youngs)?,
            velocity: check.velocity(file.velocity)?,
        })
    }

    /// The true `log10 E` (normalised units) at a world point.
    pub fn log10_youngs_at(&self, world: [f64; 3]) -> f64 {
        self.youngs.at(world)
    }

    /// The true initial velocity (world units/s) at a world point.
    pub fn velocity_at(&self, world: [f64; 3]) -> [f64; 3] {
        self.velocity.at(world)
    }

    /// The true initial velocity's gradient (1/s, row-major `∂v_a/∂x_b`)
    /// at a world point ([`TruthValues::velocity_gradient`]).
    pub fn velocity_gradient_at(&self, world: [f64; 3]) -> [[f64; 3]; 3] {
        self.velocity.gradient_at(world)
    }

    /// The truth at the rest positions of `drivers` (world positions from
    /// their normalised rest and the simulation box); anchored drivers get
    /// velocity 0 and no velocity gradient.
    pub fn per_driver(&self, drivers: &DriverSet) -> TruthValues {
        let mut log10_youngs = Vec::with_capacity(drivers.len());
        let mut velocity = Vec::with_capacity(3 * drivers.len());
        let mut velocity_gradient = Vec::with_capacity(9 * drivers.len());
        for (rest, &anchored) in drivers.rest.iter().zip(&drivers.anchored) {
            let b = &drivers.sim_box;
            let world = std::array::from_fn(|a| b.min[a] + f64::from(rest[a]) * b.side);
            log10_youngs.push(self.log10_youngs_at(world));
            velocity.extend(if anchored {
                [0.0; 3]
            } else {
                self.velocity_at(world)
            });
            velocity_gradient.extend(if anchored {
                [0.0; 9]
            } else {
                let g = self.velocity_gradient_at(world);
                std::array::from_fn::<f64, 9, _>(|i| g[i / 3][i % 3])
            });
        }
        TruthValues {
            log10_youngs,
            velocity,
            velocity_gradient,
            poisson_ratio: self.poisson_ratio,
        }
    }
}
