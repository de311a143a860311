//! The `scene.toml` schema (docs/scene.md lists every field with its unit and
//! default). Parsing only: paths stay as written (relative to the TOML file)
//! and values unchecked; `Scene::load` resolves and validates them. Every
//! table denies unknown fields so a typo is an error, not a silent default.

use std::path::PathBuf;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::mpm_rules::{AnchorRule, WallMode};

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneConfig {
    /// The splats.
    pub gaussians: GaussiansConfig,
    /// Cameras with their reference frames (at least one).
    #[serde(default)]
    pub views: Vec<ViewConfig>,
    /// Reference video settings.
    #[serde(default)]
    pub reference: ReferenceConfig,
    /// Simulation box, grid and time stepping.
    #[serde(default)]
    pub simulation: SimulationConfig,
    /// Material constants and the Young's modulus range.
    #[serde(default)]
    pub material: MaterialConfig,
    /// Simulated and anchored regions.
    #[serde(default)]
    pub regions: RegionsConfig,
    /// Driving particles.
    #[serde(default)]
    pub drivers: DriversConfig,
    /// Optimiser settings.
    #[serde(default)]
    pub fit: FitConfig,
    /// Where results go.
    #[serde(default)]
    pub output: OutputConfig,
}

/// `[gaussians]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GaussiansConfig {
    /// The 3DGS `.ply`, relative to the TOML file.
    pub path: PathBuf,
}

/// One `[[views]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewConfig {
    /// A label for messages and output names (default `view0`, `view1`, …).
    pub name: Option<String>,
    /// The camera.
    pub camera: CameraConfig,
    /// Reference frames: a directory or a glob of PNG/JPEG files, relative
    /// to the TOML file; optional (then this view has no reference).
    pub frames: Option<String>,
    /// Loss masks, one PNG per frame: a directory or a glob like `frames`,
    /// relative to the TOML file; optional (then every pixel counts).
    pub masks: Option<String>,
    /// The camera's colour correction (gain and offset per RGB channel,
    /// [`super::ColorCorrection`]); optional (then the identity).
    pub color_correction: Option<ColorCorrectionConfig>,
}

/// `views[i].color_correction = { gain = [r, g, b], offset = [r, g, b] }`.
/// Lists rather than arrays, so that a wrong length is a scene error naming
/// the field (resolved in [`super::view`]) instead of a parser message.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColorCorrectionConfig {
    /// Gain per channel, each finite and > 0 (default 1, 1, 1).
    pub gain: Option<Vec<f64>>,
    /// Offset per channel, each finite (default 0, 0, 0).
    pub offset: Option<Vec<f64>>,
}

/// `[views.camera]`: either inline intrinsics and a pose, or a nerfstudio
/// `transforms.json` and a frame index. Which form is meant follows from the
/// fields given; mixing forms is an error.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    /// Image width in pixels.
    pub width: Option<u32>,
    /// Image height in pixels.
    pub height: Option<u32>,
    /// Focal length x, pixels.
    pub fx: Option<f64>,
    /// Focal length y, pixels (default `fx`).
    pub fy: Option<f64>,
    /// Principal point x, pixels (default `width/2`).
    pub cx: Option<f64>,
    /// Principal point y, pixels (default `height/2`).
    pub cy: Option<f64>,
    /// World-to-camera rotation, 3 rows (OpenCV axes).
    pub rotation: Option<[[f64; 3]; 3]>,
    /// World-to-camera translation.
    pub translation: Option<[f64; 3]>,
    /// Camera centre, world units.
    pub position: Option<[f64; 3]>,
    /// A world point on the optical axis.
    pub look_at: Option<[f64; 3]>,
    /// World up direction (image up).
    pub up: Option<[f64; 3]>,
    /// A nerfstudio `transforms.json`, relative to the TOML file.
    pub transforms: Option<PathBuf>,
    /// Index into its `frames` list.
    pub frame: Option<usize>,
    /// Near plane, world units (default 0.01).
    pub near: Option<f64>,
}

/// `[reference]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReferenceConfig {
    /// Frames per second of the reference video.
    pub fps: f64,
    /// Background colour, linear RGB in [0, 1].
    pub background: [f32; 3],
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            fps: 30.0,
            background: [0.0, 0.0, 0.0],
        }
    }
}

