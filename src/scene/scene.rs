//! [`Scene::load`]: reads `scene.toml`, resolves every path relative to it,
//! loads the splats, cameras and frame sizes, and validates every setting
//! (errors name the file, the field and the fix; docs/scene.md). Also the
//! conversions later stages need: world → normalised box, gravity in
//! normalised units, the [`MpmConfig`], the simulated/anchored masks.

use std::path::{Path, PathBuf};

use super::collider::{check_start_outside, resolve_colliders, to_normalised};
use super::config::{
    BoxSetting, CountConfig, DriversConfig, FitConfig, FitStageConfig, GaussiansConfig,
    MaterialConfig, ReferenceConfig, RegionsConfig, SceneConfig, SimulationConfig, ViewConfig,
    DRIVERS_PER_GAUSSIAN,
};
use super::error::SceneError;
use super::fit_field::{resolve_field, FieldOf, FieldSetting};
use super::ply::{load_gaussians, LoadedSplats};
use super::region::{resolve_region, Region};
use super::sim_box::SimBox;
use super::validate::{representable, Validator};
use super::view::{resolve_view, View};
use super::Gaussians;
use crate::mpm_rules::stability::{explicit_dt_bound, min_substeps_per_frame};
use crate::mpm_rules::voxel;
use crate::mpm_rules::{Collider, MpmConfig, WallMode};

/// Drivers per occupied grid cell of `drivers.count = "auto"` (the
/// default): MPM wants several particles per cell (PhysDreamer's author:
/// about 10) and tears the material numerically with too few (docs/design.md §
/// Drivers and the deformation of Gaussians); 4 keeps the fox's K-Means and
/// simulation cheap while staying clear of [`MIN_DRIVERS_PER_CELL`].
pub const AUTO_DRIVERS_PER_CELL: usize = 4;

/// Below this many drivers per occupied cell `physfit check` warns: MPM
/// tears the material numerically (docs/design.md § Drivers).
pub const MIN_DRIVERS_PER_CELL: f64 = 2.0;

/// Resolved `[simulation]` settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulation {
    /// The simulation cube, world units.
    pub sim_box: SimBox,
    /// True when the cube was derived (`box = "auto"`).
    pub auto_box: bool,
    /// Grid nodes per box side.
    pub grid_res: u32,
    /// Substeps per frame (given, or the stability minimum).
    pub substeps: u32,
    /// Gravity, world units / s².
    pub gravity_world: [f64; 3],
    /// Grid-velocity damping rate, 1/s.
    pub damping: f64,
    /// Wall condition.
    pub walls: WallMode,
    /// `[[simulation.colliders]]` in order, world units (the simulator's
    /// are [`Scene::mpm_config`]'s).
    pub colliders: Vec<Collider>,
}

/// Resolved `[material]` (normalised units).
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    /// Density ρ.
    pub density: f64,
    /// Poisson's ratio ν ∈ [0, 0.5).
    pub poisson_ratio: f64,
    /// Initial Young's modulus.
    pub youngs_modulus: f64,
    /// `[low, high]` bounds of log10 E.
    pub log10_youngs_range: [f64; 2],
}

/// How `drivers.count` was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DriverCount {
    /// `"auto"` (the default): [`AUTO_DRIVERS_PER_CELL`] per occupied cell.
    Auto,
    /// An integer.
    Given(usize),
    /// `drivers.fraction` of the simulated splats.
    Fraction(f64),
}

/// Resolved `[drivers]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Drivers {
    /// Number of driving particles, capped at the points K-Means runs over
    /// (the simulated splats, plus the fill points with `fill`).
    pub count: usize,
    /// How the count was chosen.
    pub rule: DriverCount,
    /// Cells of the simulation grid the material occupies: those holding at
    /// least one simulated splat (anchored ones included), plus the interior
    /// cells with `fill` ([`crate::mpm_rules::voxel`]).
    pub occupied_cells: usize,
    /// Interior cells filled with points (0 without `fill`).
    pub interior_cells: usize,
    /// Fill points (0 without `fill`): in every half-cell voxel of the
    /// interior cells and in the inner empty voxels of the surface cells, as
    /// many per voxel as the splats have ([`crate::mpm_rules::voxel::fill`]).
    pub fill_points: usize,
    /// Fill closed objects before K-Means.
    pub fill: bool,
    /// Nearest drivers per Gaussian.
    pub k: usize,
    /// K-Means seed.
    pub seed: u64,
}

impl Drivers {
    /// Drivers per occupied cell.
    pub fn per_occupied_cell(&self) -> f64 {
        self.count as f64 / self.occupied_cells.max(1) as f64
    }

    /// True below [`MIN_DRIVERS_PER_CELL`]: the material would tear.
    pub fn too_sparse(&self) -> bool {
        self.per_occupied_cell() < MIN_DRIVERS_PER_CELL
    }
}

