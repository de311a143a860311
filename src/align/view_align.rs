//! Aligning one view: the start checked (is the object in the image?), then
//! coarse to fine through the pyramid ([`super::pyramid`]), each level a
//! bounded L-BFGS run ([`crate::solve::lbfgs`]) in the chart around where the
//! coarser level ended ([`super::chart`]), then the result measured at full
//! resolution against the start, and the curvature there
//! ([`super::conditioning`]).
//!
//! L-BFGS rather than Adam: the problem has at most 13 unknowns and a
//! smooth loss at each level, so a quasi-Newton method with a line search
//! converges in tens of evaluations with no learning rate to tune (Adam's
//! reach per step is capped by its rate; measured in docs/benchmarks.md).

use glam::{DVec3, Vec3};
use serde::{Deserialize, Serialize};

use crate::loss::{ReferenceFrame, ReferenceMask};
use crate::scene::color_correction::ColorCorrection;
use crate::io::Frame;
use crate::scene::masks::Mask;
use crate::scene::Camera;
use crate::solve::lbfgs::{minimise_observed, LbfgsSettings, LbfgsStart};

use super::chart::{rotation_angle_degrees, AlignWhat, Chart, Pivot, ViewState};
use super::color_guess::{color_guess, color_regression};
use super::conditioning::{conditioning, Conditioning};
use super::error::AlignError;
use super::problem::ViewProblem;
use super::pyramid::{downsample_frame, downsample_mask, levels, Level};
use super::silhouette;

/// Below this share of splat centres inside the image the start is refused.
pub const MIN_VISIBLE_SHARE: f64 = 0.05;

/// A PSNR drop of more than this (dB) makes an alignment worse: the start
/// is kept and the command fails. A smaller drop keeps the start silently.
pub const WORSE_DB: f64 = 0.01;

/// Above this PSNR (dB) a render already matches its 8-bit frame to within
/// its quantisation (an RMS error below 0.8 of a level; uniform
/// quantisation alone gives ≈ 59 dB), so a start that scores higher than
/// where alignment ended is kept silently: it was already aligned.
pub const QUANTISATION_DB: f64 = 50.0;

/// How an alignment runs.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignSettings {
    /// What is fitted.
    pub what: AlignWhat,
    /// Pyramid levels at most (full resolution included).
    pub levels: u32,
    /// Loss evaluations at full resolution at most, line-search trials
    /// included.
    pub evaluations: u32,
    /// Loss evaluations per coarser level at most: those levels only need
    /// to bring the start into the finer level's basin.
    pub coarse_evaluations: u32,
    /// Full resolution has converged when two accepted steps in a row each
    /// lower its loss by less than this fraction, or its curvature model
    /// expects less of the next ([`crate::solve::lbfgs`]).
    pub tolerance: f64,
    /// The same for the coarser levels.
    pub coarse_tolerance: f64,
    /// Measure the curvature at the end (2 evaluations per parameter).
    pub conditioning: bool,
    /// Start from the pose that matches the silhouettes' moments
    /// ([`super::silhouette`]) when it lowers the loss (pose only).
    pub silhouette_start: bool,
}

impl Default for AlignSettings {
    /// Pose and colour, 4 levels, 40 evaluations (tolerance 1e-4) per coarse
    /// level and 100 (1e-6) at full resolution, conditioning on, the
    /// silhouette's guess first.
    fn default() -> Self {
        Self {
            what: AlignWhat {
                pose: true,
                focal: false,
                color: true,
            },
            levels: 4,
            evaluations: 100,
            coarse_evaluations: 40,
            tolerance: 1e-6,
            coarse_tolerance: 1e-4,
            conditioning: true,
            silhouette_start: true,
        }
    }
}

/// One level's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelRun {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Loss at the level's start.
    pub loss_start: f64,
    /// Loss at its end.
    pub loss_end: f64,
    /// Evaluations used.
    pub evaluations: u32,
    /// Whether the level converged: its steps, or the gain its curvature
    /// model expects of the next, fell below the tolerance.
    pub converged: bool,
}