/// An axis-aligned box `{ min, max }` in world units.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AabbConfig {
    /// Lower corner.
    pub min: [f64; 3],
    /// Upper corner.
    pub max: [f64; 3],
}

/// `simulation.box`: `"auto"` or `{ min, max }`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum BoxSetting {
    /// The simulated splats' bounding box, padded and made a cube.
    #[default]
    Auto,
    /// An explicit cube in world units.
    Explicit(AabbConfig),
}

impl<'de> Deserialize<'de> for BoxSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BoxVisitor;
        impl<'de> Visitor<'de> for BoxVisitor {
            type Value = BoxSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\" or a table { min = [x, y, z], max = [x, y, z] }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BoxSetting, E> {
                if v == "auto" {
                    Ok(BoxSetting::Auto)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BoxSetting, A::Error> {
                AabbConfig::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(BoxSetting::Explicit)
            }
        }
        d.deserialize_any(BoxVisitor)
    }
}

/// `[simulation]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimulationConfig {
    /// The simulation cube (`"auto"` or `{ min, max }`, world units).
    #[serde(rename = "box")]
    pub sim_box: BoxSetting,
    /// For `"auto"`: extra space around the bounding box, as a fraction of
    /// its largest side on each side.
    pub padding: f64,
    /// Grid nodes per box side.
    pub grid_res: u32,
    /// Substeps per frame; default the fewest the stability bound allows.
    pub substeps: Option<u32>,
    /// Gravity, world units / s².
    pub gravity: [f64; 3],
    /// Grid-velocity damping rate, 1/s.
    pub damping: f64,
    /// Wall condition.
    pub walls: WallMode,
    /// `[[simulation.colliders]]`: static planes and boxes with a contact
    /// rule, in the order they act.
    pub colliders: Vec<ColliderConfig>,
    /// Which grid nodes are held: `"splats"` (the default: the node at
    /// floor(x/dx) of every anchored splat and fill point), `"stencil"`
    /// (every node an anchored driver's stencil reaches) or `"nearest"`
    /// (the node nearest each anchored driver).
    pub anchoring: AnchorRule,
    /// How G2P sets the particle velocity: `"apic"` or `"flip"`
    /// (src/mpm_rules/config.rs `Transfer`).
    pub transfer: TransferWord,
    /// With `transfer = "flip"`: τ, seconds, over which the PIC share
    /// smooths the particle velocities (`inf`: pure FLIP); default
    /// [`DEFAULT_PIC_TIME`].
    pub pic_time: Option<f64>,
}

/// `simulation.transfer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransferWord {
    /// APIC: the particle velocity is the grid's, with the affine C.
    #[default]
    Apic,
    /// FLIP with a PIC share per unit of time.
    Flip,
}

/// τ of `transfer = "flip"` when `simulation.pic_time` is not given
/// (seconds): the FLIP twin's fitted E is within 0.01 decades of the truth
/// at half its frames' substeps at τ from 0.074 s up (docs/benchmarks.md,
/// "The simulator against its own time step").
pub const DEFAULT_PIC_TIME: f64 = 0.1;

/// One `[[simulation.colliders]]` entry: `kind = "plane"` with `point` and
/// `normal`, or `kind = "box"` with `min` and `max` (world units), and
/// `contact = "sticky" | "slip" | "friction"` with `friction = μ` for the
/// last. Words and optional fields, so that a wrong or missing one is
/// refused by the validation (src/scene/collider.rs) naming the field and
/// the fix.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColliderConfig {
    /// `"plane"` or `"box"`.
    pub kind: Option<String>,
    /// Plane: a point of it, world units.
    pub point: Option<[f64; 3]>,
    /// Plane: its outward normal (any length > 0), pointing out of the
    /// collider into the space the object moves in.
    pub normal: Option<[f64; 3]>,
    /// Box: lower corner, world units.
    pub min: Option<[f64; 3]>,
    /// Box: upper corner, world units.
    pub max: Option<[f64; 3]>,
    /// `"sticky"`, `"slip"` or `"friction"`.
    pub contact: Option<String>,
    /// Coulomb friction coefficient μ ≥ 0 (with `contact = "friction"` only).
    pub friction: Option<f64>,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        SimulationConfig {
            sim_box: BoxSetting::Auto,
            padding: 0.1,
            grid_res: 32,
            substeps: None,
            gravity: [0.0; 3],
            damping: 0.0,
            walls: WallMode::Sticky,
            colliders: Vec::new(),
            anchoring: AnchorRule::Splats,
            transfer: TransferWord::Apic,
            pic_time: None,
        }
    }
}