/// One resolved fit stage.
#[derive(Clone, Debug, PartialEq)]
pub struct FitStage {
    /// Adam iterations.
    pub iterations: u32,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// The `frames` key: a frame count N, the rest frame 0 included, so
    /// the stage fits frames 1..=N−1 (docs/scene.md § Frame counts; ≥ 2,
    /// at most the reference frame count); `None` = all reference frames.
    /// [`FitStage::fitted_frames`] gives the frames themselves.
    pub frames: Option<u32>,
    /// Linear warm-up iterations.
    pub warmup: u32,
    /// Learning-rate factor reached at the last iteration.
    pub decay: f64,
    /// Gradient-norm clip.
    pub grad_clip: f64,
    /// The stage has converged when its loss falls by less than this
    /// fraction over 5 iterations (Adam, after the warm-up) or by less than
    /// half of it in each of two L-BFGS steps in a row; 0 runs every
    /// iteration of the cap.
    pub tolerance: f64,
    /// L1 image-loss weight (paper eq. 10).
    pub w_l1: f64,
    /// 1 − SSIM weight.
    pub w_ssim: f64,
    /// Total-variation weight on log10 E.
    pub tv_weight: f64,
    /// Weight of the smoothness term on the initial velocity (TV of v0
    /// over the driver graph; 0: off). Stage 1 only: stage 2 holds v0
    /// frozen, where the term is a constant, so `[fit.stiffness]` refuses it
    /// and its value there is 0.
    pub velocity_tv_weight: f64,
    /// How this stage's unknown is parameterised (`field`, `regions`).
    pub field: FieldSetting,
}

impl FitStage {
    /// The frames this stage fits of `available` reference frames per view
    /// (the rest frame 0 included): 1..=N−1 for `frames = N`, frames
    /// 1..=available−1 for `None`; empty when nothing follows the rest
    /// frame. Frame 0 is never fitted.
    pub fn fitted_frames(&self, available: usize) -> std::ops::RangeInclusive<usize> {
        let count = self.frames.map_or(available, |n| n as usize);
        1..=count.saturating_sub(1)
    }

    /// Stage 1 defaults (docs/design.md § Loss, parameters, fit: a frame
    /// count of 4, frames 1–3 fitted).
    pub fn velocity_default() -> FitStage {
        FitStage {
            iterations: 100,
            learning_rate: 0.1,
            frames: Some(4),
            warmup: 10,
            decay: 0.1,
            grad_clip: 1.0,
            tolerance: 2e-3,
            w_l1: 0.1,
            w_ssim: 0.9,
            tv_weight: 0.01,
            velocity_tv_weight: 0.0,
            field: FieldSetting::Drivers,
        }
    }

    /// Stage 2 defaults (all frames).
    pub fn stiffness_default() -> FitStage {
        FitStage {
            iterations: 100,
            learning_rate: 0.1,
            frames: None,
            warmup: 10,
            decay: 0.1,
            grad_clip: 1.0,
            tolerance: 2e-3,
            w_l1: 0.1,
            w_ssim: 0.9,
            tv_weight: 0.01,
            velocity_tv_weight: 0.0,
            field: FieldSetting::Drivers,
        }
    }
}

/// Resolved `[fit]`: the stage-independent loss weights (each stage may
/// override them) and the two stages.
#[derive(Clone, Debug, PartialEq)]
pub struct FitSettings {
    /// L1 weight.
    pub w_l1: f64,
    /// 1 − SSIM weight.
    pub w_ssim: f64,
    /// Total-variation weight on log10 E.
    pub tv_weight: f64,
    /// Stage 1.
    pub velocity: FitStage,
    /// Stage 2.
    pub stiffness: FitStage,
    /// Rounds of stage 1 then stage 2 (≥ 1): with 2, stage 1 runs again
    /// with the fitted E, then stage 2 again.
    pub rounds: u32,
    /// Iterations between checkpoints (≥ 1; one is also written at the end
    /// of each stage).
    pub checkpoint_every: u32,
    /// The coarse scan of E before the stages (`[fit.scan]`).
    pub scan: ScanSettings,
}

/// `[fit.scan]`: one uniform log10 E scanned over
/// `material.log10_youngs_range`, each value with its own velocity, so
/// that the fit does not depend on `material.youngs_modulus`
/// (src/fit/scan.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSettings {
    /// Grid points (0: no scan; otherwise ≥ 2; default 5).
    pub points: u32,
    /// L-BFGS evaluations of each point's velocity fit (≥ 1; default 4).
    pub velocity_evaluations: u32,
}

/// The explicit time-step check for a scene (docs/design.md § MPM, Stability).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stability {
    /// Substep length `1/(fps·substeps)`, seconds.
    pub dt: f64,
    /// Largest stable substep for the top of the E range.
    pub dt_bound: f64,
    /// Fewest substeps per frame that satisfy the bound.
    pub min_substeps: u32,
    /// The E the bound is evaluated at (10^high).
    pub youngs_max: f64,
}