/// The silhouette's first guess of the pose ([`super::silhouette`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SilhouetteGuess {
    /// Matching steps taken.
    pub steps: u32,
    /// Its rotation from the start, degrees.
    pub rotation_degrees: f64,
    /// Its camera centre's shift from the start's, percent of the object's distance.
    pub centre_shift_percent: f64,
    /// Its full-resolution loss (the start's is the view's `loss_before`).
    pub loss: f64,
    /// Whether the levels started from it (it lowered the loss).
    pub kept: bool,
}

/// What alignment changed, in readable units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Changes {
    /// Angle of the rotation from the start's orientation, degrees.
    pub rotation_degrees: f64,
    /// How far the camera centre moved, world units.
    pub centre_shift: f64,
    /// The same, percent of the object's distance.
    pub centre_shift_percent: f64,
    /// Focal length change, percent.
    pub focal_percent: f64,
    /// Gain per channel after alignment.
    pub gain: [f32; 3],
    /// Offset per channel after alignment.
    pub offset: [f32; 3],
    /// RMS displacement of the splat centres in the image, px.
    pub reprojection_rms_px: f64,
}

/// The alignment of one view.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewAlignment {
    /// The start.
    pub before: ViewState,
    /// The result (the start again when alignment made things worse).
    pub after: ViewState,
    /// Full-resolution loss and PSNR at the start.
    pub loss_before: f64,
    /// PSNR at the start, dB.
    pub psnr_before: f64,
    /// Loss of the aligned state.
    pub loss_after: f64,
    /// PSNR of the aligned state, dB (before the start was restored).
    pub psnr_after: f64,
    /// The silhouette's guess, when one was made.
    pub silhouette: Option<SilhouetteGuess>,
    /// The levels, coarsest first.
    pub levels: Vec<LevelRun>,
    /// What changed.
    pub changes: Changes,
    /// The curvature at the end, when measured.
    pub conditioning: Option<Conditioning>,
    /// True when the aligned state scored worse and the start was kept.
    pub kept_start: bool,
    /// True when it scored worse by more than [`WORSE_DB`].
    pub worse: bool,
}

/// Where the splat centres land in `camera`'s image.
struct Visibility {
    inside: usize,
    in_front: Vec<[f64; 2]>,
}

fn project(camera: &Camera, p: Vec3) -> Option<[f64; 2]> {
    let c = camera.rotation * p + camera.translation;
    if c.z <= camera.near {
        return None;
    }
    Some([
        f64::from(camera.fx * c.x / c.z + camera.cx),
        f64::from(camera.fy * c.y / c.z + camera.cy),
    ])
}