/// `[material]` (normalised units: the box is a unit cube).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MaterialConfig {
    /// Density ρ.
    pub density: f64,
    /// Poisson's ratio ν, in [0, 0.5).
    pub poisson_ratio: f64,
    /// Initial Young's modulus E (Pa).
    pub youngs_modulus: f64,
    /// Range `[low, high]` of log10 E the fit may use.
    pub log10_youngs_range: [f64; 2],
}

impl Default for MaterialConfig {
    fn default() -> Self {
        MaterialConfig {
            density: 2000.0,
            poisson_ratio: 0.3,
            youngs_modulus: 1.0e5,
            log10_youngs_range: [3.0, 8.7],
        }
    }
}

/// One part of a region: a box `{ min, max }` or a point set
/// `{ points = "x.ply", radius = r }` (splats within `r` of any point).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionShapeConfig {
    /// Box lower corner, world units.
    pub min: Option<[f64; 3]>,
    /// Box upper corner, world units.
    pub max: Option<[f64; 3]>,
    /// A `.ply` point set (only `x y z` are read), relative to the TOML file.
    pub points: Option<PathBuf>,
    /// Distance from the points, world units.
    pub radius: Option<f64>,
}

/// `[regions]`: each region is the union of its shapes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegionsConfig {
    /// Splats that are simulated; absent = every splat.
    pub simulated: Option<Vec<RegionShapeConfig>>,
    /// Simulated splats that are held fixed; default none.
    pub anchored: Vec<RegionShapeConfig>,
}

/// Drivers per deformed Gaussian (k of PhysDreamer's k nearest drivers,
/// alg. 1): fixed, because the deformation's kernels unroll their loops
/// over it (docs/design.md § Drivers and the deformation of Gaussians), so
/// `drivers.k` is refused at load unless it equals this.
pub const DRIVERS_PER_GAUSSIAN: usize = 8;

/// `[drivers]`: K-Means driving particles.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DriversConfig {
    /// Number of drivers: `"auto"` (8 per occupied grid cell, the default
    /// when `fraction` is not given) or an integer ≥ 1.
    pub count: Option<CountConfig>,
    /// Drivers as a fraction of the simulated splats, in (0, 1].
    pub fraction: Option<f64>,
    /// Nearest drivers per Gaussian: [`DRIVERS_PER_GAUSSIAN`], the only
    /// value the deformation takes.
    pub k: usize,
    /// K-Means seed.
    pub seed: u64,
    /// Fill closed objects with particles before K-Means.
    pub fill: bool,
}

impl Default for DriversConfig {
    fn default() -> Self {
        DriversConfig {
            count: None,
            fraction: None,
            k: DRIVERS_PER_GAUSSIAN,
            seed: 0,
            fill: false,
        }
    }
}

/// `drivers.count` as written: a word (only `"auto"` is valid) or an
/// integer. Any word or integer is accepted by the parser so that a wrong
/// one is refused by the validation, with a message naming the field and
/// the fix; other types fail to parse with a message saying what is
/// expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CountConfig {
    /// An integer.
    Number(i64),
    /// A word; `"auto"`.
    Word(String),
}

