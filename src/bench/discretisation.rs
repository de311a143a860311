//! `physfit bench discretisation`: where the fit's own loss puts each
//! region's `log10 E` under one change of physfit's discretisation at a
//! time (drivers per occupied cell, substeps, grid),
//! so that the bias the discretisation gives the fitted E is measured
//! rather than guessed (docs/benchmarks.md, "What moves E: the
//! discretisation").
//!
//! Why a 1-D scan and not a fit: a fit finds the minimum of its own loss;
//! with every other parameter held at the truth (the truth file's E per
//! region and v0), the minimum of the loss over one region's `log10 E` is
//! where a fit of that region would land, and it costs a few forward
//! evaluations instead of a fit's dozens of gradient ones. Per region,
//! `points` values evenly spaced over `±span` decades around the region's
//! truth (clipped to the scene's E range, whose top the substeps are
//! stable for) are scored with [`FitProblem::loss_of_drivers`] on the
//! frames and weights of the stiffness stage (`fit.stiffness`: the loss
//! the fit's E comes from, TV included; ν the truth file's when it gives
//! one, else the scene's), the others at the truth; the
//! optimum is the vertex of the parabola through the lowest point and its
//! two neighbours (the lowest point itself, flagged `at_edge`, when it is
//! an end of the scan).
//!
//! A change is applied to the loaded scene before its drivers are built,
//! as the scene file would give it ([`Change::apply`]): drivers per
//! occupied cell set `drivers.count`; substeps are a multiple of the
//! stability minimum (docs/design.md § MPM, Stability); a grid change
//! keeps the default's drivers per occupied cell and the substep multiple
//! (a finer grid has more occupied cells and a lower stable step), so that
//! only the grid spacing changes.

use std::time::Instant;

use serde::Serialize;

use crate::drive::{DriveError, DriverSet};
use crate::fit::{FitError, FitProblem, FitProblemOptions, RolloutValues, Selection, YoungsField};
use crate::gpu::GpuContext;
use crate::mpm_rules::voxel;
use crate::mpm_rules::AnchorRule;
use crate::scene::{DriverCount, Scene};
use crate::synth::{Truth, TruthError};

/// What can stop the discretisation benchmark.
#[derive(Debug, thiserror::Error)]
pub enum DiscretisationBenchError {
    /// The fit problem.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The drivers.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// The truth file.
    #[error(transparent)]
    Truth(#[from] TruthError),
    /// The scene cannot be scanned as asked.
    #[error("{scene}: {what}; fix: {fix}")]
    Unscannable {
        /// The scene file, as shown.
        scene: String,
        /// What is wrong.
        what: String,
        /// How to fix it.
        fix: String,
    },
}

/// One change from the scene's own discretisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// The scene as loaded.
    Default,
    /// This many drivers per occupied grid cell (`drivers.count`).
    DriversPerCell(u32),
    /// One driver per simulated splat (K-Means with as many clusters as
    /// points: every splat its own driver).
    DriverPerSplat,
    /// This multiple of the stability minimum of substeps per frame.
    Substeps(u32),
    /// The grid resolution times this factor (drivers per occupied cell
    /// and the substep multiple kept).
    Grid(f64),
    /// This anchoring rule (`simulation.anchoring`): `stencil` holds every
    /// node an anchored driver's stencil touches, a layer about a cell
    /// thick; `nearest` the one node nearest each anchored driver;
    /// `splats` the node at floor(x/dx) of every anchored splat, as
    /// PhysDreamer's simulator holds one node per anchored particle, with
    /// one particle per splat.
    Anchoring(AnchorRule),
}

impl Change {
    /// The changes of the recorded table: drivers 2, 4, 8, 16 per cell and
    /// one per splat; substeps ×1, ×2, ×4; grid ×1.5, ×2; each anchoring
    /// rule (the default row first).
    pub fn table() -> Vec<Change> {
        vec![
            Change::Default,
            Change::DriversPerCell(2),
            Change::DriversPerCell(4),
            Change::DriversPerCell(8),
            Change::DriversPerCell(16),
            Change::DriverPerSplat,
            Change::Substeps(1),
            Change::Substeps(2),
            Change::Substeps(4),
            Change::Grid(1.5),
            Change::Grid(2.0),
            Change::Anchoring(AnchorRule::Stencil),
            Change::Anchoring(AnchorRule::Nearest),
            Change::Anchoring(AnchorRule::Splats),
        ]
    }