/// A loaded, validated scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The scene file.
    pub path: PathBuf,
    /// The file as parsed (paths as written).
    pub config: SceneConfig,
    /// The splats and their source `.ply` (for write-back).
    pub splats: LoadedSplats,
    /// Path of the `.ply`.
    pub gaussians_path: PathBuf,
    /// Cameras and reference frames.
    pub views: Vec<View>,
    /// Reference frames per second.
    pub fps: f64,
    /// Background colour, linear RGB.
    pub background: [f32; 3],
    /// Simulation settings.
    pub simulation: Simulation,
    /// Material settings.
    pub material: Material,
    /// Per splat: simulated.
    pub simulated: Vec<bool>,
    /// Per splat: anchored (always a subset of `simulated`).
    pub anchored: Vec<bool>,
    /// The anchored region (world units), for points that are not splats
    /// (the fill points of `drivers.fill`).
    pub anchored_region: Region,
    /// Driving particles.
    pub drivers: Drivers,
    /// Optimiser settings.
    pub fit: FitSettings,
    /// Output directory (resolved; may not exist yet).
    pub output_dir: PathBuf,
}

fn resolve_stage(
    v: &Validator,
    field: &str,
    of: FieldOf,
    c: &FitStageConfig,
    d: FitStage,
) -> Result<FitStage, SceneError> {
    let f = |name: &str| format!("{field}.{name}");
    let velocity_tv_weight = match (of, c.velocity_tv_weight) {
        (_, None) => d.velocity_tv_weight,
        (FieldOf::Velocity, Some(w)) => v.non_negative(&f("velocity_tv_weight"), w)?,
        (FieldOf::Stiffness, Some(_)) => return Err(v.invalid(
            &f("velocity_tv_weight"),
            "stage 2 holds the initial velocity frozen, so its smoothness term is a constant there",
            "move `velocity_tv_weight` to [fit.velocity]",
        )),
    };
    let stage = FitStage {
        velocity_tv_weight,
        field: resolve_field(v, field, of, c)?,
        iterations: c.iterations.unwrap_or(d.iterations),
        learning_rate: v.positive(
            &f("learning_rate"),
            c.learning_rate.unwrap_or(d.learning_rate),
        )?,
        frames: c.frames.or(d.frames),
        warmup: c.warmup.unwrap_or(d.warmup),
        decay: c.decay.unwrap_or(d.decay),
        grad_clip: c.grad_clip.unwrap_or(d.grad_clip),
        tolerance: v.non_negative(&f("tolerance"), c.tolerance.unwrap_or(d.tolerance))?,
        w_l1: v.non_negative(&f("w_l1"), c.w_l1.unwrap_or(d.w_l1))?,
        w_ssim: v.non_negative(&f("w_ssim"), c.w_ssim.unwrap_or(d.w_ssim))?,
        tv_weight: v.non_negative(&f("tv_weight"), c.tv_weight.unwrap_or(d.tv_weight))?,
    };
    if stage.w_l1 + stage.w_ssim == 0.0 {
        return Err(v.invalid(
            &f("w_ssim"),
            "both image-loss weights of this stage are 0",
            "give `w_l1` or `w_ssim` a positive weight (defaults: the [fit] values, 0.1 and 0.9)",
        ));
    }
    if let Some(n @ (0 | 1)) = stage.frames {
        return Err(v.out_of_range(
            &f("frames"),
            n,
            "must be ≥ 2: a frame count counts the rest frame 0, which is never fitted \
             (4 fits frames 1–3; docs/scene.md § Frame counts)",
        ));
    }
    if !(stage.decay > 0.0 && stage.decay <= 1.0) {
        return Err(v.out_of_range(
            &f("decay"),
            stage.decay,
            "must be in (0, 1]: the learning-rate factor at the last iteration",
        ));
    }
    if stage.grad_clip.is_nan() || stage.grad_clip <= 0.0 {
        return Err(v.out_of_range(
            &f("grad_clip"),
            stage.grad_clip,
            "must be > 0 (use inf to disable clipping)",
        ));
    }
    Ok(stage)
}

/// `[reference]`: the frame rate and the background colour.
fn resolve_reference(v: &Validator, r: &ReferenceConfig) -> Result<(f64, [f32; 3]), SceneError> {
    let fps = v.positive("reference.fps", r.fps)?;
    if !r.background.iter().all(|x| (0.0..=1.0).contains(x)) {
        return Err(v.out_of_range(
            "reference.background",
            format!("{:?}", r.background),
            "each channel must be in [0, 1] (linear RGB)",
        ));
    }
    Ok((fps, r.background))
}

/// `[material]`.
fn resolve_material(v: &Validator, m: &MaterialConfig) -> Result<Material, SceneError> {
    let density = v.positive("material.density", m.density)?;
    let nu = m.poisson_ratio;
    if !(0.0..0.5).contains(&nu) {
        return Err(v.out_of_range(
            "material.poisson_ratio",
            nu,
            "must be in [0, 0.5): 0.5 is incompressible (λ → ∞) and negative ratios are not supported; typical solids use 0.2–0.45",
        ));
    }
    let [lo, hi] = m.log10_youngs_range;
    if !(representable(lo) && representable(hi)) {
        return Err(v.out_of_range(
            "material.log10_youngs_range",
            format!("{:?}", m.log10_youngs_range),
            "both ends must be finite",
        ));
    }
    if lo >= hi {
        return Err(SceneError::InvertedRange {
            path: v.path.to_path_buf(),
            field: "material.log10_youngs_range".into(),
            low: lo,
            high: hi,
        });
    }
    let e0 = v.positive("material.youngs_modulus", m.youngs_modulus)?;
    if !(lo..=hi).contains(&e0.log10()) {
        return Err(v.out_of_range(
            "material.youngs_modulus",
            e0,
            format!(
                "must lie in the range 10^{lo} – 10^{hi} given by `material.log10_youngs_range`"
            ),
        ));
    }
    Ok(Material {
        density,
        poisson_ratio: nu,
        youngs_modulus: e0,
        log10_youngs_range: [lo, hi],
    })
}