impl<'de> Deserialize<'de> for CountConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl Visitor<'_> for CountVisitor {
            type Value = CountConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`drivers.count` to be \"auto\" or an integer ≥ 1")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CountConfig, E> {
                Ok(CountConfig::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CountConfig, E> {
                Ok(CountConfig::Number(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CountConfig, E> {
                Ok(CountConfig::Word(v.to_string()))
            }
        }
        d.deserialize_any(CountVisitor)
    }
}

/// A duration as written: a number of seconds or a word. Any number or
/// word is accepted by the parser so that a wrong one is refused by the
/// validation, naming the field and the words it takes.
#[derive(Clone, Debug, PartialEq)]
pub enum SecondsConfig {
    /// Seconds.
    Number(f64),
    /// A word.
    Word(String),
}

impl<'de> Deserialize<'de> for SecondsConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SecondsVisitor;
        impl Visitor<'_> for SecondsVisitor {
            type Value = SecondsConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of seconds or a word")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SecondsConfig, E> {
                Ok(SecondsConfig::Number(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SecondsConfig, E> {
                Ok(SecondsConfig::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SecondsConfig, E> {
                Ok(SecondsConfig::Number(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SecondsConfig, E> {
                Ok(SecondsConfig::Word(v.to_string()))
            }
        }
        d.deserialize_any(SecondsVisitor)
    }
}

/// One fit stage (`[fit.velocity]`, `[fit.stiffness]`); missing fields take
/// the stage's defaults (docs/scene.md).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitStageConfig {
    /// Adam iterations.
    pub iterations: Option<u32>,
    /// Peak Adam learning rate.
    pub learning_rate: Option<f64>,
    /// Frame count N, the rest frame 0 included: frames 1..=N−1 are fitted
    /// (docs/scene.md § Frame counts).
    pub frames: Option<u32>,
    /// Iterations of linear learning-rate warm-up.
    pub warmup: Option<u32>,
    /// Learning-rate factor reached at the last iteration (exponential decay).
    pub decay: Option<f64>,
    /// Largest gradient norm; larger gradients are scaled down to it.
    pub grad_clip: Option<f64>,
    /// Convergence tolerance (≥ 0; 0: run the whole cap).
    pub tolerance: Option<f64>,
    /// L1 weight for this stage (default: `fit.w_l1`).
    pub w_l1: Option<f64>,
    /// 1 − SSIM weight for this stage (default: `fit.w_ssim`).
    pub w_ssim: Option<f64>,
    /// TV weight for this stage (default: `fit.tv_weight`).
    pub tv_weight: Option<f64>,
    /// How this stage's unknown is parameterised: `"drivers"` (default),
    /// `"global"`, `"regions"`, and for the velocity `"rigid"`. A word, so
    /// that a wrong one is refused by the validation naming the allowed
    /// values.
    pub field: Option<String>,
    /// `[fit.<stage>.regions]`: `name = [shapes]` for `field = "regions"`.
    pub regions: Option<NamedRegionsConfig>,
    /// Weight of the smoothness term on the initial velocity (stage 1 only).
    pub velocity_tv_weight: Option<f64>,
    /// Poisson's ratio as a fitted field (stage 2 only): `"fixed"`
    /// (default), `"global"` or `"regions"`. A word, as `field`.
    pub poisson: Option<String>,
    /// `[low, high]`: the range a fitted ν stays inside (stage 2 only;
    /// default `[0, 0.49]`).
    pub poisson_range: Option<[f64; 2]>,
}

/// `[fit.stiffness.regions]` / `[fit.velocity.regions]`: named regions,
/// each a list of shapes with the `[regions]` syntax, in the order the file
/// writes them. toml (without its `preserve_order` feature) hands a table's
/// keys over sorted, so the keys are read with their spans and put back in
/// file order: the order decides which region a driver in two of them
/// belongs to (the first).
#[derive(Clone, Debug, Default)]
pub struct NamedRegionsConfig {
    /// `(name, shapes)` in file order.
    pub regions: Vec<(String, Vec<RegionShapeConfig>)>,
}

impl<'de> Deserialize<'de> for NamedRegionsConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RegionsVisitor;
        impl<'de> Visitor<'de> for RegionsVisitor {
            type Value = NamedRegionsConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table of `name = [shapes]` (the shapes as in [regions])")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut named = Vec::new();
                while let Some(name) = map.next_key::<toml::Spanned<String>>()? {
                    let shapes: Vec<RegionShapeConfig> = map.next_value()?;
                    named.push((name.span().start, name.into_inner(), shapes));
                }
                named.sort_by_key(|(start, _, _)| *start);
                Ok(NamedRegionsConfig {
                    regions: named
                        .into_iter()
                        .map(|(_, name, shapes)| (name, shapes))
                        .collect(),
                })
            }
        }
        d.deserialize_map(RegionsVisitor)
    }
}

/// `[fit]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FitConfig {
    /// Weight of the L1 term (paper eq. 10).
    pub w_l1: f64,
    /// Weight of the 1 − SSIM term.
    pub w_ssim: f64,
    /// Weight of the total variation of log10 E over the driver graph.
    pub tv_weight: f64,
    /// Stage 1: initial velocity.
    pub velocity: FitStageConfig,
    /// Stage 2: stiffness.
    pub stiffness: FitStageConfig,
    /// Rounds of stage 1 then stage 2 (an integer ≥ 1; checked by the
    /// validation, hence signed).
    pub rounds: i64,
    /// Iterations between checkpoints (an integer ≥ 1).
    pub checkpoint_every: i64,
    /// After the stages, refit E on a doubled grid at twice the substeps
    /// and report how far it moves, level by level
    /// (src/fit/discretisation_check.rs).
    pub check_discretisation: bool,
    /// The cap on the check's levels of doubled grid and substeps (an integer in
    /// 1..=8; checked by the validation, hence signed).
    pub discretisation_levels: i64,
    /// The check's wall-clock budget: seconds, `"auto"` (the stages'
    /// wall time; the default) or `"none"`.
    pub discretisation_seconds: SecondsConfig,
    /// What each level of the check refines: `"grid"` (the grid, the
    /// substeps and the drivers) or `"fixed_grid"` (the substeps and the
    /// drivers on the scene's grid).
    pub discretisation_refine: DiscretisationRefinement,
    /// The coarse scan of E before the stages.
    pub scan: ScanConfig,
}

/// `fit.discretisation_refine`: what each level of the discretisation
/// check refines (src/fit/discretisation_grid.rs, docs/design.md § Error
/// bars, "From the discretisation").
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DiscretisationRefinement {
    /// Each level doubles the grid, at least doubles the substeps and
    /// rebuilds the drivers for the finer grid (the same drivers per
    /// occupied cell): E of the material, where the grid resolves the
    /// object's thinnest moving part.
    Grid,
    /// Each level keeps the scene's grid and doubles the substeps and the
    /// drivers: whether E has converged in the time step and the drivers
    /// at that grid (under APIC it moves with the substeps on a fixed
    /// grid; under FLIP it converges), at a fraction of a grid level's
    /// cost. The default: a check every fit can afford.
    #[default]
    FixedGrid,
}

impl DiscretisationRefinement {
    /// What a check recorded before the refinement could be chosen did:
    /// the grid.
    pub fn before_the_choice() -> Self {
        DiscretisationRefinement::Grid
    }

    /// The scene's word for it.
    pub fn word(self) -> &'static str {
        match self {
            DiscretisationRefinement::Grid => "grid",
            DiscretisationRefinement::FixedGrid => "fixed_grid",
        }
    }
}