    /// Parses a name of [`Change::name`]'s form (`default`,
    /// `drivers-per-cell=N`, `driver-per-splat`, `substeps=xN`,
    /// `grid=xF`, `anchoring=stencil|nearest|splats`).
    pub fn parse(s: &str) -> Option<Change> {
        let (key, value) = s.split_once('=').unwrap_or((s, ""));
        let times = |v: &str| v.strip_prefix('x').unwrap_or(v).to_string();
        match key {
            "default" => Some(Change::Default),
            "driver-per-splat" => Some(Change::DriverPerSplat),
            "drivers-per-cell" => value
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .map(Change::DriversPerCell),
            "substeps" => times(value)
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .map(Change::Substeps),
            "grid" => times(value)
                .parse()
                .ok()
                .filter(|&f: &f64| f.is_finite() && f > 0.0)
                .map(Change::Grid),
            "anchoring" => AnchorRule::from_word(value).map(Change::Anchoring),
            _ => None,
        }
    }

    /// The change's name (what [`Change::parse`] reads).
    pub fn name(&self) -> String {
        match self {
            Change::Default => "default".into(),
            Change::DriversPerCell(n) => format!("drivers-per-cell={n}"),
            Change::DriverPerSplat => "driver-per-splat".into(),
            Change::Substeps(n) => format!("substeps=x{n}"),
            Change::Grid(f) => format!("grid=x{f}"),
            Change::Anchoring(rule) => format!("anchoring={}", rule.word()),
        }
    }

    /// `scene` with this change (module doc).
    pub fn apply(&self, scene: &Scene) -> Scene {
        let mut s = scene.clone();
        let per_cell = scene.drivers.per_occupied_cell();
        let substep_multiple =
            scene.simulation.substeps as f64 / scene.stability().min_substeps.max(1) as f64;
        let simulated = simulated_points(scene);
        match *self {
            Change::Default => {}
            Change::DriversPerCell(n) => {
                let count = n as usize * s.drivers.occupied_cells;
                set_count(&mut s, count, &simulated)
            }
            Change::DriverPerSplat => set_count(&mut s, usize::MAX, &simulated),
            Change::Substeps(n) => s.simulation.substeps = n * s.stability().min_substeps,
            Change::Grid(f) => {
                let res = ((scene.simulation.grid_res as f64 * f).round() as u32).max(2);
                s.simulation.grid_res = res;
                let points = normalised(&s, &simulated);
                s.drivers.occupied_cells = voxel::count_occupied(&points, res)
                    + if s.drivers.fill {
                        voxel::fill(&points, res).interior_count
                    } else {
                        0
                    };
                let count = (per_cell * s.drivers.occupied_cells as f64).round() as usize;
                set_count(&mut s, count, &simulated);
                s.simulation.substeps =
                    ((substep_multiple * s.stability().min_substeps as f64).ceil() as u32).max(1);
            }
            Change::Anchoring(rule) => s.simulation.anchoring = rule,
        }
        s
    }
}

/// Indices of the simulated splats.
fn simulated_points(scene: &Scene) -> Vec<u32> {
    scene.simulated_indices()
}

/// The simulated splat centres of `scene`, normalised.
fn normalised(scene: &Scene, simulated: &[u32]) -> Vec<[f32; 3]> {
    let means = scene.normalised_means();
    simulated.iter().map(|&i| means[i as usize]).collect()
}

/// Sets `drivers.count` to `count`, capped at the points K-Means runs over
/// (the simulated splats, plus fill points).
fn set_count(scene: &mut Scene, count: usize, simulated: &[u32]) {
    let points = simulated.len()
        + if scene.drivers.fill {
            voxel::fill(&normalised(scene, simulated), scene.simulation.grid_res)
                .points
                .len()
        } else {
            0
        };
    scene.drivers.count = count.min(points).max(scene.drivers.k);
    scene.drivers.rule = DriverCount::Given(scene.drivers.count);
}