/// The numbers of `[simulation]`; its box needs the simulated splats and is
/// resolved after them ([`resolve_box`]).
struct SimulationNumbers {
    padding: f64,
    substeps: u32,
    gravity_world: [f64; 3],
    damping: f64,
    colliders: Vec<Collider>,
}

/// `[simulation]` less its box: the grid, the padding of an automatic box,
/// damping, gravity, the colliders and the substeps, checked against the
/// explicit time-step bound at the top of the material's E range.
fn resolve_simulation(
    v: &Validator,
    s: &SimulationConfig,
    fps: f64,
    material: &Material,
) -> Result<SimulationNumbers, SceneError> {
    if s.grid_res < crate::mpm_rules::config::MIN_GRID_RES {
        return Err(v.out_of_range(
            "simulation.grid_res",
            s.grid_res,
            format!(
                "must be ≥ {} (3 cells of wall margin on each side plus room for the object)",
                crate::mpm_rules::config::MIN_GRID_RES
            ),
        ));
    }
    let padding = v.non_negative("simulation.padding", s.padding)?;
    let damping = v.non_negative("simulation.damping", s.damping)?;
    let gravity_world = v.finite3("simulation.gravity", s.gravity)?;
    let (nu, density) = (material.poisson_ratio, material.density);
    let dx = 1.0 / s.grid_res as f64;
    let youngs_max = 10f64.powf(material.log10_youngs_range[1]);
    let min_substeps = min_substeps_per_frame(fps, youngs_max, nu, density, dx);
    let substeps = match s.substeps {
        None => min_substeps,
        Some(0) => {
            return Err(v.out_of_range(
                "simulation.substeps",
                0,
                format!("must be ≥ 1; the stability bound needs ≥ {min_substeps}"),
            ))
        }
        Some(n) if n < min_substeps => {
            return Err(SceneError::TooFewSubsteps {
                path: v.path.to_path_buf(),
                substeps: n,
                needed: min_substeps,
                dt: 1.0 / (fps * n as f64),
                bound: explicit_dt_bound(youngs_max, nu, density, dx),
                youngs_max,
            })
        }
        Some(n) => n,
    };
    let colliders = resolve_colliders(v, &s.colliders)?;
    Ok(SimulationNumbers {
        padding,
        substeps,
        gravity_world,
        damping,
        colliders,
    })
}

/// `[[views]]`: at least one, every name different, and as many reference
/// frames in every view that has frames.
fn resolve_views(v: &Validator, configs: &[ViewConfig]) -> Result<Vec<View>, SceneError> {
    if configs.is_empty() {
        return Err(v.invalid(
            "views",
            "no view",
            "add at least one [[views]] table with a camera",
        ));
    }
    let views = configs
        .iter()
        .enumerate()
        .map(|(i, view)| resolve_view(v, i, view))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, view) in views.iter().enumerate() {
        if let Some(j) = views[..i].iter().position(|w| w.name == view.name) {
            return Err(v.invalid(
                &format!("views[{i}].name"),
                format!("'{}' is also the name of views[{j}]; their output files would overwrite each other", view.name),
                "give every view a different name",
            ));
        }
    }
    let mut first: Option<(usize, usize)> = None;
    for (i, view) in views.iter().enumerate() {
        if let Some(frames) = &view.frames {
            match first {
                None => first = Some((i, frames.len())),
                Some((j, n)) if n != frames.len() => {
                    return Err(SceneError::FrameCount {
                        path: v.path.to_path_buf(),
                        field: format!("views[{i}].frames"),
                        found: frames.len(),
                        first_field: format!("views[{j}].frames"),
                        expected: n,
                    })
                }
                _ => {}
            }
        }
    }
    Ok(views)
}

/// Reference frames per view: those of the first view with frames (`None`
/// when no view has any); [`resolve_views`] makes the counts agree.
fn frame_count(views: &[View]) -> Option<usize> {
    views
        .iter()
        .find_map(|v| v.frames.as_ref().map(|f| f.len()))
}

/// `[gaussians]`: the `.ply` path and its splats.
fn resolve_splats(
    v: &Validator,
    g: &GaussiansConfig,
) -> Result<(PathBuf, LoadedSplats), SceneError> {
    let gaussians_path = v.existing("gaussians.path", &g.path)?;
    let splats = load_gaussians(&gaussians_path).map_err(|error| SceneError::Ply {
        path: v.path.to_path_buf(),
        field: "gaussians.path".into(),
        error: Box::new(error),
    })?;
    // Said here, naming the file, rather than later as "no splat lies in
    // the simulated region".
    if splats.gaussians.is_empty() {
        return Err(v.invalid(
            "gaussians.path",
            format!(
                "{} holds no usable splat (its vertex element is empty, or every splat had \
                 non-finite values and was dropped)",
                crate::io::shown::shown(&gaussians_path)
            ),
            "give a 3DGS .ply with splats",
        ));
    }
    Ok((gaussians_path, splats))
}