fn visibility(camera: &Camera, centres: &[Vec3]) -> Visibility {
    let in_front: Vec<[f64; 2]> = centres.iter().filter_map(|&p| project(camera, p)).collect();
    let (w, h) = (f64::from(camera.width), f64::from(camera.height));
    let inside = in_front
        .iter()
        .filter(|q| q[0] >= 0.0 && q[0] < w && q[1] >= 0.0 && q[1] < h)
        .count();
    Visibility { inside, in_front }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// RMS over the splat centres visible in `a` of their displacement in the
/// image between cameras `a` and `b` (same size), px; 0 when none is.
pub fn reprojection_rms(centres: &[Vec3], a: &Camera, b: &Camera) -> f64 {
    let (w, h) = (f64::from(a.width), f64::from(a.height));
    let mut sum = 0.0;
    let mut n = 0usize;
    for &p in centres {
        let (Some(qa), Some(qb)) = (project(a, p), project(b, p)) else {
            continue;
        };
        if qa[0] < 0.0 || qa[0] >= w || qa[1] < 0.0 || qa[1] >= h {
            continue;
        }
        sum += (qa[0] - qb[0]).powi(2) + (qa[1] - qb[1]).powi(2);
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        (sum / n as f64).sqrt()
    }
}

/// Refuses a start from which the object is not in view (module doc).
pub fn check_start(view: &str, camera: &Camera, centres: &[Vec3]) -> Result<(), AlignError> {
    let vis = visibility(camera, centres);
    if vis.in_front.is_empty() {
        return Err(AlignError::Behind {
            view: view.to_string(),
        });
    }
    if (vis.inside as f64) < MIN_VISIBLE_SHARE * centres.len() as f64 {
        let mx = median(vis.in_front.iter().map(|q| q[0]).collect());
        let my = median(vis.in_front.iter().map(|q| q[1]).collect());
        let (w, h) = (f64::from(camera.width), f64::from(camera.height));
        let dx = (-mx).max(mx - w).max(0.0);
        let dy = (-my).max(my - h).max(0.0);
        return Err(AlignError::OffImage {
            view: view.to_string(),
            inside: vis.inside,
            total: centres.len(),
            width: camera.width,
            height: camera.height,
            centre_x: mx,
            centre_y: my,
            outside_by: dx.hypot(dy),
        });
    }
    Ok(())
}

/// The object's centroid and RMS radius about it, world units: the pivot
/// and lever of the chart's turns.
pub fn object_extent(centres: &[Vec3]) -> (DVec3, f64) {
    let n = centres.len().max(1) as f64;
    let centroid = centres.iter().fold(DVec3::ZERO, |s, p| s + p.as_dvec3()) / n;
    let radius = (centres
        .iter()
        .map(|p| (p.as_dvec3() - centroid).length_squared())
        .sum::<f64>()
        / n)
        .sqrt();
    (centroid, radius)
}

/// Progress of one view's alignment, for a progress bar.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignProgress {
    /// 0-based level, coarsest first.
    pub level: usize,
    /// Levels in all.
    pub levels: usize,
    /// Evaluations so far in this level.
    pub evaluations: u32,
    /// The level's best loss so far.
    pub loss: f64,
}

/// The reference frame 0 of a view and its mask, at full resolution.
pub struct Reference<'a> {
    /// Frame 0.
    pub frame: &'a Frame,
    /// Its mask, when the view has masks.
    pub mask: Option<&'a Mask>,
}

fn upload_level(
    problem_ctx: &crate::gpu::GpuContext,
    reference: &Reference<'_>,
    level: &Level,
) -> Result<ReferenceFrame, AlignError> {
    let frame = downsample_frame(reference.frame, level);
    let mut uploaded = ReferenceFrame::upload(problem_ctx, "align reference frame", &frame)?;
    if let Some(mask) = reference.mask {
        let small = downsample_mask(mask, level);
        uploaded = uploaded.with_mask(ReferenceMask::upload(
            problem_ctx,
            "align reference mask",
            &small,
        )?)?;
    }
    Ok(uploaded)
}

