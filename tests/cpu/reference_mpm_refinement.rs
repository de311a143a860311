//! How the f64 MPM twin's motion depends on its discretisation
//! (docs/benchmarks.md "The simulator against its own time step, at a
//! fixed E"): APIC's particle–grid transfers lose, at every substep, the
//! part of the velocity field a particle's affine C cannot carry, whatever
//! the substep's length; that loss shrinks fast with the grid spacing. So
//! the motion converges when the grid and the time step are refined
//! together (dt ∝ dx, as the explicit stability bound asks), and not when
//! only the substeps are raised on a fixed grid.

// Index loops over particles and axes read like the equations they code.
#![allow(clippy::needless_range_loop)]

use physfit::mpm_rules::config::{MpmConfig, Transfer, WallMode};
use physfit::reference::mpm::mat3::{self, Vec3};
use physfit::reference::mpm::{frame_states, rollout, MpmSetup64, MpmState64};

const FPS: f64 = 30.0;
const YOUNGS: f64 = 1.0e4;

/// A bar of `cells` grid cells of the grid-16 lattice (scaled with the
/// grid, so every grid gets the same body), 8 particles per cell on a
/// regular lattice, centred in the box (the walls 4+ cells away), and its
/// particles' volume. With `anchored_layer`, the particles of the first
/// grid-16 cell layer along x are anchored.
struct Bar {
    setup: MpmSetup64,
    initial: MpmState64,
}

impl Bar {
    fn new(grid_res: u32, substeps: u32, cells: [usize; 3], anchored_layer: bool) -> Self {
        let scale = grid_res as usize / 16;
        let dx = 1.0 / grid_res as f64;
        let h = dx / 2.0;
        let n: [usize; 3] = std::array::from_fn(|a| 2 * cells[a] * scale);
        let start: [f64; 3] =
            std::array::from_fn(|a| ((grid_res / 2) as usize - n[a] / 4) as f64 * dx);
        let mut x = Vec::new();
        let mut anchored = Vec::new();
        for i in 0..n[0] {
            for j in 0..n[1] {
                for k in 0..n[2] {
                    let idx = [i, j, k];
                    x.push(std::array::from_fn(|a| {
                        start[a] + (idx[a] as f64 + 0.5) * h
                    }));
                    anchored.push(anchored_layer && i < 2 * scale);
                }
            }
        }
        let config = MpmConfig {
            grid_res,
            fps: FPS,
            substeps_per_frame: substeps,
            gravity: [0.0; 3],
            damping: 0.0,
            density: 2000.0,
            poisson: 0.3,
            walls: WallMode::Sticky,
            colliders: Vec::new(),
            anchoring: physfit::mpm_rules::AnchorRule::Stencil,
            transfer: Default::default(),
        };
        let setup = MpmSetup64 {
            config,
            particle_volume: h * h * h,
            anchored,
            held_points: Vec::new(),
            poisson: None,
        };
        Bar {
            setup,
            initial: MpmState64::at_rest(x),
        }
    }

    /// `(lowest, highest)` particle x along the bar.
    fn ends(&self) -> (f64, f64) {
        let xs = self.initial.x.iter().map(|p| p[0]);
        let lo = xs.clone().fold(f64::MAX, f64::min);
        let hi = xs.fold(f64::MIN, f64::max);
        (lo, hi)
    }

    /// Sets the free particles' velocity (and the matching C, its exact
    /// gradient, so the state is an APIC state of that field) from
    /// `field(s) = (v, dv/ds)` with `s ∈ [−1, 1]` along the bar and `v`
    /// along `axis`.
    fn with_velocity(mut self, axis: usize, field: impl Fn(f64) -> (f64, f64)) -> Self {
        let (lo, hi) = self.ends();
        let half = 0.5 * (hi - lo);
        for p in 0..self.initial.len() {
            if self.setup.anchored[p] {
                continue;
            }
            let s = (self.initial.x[p][0] - lo) / half - 1.0;
            let (v, dv) = field(s);
            self.initial.v[p][axis] = v;
            self.initial.c[p][axis][0] = dv / half;
        }
        self
    }