/// Resolved `[regions]`: which splats are simulated and which anchored.
struct Regions {
    simulated: Vec<bool>,
    anchored: Vec<bool>,
    anchored_region: Region,
}

/// `[regions]`: at least one simulated splat, and not all of them anchored.
fn resolve_regions(
    v: &Validator,
    r: &RegionsConfig,
    gaussians: &Gaussians,
) -> Result<Regions, SceneError> {
    let means = &gaussians.means;
    let simulated = match &r.simulated {
        None => vec![true; means.len()],
        Some(shapes) => resolve_region(v, "regions.simulated", shapes)?.mask(means),
    };
    let n_sim = simulated.iter().filter(|s| **s).count();
    if n_sim == 0 {
        let (bounds_min, bounds_max) = gaussians.bounds().unwrap_or(([0.0; 3], [0.0; 3]));
        return Err(SceneError::NothingSimulated {
            path: v.path.to_path_buf(),
            field: if r.simulated.is_some() {
                "regions.simulated"
            } else {
                "gaussians.path"
            }
            .into(),
            bounds_min,
            bounds_max,
        });
    }
    let anchored_region: Region = resolve_region(v, "regions.anchored", &r.anchored)?;
    let anchored: Vec<bool> = means
        .iter()
        .zip(&simulated)
        .map(|(p, &s)| s && anchored_region.contains(*p))
        .collect();
    let n_anchored = anchored.iter().filter(|a| **a).count();
    if n_anchored == n_sim {
        return Err(SceneError::NothingFree {
            path: v.path.to_path_buf(),
            field: "regions.anchored".into(),
            count: n_sim,
        });
    }
    if !r.anchored.is_empty() && n_anchored == 0 {
        log::warn!(
            "{}: `regions.anchored` contains no simulated splat",
            crate::io::shown::shown(v.path)
        );
    }
    Ok(Regions {
        simulated,
        anchored,
        anchored_region,
    })
}

/// `simulation.box`, which completes `[simulation]`: derived around the
/// simulated splats (`"auto"`) or given as a cube, and holding every
/// simulated splat clear of the wall margin; no simulated splat may start
/// inside a collider.
fn resolve_box(
    v: &Validator,
    s: &SimulationConfig,
    numbers: SimulationNumbers,
    means: &[[f32; 3]],
    simulated: &[bool],
) -> Result<Simulation, SceneError> {
    let (sim_box, auto_box) = match s.sim_box {
        BoxSetting::Auto => {
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for (p, _) in means.iter().zip(simulated).filter(|(_, s)| **s) {
                for a in 0..3 {
                    lo[a] = lo[a].min(p[a] as f64);
                    hi[a] = hi[a].max(p[a] as f64);
                }
            }
            (SimBox::auto(lo, hi, numbers.padding, s.grid_res), true)
        }
        BoxSetting::Explicit(b) => {
            let (min, max) = v.aabb("simulation.box", b.min, b.max)?;
            let sides = [max[0] - min[0], max[1] - min[1], max[2] - min[2]];
            let side = sides.iter().cloned().fold(0.0, f64::max);
            if sides.iter().any(|x| (side - x) > 1e-4 * side) {
                return Err(v.invalid(
                    "simulation.box",
                    format!("not a cube: sides {sides:?}"),
                    format!("give equal sides (e.g. max = min + {side}) or use box = \"auto\""),
                ));
            }
            (SimBox { min, side }, false)
        }
    };
    let outside = means
        .iter()
        .zip(simulated)
        .filter(|(p, sim)| **sim && !SimBox::inside_margin(sim_box.to_normalised(**p), s.grid_res))
        .count();
    if outside > 0 {
        return Err(v.invalid(
            "simulation.box",
            format!("{outside} simulated splats lie outside the box or within 3 grid cells of its walls"),
            "enlarge the box, or use box = \"auto\"",
        ));
    }
    check_start_outside(v, &numbers.colliders, means, simulated)?;
    Ok(Simulation {
        sim_box,
        auto_box,
        grid_res: s.grid_res,
        substeps: numbers.substeps,
        gravity_world: numbers.gravity_world,
        damping: numbers.damping,
        walls: s.walls,
        colliders: numbers.colliders,
    })
}