/// Aligns one view from `start` to `reference` (module doc). `centres`
/// are the splat centres (for the distance and the reprojection figures).
pub fn align_view(
    ctx: &crate::gpu::GpuContext,
    problem: &mut ViewProblem<'_>,
    reference: &Reference<'_>,
    start: &ViewState,
    centres: &[Vec3],
    settings: &AlignSettings,
    mut progress: impl FnMut(&AlignProgress),
) -> Result<ViewAlignment, AlignError> {
    let (width, height) = (start.camera.width, start.camera.height);
    let full_reference = upload_level(ctx, reference, &levels(width, height, 1)[0])?;
    let first = problem.evaluate(start, &full_reference, false)?;
    let (centroid, radius) = object_extent(centres);
    let mut current = start.clone();
    let mut guess = None;
    if settings.what.pose && settings.silhouette_start {
        if let Some((state, made)) = silhouette_guess(problem, reference, start, centroid)? {
            let loss = problem.evaluate(&state, &full_reference, false)?.loss;
            let kept = loss.is_finite() && loss < first.loss;
            let distance = (centroid - start.camera.position().as_dvec3()).length();
            let turned = rotation_angle_degrees(&start.camera, &state.camera);
            log::debug!(
                "align: silhouette guess after {} steps: {:.2}°, loss {:.5} (start {:.5}), {}",
                made,
                turned,
                loss,
                first.loss,
                if kept { "kept" } else { "dropped" }
            );
            guess = Some(SilhouetteGuess {
                steps: made,
                rotation_degrees: turned,
                centre_shift_percent: 100.0
                    * f64::from((state.camera.position() - start.camera.position()).length())
                    / distance,
                loss,
                kept,
            });
            if kept {
                current = state;
            }
        }
    }
    drop(full_reference);
    let pyramid = levels(width, height, settings.levels);
    let mut runs = Vec::new();
    for (k, level) in pyramid.iter().enumerate() {
        let level_reference = upload_level(ctx, reference, level)?;
        // The colour is fitted from the second finest level on: at the
        // coarse levels, while the object is still misplaced, a brighter
        // or flatter image is a cheaper way to lower the loss than moving
        // the camera, and the colour would run off to explain the pose.
        let level_what = AlignWhat {
            color: settings.what.color && k + 2 >= pyramid.len(),
            ..settings.what
        };
        // Coarse levels turn the camera about its own centre (what a
        // blurred, small image sees of a pose error: the whole picture
        // shifted, rolled, scaled); the two finest turn it about the
        // object, where parallax tells turn from shift.
        let pivot = if k + 2 >= pyramid.len() {
            Pivot::Object
        } else {
            Pivot::Camera
        };
        let mut color_pivot = [0.0; 3];
        if level_what.color {
            let (color, mean) =
                better_color(problem, reference, level, &level_reference, &current)?;
            current.color = color;
            color_pivot = mean;
        }
        let chart = Chart::about(
            ViewState {
                camera: level.camera(&current.camera),
                color: current.color,
            },
            level_what,
            centroid,
            radius,
            pivot,
        )
        .with_color_pivot(color_pivot);
        let finest = k + 1 == pyramid.len();
        let lbfgs = LbfgsSettings {
            max_evaluations: if finest {
                settings.evaluations
            } else {
                settings.coarse_evaluations
            },
            first_step: 1.0,
            memory: 8,
            relative_tolerance: if finest {
                settings.tolerance
            } else {
                settings.coarse_tolerance
            },
            bounds: chart.bounds(),
            ..LbfgsSettings::default()
        };
        let mut loss_start = f64::NAN;
        let mut used = 0u32;
        let origin = chart.origin();
        let result = minimise_observed(
            LbfgsStart::At(&origin),
            &lbfgs,
            |x| -> Result<_, AlignError> {
                let state = chart.state(x);
                if state.color.gain.iter().any(|&a| a.is_nan() || a <= 0.0) {
                    return Ok(None);
                }
                let e = problem.evaluate(&state, &level_reference, true)?;
                used += 1;
                if loss_start.is_nan() {
                    loss_start = e.loss;
                }
                let g = e.gradient.expect("asked for");
                if !e.loss.is_finite() || !g.camera.is_finite() {
                    return Ok(None);
                }
                let grad = chart.gradient(x, &g.camera, g.gain, g.offset);
                Ok(Some((e.loss, grad)))
            },
            |run| {
                progress(&AlignProgress {
                    level: k,
                    levels: pyramid.len(),
                    evaluations: run.evaluations,
                    loss: run.loss,
                });
                true
            },
        )?;
        let Some(result) = result else {
            return Err(AlignError::NonFinite {
                view: String::new(),
            });
        };
        let reached = chart.state(&result.x);
        let mut camera = level.full_camera(&reached.camera, width, height);
        // What is not fitted stays exactly as it was (no f32 round trip).
        camera.cx = start.camera.cx;
        camera.cy = start.camera.cy;
        if !settings.what.focal {
            camera.fx = start.camera.fx;
            camera.fy = start.camera.fy;
        }
        current = ViewState {
            camera,
            color: reached.color,
        };
        log::debug!(
            "align: level {}×{} loss {:.5} → {:.5} in {} evaluations, centre {:?}, rotation rows {:?}",
            level.width,
            level.height,
            loss_start,
            result.loss,
            result.evaluations,
            current.camera.position(),
            [0, 1, 2].map(|i| current.camera.rotation.row(i))
        );
        runs.push(LevelRun {
            width: level.width,
            height: level.height,
            loss_start,
            loss_end: result.loss,
            evaluations: result.evaluations.max(used),
            converged: result.converged,
        });
    }
    let full_reference = upload_level(ctx, reference, pyramid.last().expect("one level"))?;
    let mut last = problem.evaluate(&current, &full_reference, false)?;
    if settings.what.color {
        // The pose aligned, the colour's exact least-squares line pixel by
        // pixel ([`color_regression`]), kept when it lowers the loss.
        let plain = ViewState {
            camera: current.camera.clone(),
            color: ColorCorrection::IDENTITY,
        };
        let render = problem.picture(&plain)?;
        let polished = ViewState {
            camera: current.camera.clone(),
            color: color_regression(&render, reference.frame, reference.mask),
        };
        let e = problem.evaluate(&polished, &full_reference, false)?;
        log::debug!(
            "align: colour regression gain {:?} offset {:?}: loss {:.6} (PSNR {:.2}) against {:.6} ({:.2})",
            polished.color.gain,
            polished.color.offset,
            e.loss,
            e.psnr,
            last.loss,
            last.psnr
        );
        if e.loss < last.loss {
            current = polished;
            last = e;
        }
    }
    let conditioning = if settings.conditioning && settings.what.dimension() > 0 {
        Some(curvature(
            problem,
            &full_reference,
            &current,
            settings.what,
            (centroid, radius),
        )?)
    } else {
        None
    };
    // Judged on the loss and on PSNR: either getting worse keeps the start.
    let psnr_dropped = last.psnr.is_nan() || last.psnr < first.psnr - WORSE_DB;
    let kept_start = last.loss.is_nan() || last.loss > first.loss || psnr_dropped;
    let worse = kept_start && psnr_dropped && (last.psnr.is_nan() || last.psnr < QUANTISATION_DB);
    let after = if kept_start {
        start.clone()
    } else {
        current.clone()
    };
    let distance = (centroid - start.camera.position().as_dvec3()).length();
    let changes = Changes {
        rotation_degrees: rotation_angle_degrees(&start.camera, &after.camera),
        centre_shift: f64::from((after.camera.position() - start.camera.position()).length()),
        centre_shift_percent: 100.0
            * f64::from((after.camera.position() - start.camera.position()).length())
            / distance,
        focal_percent: 100.0 * (f64::from(after.camera.fx) / f64::from(start.camera.fx) - 1.0),
        gain: after.color.gain,
        offset: after.color.offset,
        reprojection_rms_px: reprojection_rms(centres, &start.camera, &after.camera),
    };
    Ok(ViewAlignment {
        before: start.clone(),
        after,
        loss_before: first.loss,
        psnr_before: first.psnr,
        loss_after: last.loss,
        psnr_after: last.psnr,
        silhouette: guess,
        levels: runs,
        changes,
        conditioning,
        kept_start,
        worse,
    })
}