/// The scan of one region.
#[derive(Clone, Debug, Serialize)]
pub struct RegionScan {
    /// The region's name (the scene's `fit.stiffness.regions`, then the
    /// uncovered rest).
    pub region: String,
    /// Free drivers in the region.
    pub drivers: usize,
    /// The truth's `log10 E` of the region (median over its free drivers).
    pub truth: f64,
    /// The scanned `log10 E` values.
    pub log10_youngs: Vec<f64>,
    /// The fit's loss (stiffness-stage weights, TV included) at each.
    pub loss: Vec<f64>,
    /// The image part of the loss at each (no TV).
    pub image: Vec<f64>,
    /// The optimum of `loss` in `log10 E` (parabola vertex).
    pub optimum: f64,
    /// `optimum − truth`.
    pub bias: f64,
    /// The optimum of `image` alone.
    pub image_optimum: f64,
    /// The lowest loss was an end of the scan: `optimum` is that end, and
    /// the true optimum lies beyond it.
    pub at_edge: bool,
}

/// One row: a change and its scans.
#[derive(Clone, Debug, Serialize)]
pub struct ChangeRow {
    /// [`Change::name`].
    pub change: String,
    /// Drivers (MPM particles).
    pub drivers: usize,
    /// Drivers per occupied grid cell.
    pub drivers_per_cell: f64,
    /// Grid cells per axis.
    pub grid_res: u32,
    /// Substeps per frame.
    pub substeps: u32,
    /// `simulation.anchoring`: `stencil`, `nearest` or `splats`.
    pub anchoring: &'static str,
    /// The stability minimum of substeps per frame at this grid.
    pub min_substeps: u32,
    /// Per region.
    pub regions: Vec<RegionScan>,
    /// Per region: `optimum` minus the default row's (`None` in the
    /// default row or when no default row was run).
    pub shift_from_default: Option<Vec<f64>>,
    /// Seconds per loss evaluation (median; rollout, renders, loss).
    pub evaluation_s: f64,
    /// Seconds to build the drivers and the problem.
    pub setup_s: f64,
}

/// The benchmark's result.
#[derive(Clone, Debug, Serialize)]
pub struct DiscretisationBench {
    /// The scene file.
    pub scene: String,
    /// The truth file.
    pub truth: String,
    /// Frames scored (the stiffness stage's).
    pub frames: Vec<usize>,
    /// Views scored.
    pub views: usize,
    /// The scan's half-width in decades.
    pub span: f64,
    /// Values per region.
    pub points: usize,
    /// One row per change.
    pub rows: Vec<ChangeRow>,
}

/// The vertex of the parabola through the lowest of `ys` (at `xs`,
/// increasing) and its neighbours, and whether the lowest is an end.
pub fn parabola_optimum(xs: &[f64], ys: &[f64]) -> (f64, bool) {
    let (i, _) = ys
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .expect("a non-empty scan");
    if i == 0 || i + 1 == xs.len() {
        return (xs[i], true);
    }
    let (x0, x1, x2) = (xs[i - 1], xs[i], xs[i + 1]);
    let (y0, y1, y2) = (ys[i - 1], ys[i], ys[i + 1]);
    // Vertex of the interpolating parabola (Newton's divided differences).
    let d01 = (y1 - y0) / (x1 - x0);
    let d12 = (y2 - y1) / (x2 - x1);
    let curvature = (d12 - d01) / (x2 - x0);
    if curvature <= 0.0 || !curvature.is_finite() {
        return (x1, false);
    }
    let vertex = 0.5 * (x0 + x1) - d01 / (2.0 * curvature);
    (vertex.clamp(x0, x2), false)
}