/// `[drivers]`: the cells the simulated splats occupy (and, with `fill`,
/// the interior cells and fill points), the count rule and the count, and
/// the nearest drivers per Gaussian.
fn resolve_drivers(
    v: &Validator,
    d: &DriversConfig,
    simulation: &Simulation,
    means: &[[f32; 3]],
    simulated: &[bool],
) -> Result<Drivers, SceneError> {
    let grid_res = simulation.grid_res;
    let normalised: Vec<[f32; 3]> = means
        .iter()
        .zip(simulated)
        .filter(|(_, s)| **s)
        .map(|(p, _)| simulation.sim_box.to_normalised(*p))
        .collect();
    let n_sim = normalised.len();
    let surface_cells = voxel::count_occupied(&normalised, grid_res);
    let (interior_cells, fill_points) = if d.fill {
        crate::memory::refuse_fill_grid(v.path, grid_res, voxel::fill_host_bytes(grid_res))?;
        let fill = voxel::fill(&normalised, grid_res);
        (fill.interior_count, fill.points.len())
    } else {
        (0, 0)
    };
    let occupied_cells = surface_cells + interior_cells;
    let n_points = n_sim + fill_points;
    let rule = match (&d.count, d.fraction) {
        (Some(_), Some(_)) => {
            return Err(v.invalid(
                "drivers.fraction",
                "given together with `drivers.count`",
                "give one of `count` or `fraction`",
            ))
        }
        (Some(CountConfig::Word(w)), None) if w == "auto" => DriverCount::Auto,
        (Some(CountConfig::Word(w)), None) => {
            return Err(v.invalid(
                "drivers.count",
                format!("\"{w}\" is not a count"),
                "write count = \"auto\" (4 per occupied grid cell) or an integer ≥ 1",
            ))
        }
        (Some(CountConfig::Number(n)), None) if *n < 1 => {
            return Err(v.out_of_range("drivers.count", n, "must be ≥ 1 (or \"auto\")"))
        }
        (Some(CountConfig::Number(n)), None) => {
            DriverCount::Given(usize::try_from(*n).unwrap_or(usize::MAX))
        }
        (None, Some(f)) => {
            if !(f > 0.0 && f <= 1.0) {
                return Err(v.out_of_range("drivers.fraction", f, "must be in (0, 1]"));
            }
            DriverCount::Fraction(f)
        }
        (None, None) => DriverCount::Auto,
    };
    let count = match rule {
        DriverCount::Auto => AUTO_DRIVERS_PER_CELL * occupied_cells,
        DriverCount::Given(n) => n,
        DriverCount::Fraction(f) => ((f * n_sim as f64).round() as usize).max(1),
    }
    .min(n_points);
    if d.k != DRIVERS_PER_GAUSSIAN {
        return Err(v.out_of_range(
            "drivers.k",
            d.k,
            format!(
                "must be {DRIVERS_PER_GAUSSIAN}: each deformed Gaussian follows exactly its \
                 {DRIVERS_PER_GAUSSIAN} nearest drivers (the deformation's kernels are built for \
                 that k); fix: set `drivers.k = {DRIVERS_PER_GAUSSIAN}` or remove the line"
            ),
        ));
    }
    if d.k > count {
        return Err(v.invalid(
            "drivers.count",
            format!(
                "gives {count} driver(s), fewer than the {} nearest drivers each Gaussian \
                 follows (`drivers.k`)",
                d.k
            ),
            format!("set `drivers.count` to at least {}", d.k),
        ));
    }
    Ok(Drivers {
        count,
        rule,
        occupied_cells,
        interior_cells,
        fill_points,
        fill: d.fill,
        k: d.k,
        seed: d.seed,
    })
}

/// `[fit]`: the loss weights, rounds and checkpoints, and the two stages
/// (their loss weights default to the `[fit]` ones); a stage's `frames`
/// (a frame count, the rest frame 0 included) must not exceed
/// `frames_per_view` when the views have frames.
fn resolve_fit(
    v: &Validator,
    f: &FitConfig,
    frames_per_view: Option<usize>,
) -> Result<FitSettings, SceneError> {
    let w_l1 = v.non_negative("fit.w_l1", f.w_l1)?;
    let w_ssim = v.non_negative("fit.w_ssim", f.w_ssim)?;
    if w_l1 + w_ssim == 0.0 {
        return Err(v.invalid(
            "fit.w_ssim",
            "both image-loss weights are 0",
            "give `fit.w_l1` or `fit.w_ssim` a positive weight (defaults 0.1 and 0.9)",
        ));
    }
    let tv_weight = v.non_negative("fit.tv_weight", f.tv_weight)?;
    // Stage loss weights default to the [fit] ones.
    let with_weights = |d: FitStage| FitStage {
        w_l1,
        w_ssim,
        tv_weight,
        ..d
    };
    let at_least_one = |field: &str, n: i64, why: &str| {
        u32::try_from(n)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| v.out_of_range(field, n, format!("must be an integer ≥ 1 ({why})")))
    };
    let fit = FitSettings {
        rounds: at_least_one(
            "fit.rounds",
            f.rounds,
            "rounds of stage 1 then stage 2 at most; default 3",
        )?,
        checkpoint_every: at_least_one(
            "fit.checkpoint_every",
            f.checkpoint_every,
            "iterations between checkpoints; default 10",
        )?,
        scan: ScanSettings {
            points: u32::try_from(f.scan.points)
                .ok()
                .filter(|&n| n == 0 || n >= 2)
                .ok_or_else(|| {
                    v.out_of_range(
                        "fit.scan.points",
                        f.scan.points,
                        "must be 0 (no scan) or an integer ≥ 2 (grid points over material.log10_youngs_range; default 5)".to_string(),
                    )
                })?,
            velocity_evaluations: at_least_one(
                "fit.scan.velocity_evaluations",
                f.scan.velocity_evaluations,
                "L-BFGS evaluations of each scanned value's velocity; default 4",
            )?,
        },
        w_l1,
        w_ssim,
        tv_weight,
        velocity: resolve_stage(
            v,
            "fit.velocity",
            FieldOf::Velocity,
            &f.velocity,
            with_weights(FitStage::velocity_default()),
        )?,
        stiffness: resolve_stage(
            v,
            "fit.stiffness",
            FieldOf::Stiffness,
            &f.stiffness,
            with_weights(FitStage::stiffness_default()),
        )?,
    };
    if let Some(n) = frames_per_view {
        for (name, stage) in [("velocity", &fit.velocity), ("stiffness", &fit.stiffness)] {
            if let Some(k) = stage.frames {
                if k as usize > n {
                    let fits = match n {
                        0 | 1 => "a rest frame alone leaves nothing to fit".to_string(),
                        _ => format!("{n} fits frames 1–{}", n - 1),
                    };
                    return Err(v.out_of_range(
                        &format!("fit.{name}.frames"),
                        k,
                        format!(
                            "must be at most the {n} reference frame(s) per view \
                             (a frame count counts the rest frame 0: {fits})"
                        ),
                    ));
                }
            }
        }
    }
    Ok(fit)
}