/// The colour correction to start a colour-fitting level from: `current`'s,
/// or the closed-form guess ([`super::color_guess`]) from the level's
/// render when that scores lower at this level; with the mean of the
/// render's colours over the counted pixels, the chart's colour pivot
/// ([`Chart::with_color_pivot`]).
fn better_color(
    problem: &mut ViewProblem<'_>,
    reference: &Reference<'_>,
    level: &Level,
    level_reference: &ReferenceFrame,
    current: &ViewState,
) -> Result<(ColorCorrection, [f64; 3]), AlignError> {
    let camera = level.camera(&current.camera);
    let plain = ViewState {
        camera: camera.clone(),
        color: ColorCorrection::IDENTITY,
    };
    let render = problem.picture(&plain)?;
    let small = downsample_frame(reference.frame, level);
    let mask = reference.mask.map(|m| downsample_mask(m, level));
    let guess = color_guess(&render, &small, mask.as_ref());
    let with = |color| ViewState {
        camera: camera.clone(),
        color,
    };
    let now = problem.evaluate(&with(current.color), level_reference, false)?;
    let guessed = problem.evaluate(&with(guess), level_reference, false)?;
    log::debug!(
        "align: colour guess gain {:?} offset {:?}: loss {:.5} against {:.5}",
        guess.gain,
        guess.offset,
        guessed.loss,
        now.loss
    );
    let counted: Vec<&[f32; 4]> = render
        .pixels
        .iter()
        .enumerate()
        .filter(|(i, _)| mask.as_ref().is_none_or(|m| m.counts[*i]))
        .map(|(_, p)| p)
        .collect();
    let n = counted.len().max(1) as f64;
    let mean = std::array::from_fn(|c| counted.iter().map(|p| f64::from(p[c])).sum::<f64>() / n);
    let color = if guessed.loss < now.loss {
        guess
    } else {
        current.color
    };
    Ok((color, mean))
}