    /// RMS displacement of the free particles at frame `frames`.
    fn rms_displacement(&self, frames: usize) -> f64 {
        let youngs = vec![YOUNGS; self.initial.len()];
        let states = frame_states(&self.setup, &self.initial, &youngs, frames);
        self.rms_of(&states[frames])
    }

    /// [`Self::rms_displacement`] with the FLIP transfer whose PIC share
    /// is per unit of time, `1 − exp(−dt/tau)` per substep
    /// (src/mpm_rules/config.rs `Transfer::Flip`).
    fn rms_displacement_flip(&self, frames: usize, tau: f64) -> f64 {
        let youngs = vec![YOUNGS; self.initial.len()];
        let mut setup = self.setup.clone();
        setup.config.transfer = Transfer::Flip { pic_time: tau };
        let states = frame_states(&setup, &self.initial, &youngs, frames);
        self.rms_of(&states[frames])
    }

    /// RMS displacement of the free particles of `last` from the start.
    fn rms_of(&self, last: &MpmState64) -> f64 {
        let (mut sum, mut count) = (0.0, 0.0);
        for p in 0..self.initial.len() {
            if self.setup.anchored[p] {
                continue;
            }
            let d: Vec3 = std::array::from_fn(|a| last.x[p][a] - self.initial.x[p][a]);
            sum += mat3::dot(&d, &d);
            count += 1.0;
        }
        (sum / count).sqrt()
    }
}

/// APIC kinetic energy of a state: `Σ ½ m_p (|v_p|² + dx²/4 |C_p|²)` (the
/// affine part with quadratic B-splines' `D_p = dx²/4 I`).
fn kinetic_energy(setup: &MpmSetup64, state: &MpmState64) -> f64 {
    let m = setup.particle_mass();
    let dx = setup.config.dx();
    (0..state.len())
        .map(|p| {
            let v = &state.v[p];
            let c = &state.c[p];
            0.5 * m * (mat3::dot(v, v) + dx * dx / 4.0 * mat3::frobenius_dot(c, c))
        })
        .sum()
}

/// Fraction of the kinetic energy lost per substep over `transfers`
/// substeps of a free bar (`cells` at grid 16, scaled) at `substeps` per
/// frame, from a velocity field `field` along y.
fn loss_per_transfer(
    grid_res: u32,
    substeps: u32,
    transfers: usize,
    field: impl Fn(f64) -> (f64, f64),
) -> f64 {
    let bar = Bar::new(grid_res, substeps, [6, 2, 2], false).with_velocity(1, field);
    let youngs = vec![YOUNGS; bar.initial.len()];
    let states = rollout(&bar.setup, &bar.initial, &youngs, transfers);
    let before = kinetic_energy(&bar.setup, &states[0]);
    let after = kinetic_energy(&bar.setup, &states[transfers]);
    1.0 - (after / before).powf(1.0 / transfers as f64)
}

/// A bending velocity (quadratic along the bar, zero mean) and its slope.
fn bending(s: f64) -> (f64, f64) {
    (0.5 * (s * s - 1.0 / 3.0), s)
}