impl Scene {
    /// Loads and validates `path` (module doc).
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|error| SceneError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        if let Some((line, depth)) = deepest_nesting(&text) {
            return Err(SceneError::Parse {
                path: path.to_path_buf(),
                message: format!(
                    "line {line}: keys, tables or arrays nested {depth} deep (a scene file \
                     nests a few levels; the parser stops at its recursion limit); fix: remove \
                     the nesting at line {line} (docs/scene.md lists each field)"
                ),
            });
        }
        let config: SceneConfig = toml::from_str(&text).map_err(|e| {
            // An error on a table's own header (`[extra]`) is about that
            // table, not the one before it.
            let header = e.span().and_then(|span| header_at(&text, span.start));
            let table = e.span().and_then(|span| table_at(&text, span.start));
            let key = e.span().and_then(|span| key_at(&text, span.start));
            let message = e.to_string().trim_end().to_string();
            // Name the field as `table.key` where the error is on a
            // `key = value` line, and say what to do about it.
            let fix = |k: &str| {
                if message.contains("unknown field") {
                    format!("fix: remove or rename `{k}` (the known fields are listed above; docs/scene.md describes each)")
                } else {
                    format!("fix: give `{k}` a value of the type the error expects (docs/scene.md lists each field)")
                }
            };
            if let Some(h) = header {
                let fix = if message.contains("unknown field") {
                    format!("fix: remove or rename the table `[{h}]` (docs/scene.md lists the tables)")
                } else {
                    format!("fix: correct the table `[{h}]` (docs/scene.md lists the tables)")
                };
                return SceneError::Parse {
                    path: path.to_path_buf(),
                    message: format!("`[{h}]`: {message}\n{fix}"),
                };
            }
            SceneError::Parse {
                path: path.to_path_buf(),
                message: match (table, key) {
                    (Some(t), Some(k)) => format!("`{t}.{k}`: {message}\n{}", fix(&k)),
                    (None, Some(k)) => format!("`{k}`: {message}\n{}", fix(&k)),
                    (Some(t), None) => format!("in `{t}`: {message}"),
                    (None, None) => message,
                },
            }
        })?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let v = Validator { path, dir };
        Scene::resolve(&v, config)
    }

    /// Resolves the parsed file section by section, in the order the errors
    /// are reported: the first invalid setting in this order is the one a
    /// user sees.
    fn resolve(v: &Validator, config: SceneConfig) -> Result<Scene, SceneError> {
        let c = &config;
        let (fps, background) = resolve_reference(v, &c.reference)?;
        let material = resolve_material(v, &c.material)?;
        let numbers = resolve_simulation(v, &c.simulation, fps, &material)?;
        let views = resolve_views(v, &c.views)?;
        let (gaussians_path, splats) = resolve_splats(v, &c.gaussians)?;
        let means = &splats.gaussians.means;
        let regions = resolve_regions(v, &c.regions, &splats.gaussians)?;
        let simulation = resolve_box(v, &c.simulation, numbers, means, &regions.simulated)?;
        let drivers = resolve_drivers(v, &c.drivers, &simulation, means, &regions.simulated)?;
        let fit = resolve_fit(v, &c.fit, frame_count(&views))?;
        let output_dir = v.join(&c.output.directory);
        Ok(Scene {
            path: v.path.to_path_buf(),
            gaussians_path,
            splats,
            views,
            fps,
            background,
            simulation,
            material,
            simulated: regions.simulated,
            anchored: regions.anchored,
            drivers,
            anchored_region: regions.anchored_region,
            fit,
            output_dir,
            config,
        })
    }

    /// The splats.
    pub fn gaussians(&self) -> &Gaussians {
        &self.splats.gaussians
    }

    /// Reference frames per view (`None` when no view has frames; the counts
    /// agree across views with frames).
    pub fn frame_count(&self) -> Option<usize> {
        frame_count(&self.views)
    }

    /// Gravity in normalised units (box lengths / s²).
    pub fn gravity_normalised(&self) -> [f64; 3] {
        self.simulation
            .sim_box
            .vector_to_normalised(self.simulation.gravity_world)
    }

    /// The simulator's settings (normalised units).
    pub fn mpm_config(&self) -> MpmConfig {
        MpmConfig {
            grid_res: self.simulation.grid_res,
            fps: self.fps,
            substeps_per_frame: self.simulation.substeps,
            gravity: self.gravity_normalised(),
            damping: self.simulation.damping,
            density: self.material.density,
            poisson: self.material.poisson_ratio,
            walls: self.simulation.walls,
            colliders: self
                .simulation
                .colliders
                .iter()
                .map(|c| to_normalised(c, &self.simulation.sim_box))
                .collect(),
        }
    }

    /// The explicit time-step check at the top of the E range.
    pub fn stability(&self) -> Stability {
        let youngs_max = 10f64.powf(self.material.log10_youngs_range[1]);
        let dx = 1.0 / self.simulation.grid_res as f64;
        let m = &self.material;
        Stability {
            dt: 1.0 / (self.fps * self.simulation.substeps as f64),
            dt_bound: explicit_dt_bound(youngs_max, m.poisson_ratio, m.density, dx),
            min_substeps: min_substeps_per_frame(
                self.fps,
                youngs_max,
                m.poisson_ratio,
                m.density,
                dx,
            ),
            youngs_max,
        }
    }

    /// Every splat centre in normalised box coordinates.
    pub fn normalised_means(&self) -> Vec<[f32; 3]> {
        self.gaussians()
            .means
            .iter()
            .map(|p| self.simulation.sim_box.to_normalised(*p))
            .collect()
    }

    /// Indices of the simulated splats, ascending.
    pub fn simulated_indices(&self) -> Vec<u32> {
        (0..self.simulated.len() as u32)
            .filter(|&i| self.simulated[i as usize])
            .collect()
    }

    /// Indices of the anchored splats, ascending.
    pub fn anchored_indices(&self) -> Vec<u32> {
        (0..self.anchored.len() as u32)
            .filter(|&i| self.anchored[i as usize])
            .collect()
    }
}