/// `[fit.scan]`: the coarse scan of one uniform log10 E over the range,
/// each value with its own velocity, before the stages.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScanConfig {
    /// Grid points over `material.log10_youngs_range` (0 turns the scan
    /// off; otherwise ≥ 2; checked by the validation, hence signed).
    pub points: i64,
    /// L-BFGS evaluations of each point's velocity fit (≥ 1).
    pub velocity_evaluations: i64,
    /// Points over `[fit.stiffness] poisson_range` when ν is fitted (0
    /// turns that scan off; otherwise ≥ 2; checked by the validation).
    pub poisson_points: i64,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            points: 5,
            velocity_evaluations: 4,
            poisson_points: 5,
        }
    }
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig {
            w_l1: 0.1,
            w_ssim: 0.9,
            tv_weight: 0.01,
            velocity: FitStageConfig::default(),
            stiffness: FitStageConfig::default(),
            rounds: 3,
            checkpoint_every: 10,
            check_discretisation: true,
            discretisation_levels: 3,
            discretisation_seconds: SecondsConfig::Word("auto".to_string()),
            discretisation_refine: DiscretisationRefinement::FixedGrid,
            scan: ScanConfig::default(),
        }
    }
}

/// `[output]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// Output directory, relative to the TOML file.
    pub directory: PathBuf,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            directory: PathBuf::from("output"),
        }
    }
}