/// The transfers carry an affine velocity field losslessly, and lose a
/// fixed fraction of a bending one per transfer, the same at 10⁻⁹ s and at
/// 10⁻⁷ s per substep (a loss per substep, not per unit of time), a
/// fraction that falls by more than 4× per halving of the grid spacing.
#[test]
fn the_transfer_loss_is_per_substep_and_shrinks_with_the_grid() {
    // Substeps per frame for dt = 1/(FPS·substeps) of about 1e-9 and 1e-7 s.
    let tiny = 33_333_333;
    let small = 333_333;
    let stretch = loss_per_transfer(16, tiny, 20, |s| (0.5 * s, 0.5));
    let coarse_tiny = loss_per_transfer(16, tiny, 20, bending);
    let coarse_small = loss_per_transfer(16, small, 20, bending);
    let fine_tiny = loss_per_transfer(32, tiny, 20, bending);
    println!(
        "kinetic energy lost per transfer: affine {stretch:.2e}; bending at grid 16 \
         {coarse_tiny:.3e} (dt 1e-9 s), {coarse_small:.3e} (dt 1e-7 s); at grid 32 {fine_tiny:.3e}"
    );
    assert!(
        stretch.abs() < 1e-12,
        "an affine velocity field lost {stretch:e} of its energy per transfer"
    );
    assert!(
        coarse_tiny > 1e-3,
        "a bending field on grid 16 lost only {coarse_tiny:e} per transfer: if the transfers \
         no longer dissipate per substep, docs/benchmarks.md \"The simulator against its own \
         time step\" is out of date"
    );
    assert!(
        (coarse_small / coarse_tiny - 1.0).abs() < 0.01,
        "the loss per transfer depends on dt: {coarse_tiny:e} at 1e-9 s, {coarse_small:e} at 1e-7 s"
    );
    assert!(
        fine_tiny < coarse_tiny / 4.0,
        "halving dx cut the loss per transfer only from {coarse_tiny:e} to {fine_tiny:e}"
    );
}

/// A bar anchored at one end (physfit's anchor rule), its free part set
/// swaying: raising only the substeps on grid 16 changes the motion more
/// per doubling, while refining the grid and the time step together
/// (grid 16/32/64 at 6/12/24 substeps) converges, the change shrinking by
/// more than half per refinement.
#[test]
fn the_motion_converges_when_the_grid_and_the_time_step_refine_together() {
    let frames = 4;
    let motion = |grid_res: u32, substeps: u32| {
        Bar::new(grid_res, substeps, [6, 2, 2], true)
            .with_velocity(1, |s| (0.25 * (s + 1.0), 0.25))
            .rms_displacement(frames)
    };
    let fixed_grid: Vec<f64> = [6, 12, 24].iter().map(|&s| motion(16, s)).collect();
    let together: Vec<f64> = [(16, 6), (32, 12), (64, 24)]
        .iter()
        .map(|&(g, s)| motion(g, s))
        .collect();
    println!("RMS displacement at frame {frames}: grid 16 at 6/12/24 substeps {fixed_grid:.6?}; grid 16/32/64 at 6/12/24 {together:.6?}");
    let steps = |m: &[f64]| [m[1] - m[0], m[2] - m[1]];
    let [a, b] = steps(&fixed_grid);
    assert!(
        b.abs() > a.abs(),
        "on grid 16 the motion converged in the substeps ({a:+e}, then {b:+e}): if the \
         transfers no longer dissipate per substep, docs/benchmarks.md \"The simulator \
         against its own time step\" is out of date"
    );
    let [a, b] = steps(&together);
    assert!(
        b.abs() < 0.5 * a.abs(),
        "refining grid and time step together did not converge: {a:+e}, then {b:+e}"
    );
}

/// What converges on a fixed grid: the FLIP transfer, whose PIC share is
/// per unit of time, on the anchored bar of the test above at grid 16: the
/// change per doubling of the substeps shrinks, where APIC's grows.
#[test]
fn a_pic_share_per_unit_of_time_converges_in_the_time_step() {
    let frames = 4;
    let tau = 0.074;
    let bar = |substeps: u32| {
        Bar::new(16, substeps, [6, 2, 2], true).with_velocity(1, |s| (0.25 * (s + 1.0), 0.25))
    };
    let blended: Vec<f64> = [6, 12, 24, 48]
        .iter()
        .map(|&s| bar(s).rms_displacement_flip(frames, tau))
        .collect();
    let apic: Vec<f64> = [6, 12, 24, 48]
        .iter()
        .map(|&s| bar(s).rms_displacement(frames))
        .collect();
    println!("RMS displacement at frame {frames}, grid 16, 6/12/24/48 substeps: APIC {apic:.6?}; FLIP, PIC share per unit of time (τ = {tau} s) {blended:.6?}");
    let changes = |m: &[f64]| [m[1] - m[0], m[2] - m[1], m[3] - m[2]];
    let [a, b, c] = changes(&blended);
    assert!(
        b.abs() < a.abs() && c.abs() < b.abs(),
        "the per-unit-time PIC share did not converge in dt: {a:+e}, {b:+e}, {c:+e}"
    );
    let [a, b, c] = changes(&apic);
    assert!(
        c.abs() > b.abs() && b.abs() > a.abs(),
        "the APIC transfer converged in dt ({a:+e}, {b:+e}, {c:+e}): update \
         docs/benchmarks.md \"The simulator against its own time step\""
    );
}