/// The TOML path of the table that holds byte `offset` of `text` (e.g.
/// `views[1].camera`), from the last `[table]` / `[[array]]` header before
/// it; `[[views]]` entries are numbered. `None` at the top level.
/// The key of the `key = value` line holding byte `offset` of `text`, when
/// that line is one (a parse error's span points at the value).
/// The most a scene file nests keys, tables and arrays before it is
/// refused without parsing (the deepest real field, `views.camera.look_at`
/// in an inline table, is a handful).
const MAX_NESTING: usize = 64;

/// The first line (1-based) where keys (dotted), tables and arrays nest
/// deeper than [`MAX_NESTING`], with the depth: refused before parsing, so
/// that the error names the line (the parser's recursion limit names none).
fn deepest_nesting(text: &str) -> Option<(usize, usize)> {
    let mut open = 0usize;
    for (n, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut dots = 0usize;
        let mut before_value = true;
        for c in line.chars() {
            let in_string = quote.is_some();
            match c {
                '"' | '\'' if quote == Some(c) => quote = None,
                '"' | '\'' if !in_string => quote = Some(c),
                '#' if !in_string => break,
                '=' if !in_string => before_value = false,
                '.' if !in_string && before_value => dots += 1,
                '{' | '[' if !in_string => open += 1,
                '}' | ']' if !in_string => open = open.saturating_sub(1),
                _ => {}
            }
            if open + dots > MAX_NESTING {
                return Some((n + 1, open + dots));
            }
        }
    }
    None
}

/// The table whose header (`[name]` or `[[name]]`) is the line at
/// `offset`, if that line is a header.
fn header_at(text: &str, offset: usize) -> Option<String> {
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim();
    let name = line
        .strip_prefix("[[")
        .and_then(|l| l.split("]]").next())
        .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))?
        .trim();
    // A header names a key path; an array row (`[0.0],`) does not.
    let key_path = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '"')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.\" ".contains(c));
    (key_path && !line.contains('=')).then(|| name.to_string())
}

fn key_at(text: &str, offset: usize) -> Option<String> {
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain.then(|| key.to_string())
}

fn table_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let mut current: Option<String> = None;
    // Entries seen so far of each array of tables (`[[views]]`,
    // `[[simulation.colliders]]`), numbered in the name.
    let mut entries: Vec<(String, usize)> = Vec::new();
    // A header names a key path; array rows in multi-line arrays (`[1, 0, 0],`) do not.
    let is_key_path = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '"')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.\" ".contains(c))
    };
    for line in before.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let name = name.trim();
            if !is_key_path(name) {
                continue;
            }
            match entries.iter_mut().find(|(array, _)| array == name) {
                Some((_, count)) => *count += 1,
                None => entries.push((name.to_string(), 1)),
            }
            current = Some(name.to_string());
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            if is_key_path(name.trim()) {
                current = Some(name.trim().to_string());
            }
        }
    }
    let name = current?;
    // The longest array the table is, or is inside of.
    let array = entries
        .iter()
        .filter(|(array, _)| {
            name.strip_prefix(array.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
        .max_by_key(|(array, _)| array.len());
    match array {
        Some((array, count)) => Some(format!("{array}[{}]{}", count - 1, &name[array.len()..])),
        None => Some(name),
    }
}