/// Matching steps at most, and the step below which matching stops: a
/// tenth of a pixel's turn and roll at the focal length, 0.1% of distance.
const SILHOUETTE_STEPS: u32 = 5;

/// The silhouette's guess of the pose from `start` (module doc of
/// [`super::silhouette`]), at full resolution, with the number of steps
/// taken; `None` when either image has no silhouette to match.
fn silhouette_guess(
    problem: &mut ViewProblem<'_>,
    reference: &Reference<'_>,
    start: &ViewState,
    object: DVec3,
) -> Result<Option<(ViewState, u32)>, AlignError> {
    let Some(recorded) = silhouette::recorded(reference.frame, reference.mask) else {
        return Ok(None);
    };
    let masked = reference.mask.is_some();
    let background = start.color.apply(problem.background());
    let focal = 0.5 * (f64::from(start.camera.fx) + f64::from(start.camera.fy));
    let mut state = start.clone();
    let mut steps = 0;
    for _ in 0..SILHOUETTE_STEPS {
        let render = problem.picture(&state)?;
        let Some(rendered) = silhouette::rendered(&render, background, masked) else {
            return Ok(None);
        };
        let (camera, step) =
            silhouette::matched_camera(&state.camera, &rendered, &recorded, object, !masked);
        state.camera = camera;
        steps += 1;
        if (step.turn.abs() + step.roll.abs()) * focal < 0.1 && (step.scale - 1.0).abs() < 1e-3 {
            break;
        }
    }
    Ok(Some((state, steps)))
}

/// The curvature at `state` by central differences of the chart gradient
/// (half a pixel, or half a percent, per coordinate).
fn curvature(
    problem: &mut ViewProblem<'_>,
    reference: &ReferenceFrame,
    state: &ViewState,
    what: AlignWhat,
    (centroid, radius): (DVec3, f64),
) -> Result<Conditioning, AlignError> {
    let chart = Chart::new(state.clone(), what, centroid, radius);
    let n = what.dimension();
    let h = 0.5;
    let mut columns = Vec::with_capacity(n);
    for j in 0..n {
        let mut pair = Vec::new();
        for s in [1.0, -1.0] {
            let mut x = chart.origin();
            x[j] = s * h;
            let e = problem.evaluate(&chart.state(&x), reference, true)?;
            let g = e.gradient.expect("asked for");
            pair.push(chart.gradient(&x, &g.camera, g.gain, g.offset));
        }
        columns.push(
            (0..n)
                .map(|i| (pair[0][i] - pair[1][i]) / (2.0 * h))
                .collect::<Vec<f64>>(),
        );
    }
    let hessian: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| columns[j][i]).collect())
        .collect();
    Ok(conditioning(&hessian, &chart.names()))
}