/// The log10 E that best reproduces, at `fit_substeps`, the free
/// particles' positions over `frames` frames of the anchored swaying bar
/// made at 10^4 with `frame_substeps`, both with `transfer`: a golden-section
/// search of the summed squared position misfit over log10 E in [3.5, 4.5].
fn fitted_log10_youngs(transfer: Transfer, fit_substeps: u32, frame_substeps: u32) -> f64 {
    let frames = 4;
    let run = |substeps: u32, log10_youngs: f64| {
        let mut bar =
            Bar::new(16, substeps, [6, 2, 2], true).with_velocity(1, |s| (0.25 * (s + 1.0), 0.25));
        bar.setup.config.transfer = transfer;
        let youngs = vec![10f64.powf(log10_youngs); bar.initial.len()];
        let states = frame_states(&bar.setup, &bar.initial, &youngs, frames);
        (bar, states)
    };
    let (bar, truth) = run(frame_substeps, YOUNGS.log10());
    let misfit = |log10_youngs: f64| -> f64 {
        let (_, states) = run(fit_substeps, log10_youngs);
        (1..=frames)
            .map(|k| {
                (0..bar.initial.len())
                    .filter(|&p| !bar.setup.anchored[p])
                    .map(|p| {
                        let d: Vec3 = std::array::from_fn(|a| states[k].x[p][a] - truth[k].x[p][a]);
                        mat3::dot(&d, &d)
                    })
                    .sum::<f64>()
            })
            .sum()
    };
    let ratio = 0.5 * (5f64.sqrt() - 1.0);
    let (mut lo, mut hi) = (3.5, 4.5);
    let mut a = hi - ratio * (hi - lo);
    let mut b = lo + ratio * (hi - lo);
    let (mut fa, mut fb) = (misfit(a), misfit(b));
    while hi - lo > 1e-4 {
        if fa < fb {
            hi = b;
            (b, fb) = (a, fa);
            a = hi - ratio * (hi - lo);
            fa = misfit(a);
        } else {
            lo = a;
            (a, fa) = (b, fb);
            b = lo + ratio * (hi - lo);
            fb = misfit(b);
        }
    }
    0.5 * (lo + hi)
}

/// The demo's setting in the twin: frames made at twice the fit's
/// substeps on the same grid. The E that APIC fits at the fewer substeps is
/// off the truth by the transfers' extra damping at the finer time step;
/// the FLIP transfer, whose smoothing is per unit of time, recovers it
/// several times closer.
#[test]
fn the_flip_transfer_fits_e_made_at_twice_the_substeps() {
    let apic = fitted_log10_youngs(Transfer::Apic, 12, 24);
    let flip = fitted_log10_youngs(Transfer::Flip { pic_time: 0.074 }, 12, 24);
    let truth = YOUNGS.log10();
    println!(
        "log10 E fitted at 12 substeps to frames made at 24 (truth {truth}): APIC {apic:.4} \
         ({:+.4}), FLIP τ = 0.074 s {flip:.4} ({:+.4})",
        apic - truth,
        flip - truth
    );
    assert!(
        (flip - truth).abs() < 0.25 * (apic - truth).abs(),
        "FLIP's E is {:+.4} decades off, APIC's {:+.4}",
        flip - truth,
        apic - truth
    );
}