/// Median of a non-empty set.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Runs `changes` on `scene` against `truth` (module doc): `points` values
/// per region over `±span` decades.
pub fn run(
    ctx: &GpuContext,
    scene: &Scene,
    truth: &Truth,
    changes: &[Change],
    points: usize,
    span: f64,
    mut progress: impl FnMut(&str),
) -> Result<DiscretisationBench, DiscretisationBenchError> {
    let shown = crate::io::shown::shown(&scene.path).to_string();
    let Some(available) = scene.frame_count() else {
        return Err(DiscretisationBenchError::Unscannable {
            scene: shown,
            what: "no view has reference frames".into(),
            fix: "give `frames` to at least one view".into(),
        });
    };
    let frames: Vec<usize> = scene.fit.stiffness.fitted_frames(available).collect();
    if frames.is_empty() {
        return Err(DiscretisationBenchError::Unscannable {
            scene: shown,
            what: "the stiffness stage fits no frame".into(),
            fix: "give at least two reference frames per view".into(),
        });
    }
    let views: Vec<usize> = (0..scene.views.len())
        .filter(|&v| scene.views[v].frames.is_some())
        .collect();
    let selection = Selection {
        frames: frames.clone(),
        views: views.clone(),
    };
    let points = points.max(3);
    let mut rows: Vec<ChangeRow> = Vec::new();
    for change in changes {
        progress(&change.name());
        let s = change.apply(scene);
        let t = Instant::now();
        let drivers = DriverSet::from_scene(&s)?;
        let options = FitProblemOptions::from_scene(&s, &drivers, &s.fit.stiffness)?;
        let (region, names) = match &options.youngs {
            YoungsField::Regions { region, .. } => (region.clone(), options.youngs_regions.clone()),
            _ => (vec![0; drivers.len()], vec!["object".to_string()]),
        };
        let mut problem = FitProblem::from_drivers(ctx, &s, drivers.clone(), &options)?;
        ctx.wait().map_err(FitError::from)?;
        let setup_s = t.elapsed().as_secs_f64();
        let values = truth.per_driver(&drivers);
        // The truth's own ν when it gives one (a drop made by another
        // engine), else the scene's.
        let truth_poisson = values.poisson_ratio.map(|nu| vec![nu; drivers.len()]);
        let [low, high] = s.material.log10_youngs_range;
        let mut times = Vec::new();
        let mut scans = Vec::new();
        for (r, name) in names.iter().enumerate() {
            let members: Vec<usize> = (0..drivers.len())
                .filter(|&d| region[d] as usize == r && !drivers.anchored[d])
                .collect();
            if members.is_empty() {
                continue;
            }
            let centre = median(members.iter().map(|&d| values.log10_youngs[d]).collect());
            let xs: Vec<f64> = (0..points)
                .map(|i| centre - span + 2.0 * span * i as f64 / (points - 1) as f64)
                .filter(|&x| x >= low - 1e-9 && x <= high + 1e-9)
                .collect();
            let (mut loss, mut image) = (Vec::new(), Vec::new());
            for &x in &xs {
                let mut log10 = values.log10_youngs.clone();
                for &d in &members {
                    log10[d] = x;
                }
                let t = Instant::now();
                let rollout = RolloutValues {
                    log10_youngs: &log10,
                    velocity: &values.velocity,
                    velocity_gradient: Some(&values.velocity_gradient),
                    poisson: truth_poisson.as_deref(),
                };
                let report = problem.loss_of_drivers_with_poisson(ctx, &rollout, &selection)?;
                times.push(t.elapsed().as_secs_f64());
                loss.push(report.loss);
                image.push(report.image);
            }
            if xs.len() < 3 {
                return Err(DiscretisationBenchError::Unscannable {
                    scene: shown,
                    what: format!(
                        "region '{name}' (truth log10 E {centre:.3}) leaves fewer than 3 scan \
                         values inside material.log10_youngs_range [{low}, {high}]"
                    ),
                    fix: "widen the range or the scan (--span, --points)".into(),
                });
            }
            let (optimum, at_edge) = parabola_optimum(&xs, &loss);
            let (image_optimum, _) = parabola_optimum(&xs, &image);
            scans.push(RegionScan {
                region: name.clone(),
                drivers: members.len(),
                truth: centre,
                log10_youngs: xs,
                loss,
                image,
                optimum,
                bias: optimum - centre,
                image_optimum,
                at_edge,
            });
        }
        let shift_from_default = rows
            .first()
            .filter(|d| d.change == Change::Default.name() && *change != Change::Default)
            .map(|d| {
                scans
                    .iter()
                    .map(|scan| {
                        d.regions
                            .iter()
                            .find(|r| r.region == scan.region)
                            .map_or(f64::NAN, |r| scan.optimum - r.optimum)
                    })
                    .collect()
            });
        rows.push(ChangeRow {
            change: change.name(),
            drivers: drivers.len(),
            drivers_per_cell: drivers.len() as f64 / s.drivers.occupied_cells.max(1) as f64,
            grid_res: s.simulation.grid_res,
            substeps: s.simulation.substeps,
            anchoring: s.simulation.anchoring.word(),
            min_substeps: s.stability().min_substeps,
            regions: scans,
            shift_from_default,
            evaluation_s: median(times),
            setup_s,
        });
    }
    Ok(DiscretisationBench {
        scene: shown,
        truth: crate::io::shown::shown(&truth.path).to_string(),
        frames,
        views: views.len(),
        span,
        points,
        rows,
    })
}
