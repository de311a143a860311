//! `[simulation]`: the grid, substeps (checked against the explicit
//! time-step bound), gravity, damping, walls, colliders and the simulation
//! box, resolved and validated (docs/scene.md; docs/design.md § MPM,
//! Stability).

use super::collider::{check_start_outside, resolve_colliders};
use super::config::{BoxSetting, SimulationConfig, TransferWord, DEFAULT_PIC_TIME};
use super::error::SceneError;
use super::material::Material;
use super::sim_box::SimBox;
use super::validate::Validator;
use crate::mpm_rules::stability::{explicit_dt_bound, min_substeps_per_frame};
use crate::mpm_rules::config::Transfer;
use crate::mpm_rules::{AnchorRule, Collider, WallMode};

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
    /// are [`Scene::mpm_config`](super::Scene::mpm_config)'s).
    pub colliders: Vec<Collider>,
    /// Which nodes an anchored particle holds (`simulation.anchoring`).
    pub anchoring: AnchorRule,
    /// How G2P sets the particle velocity (`simulation.transfer`,
    /// `simulation.pic_time`).
    pub transfer: Transfer,
}

/// The numbers of `[simulation]`; its box needs the simulated splats and is
/// resolved after them ([`resolve_box`]).
pub(crate) struct SimulationNumbers {
    padding: f64,
    substeps: u32,
    gravity_world: [f64; 3],
    damping: f64,
    colliders: Vec<Collider>,
    transfer: Transfer,
}

/// `[simulation]` less its box: the grid, the padding of an automatic box,
/// damping, gravity, the colliders and the substeps, checked against the
/// explicit time-step bound at the top of the material's E range and at
/// `poisson_max`, the largest ν the simulation may see (the material's, or
/// the top of a fitted ν's range).
pub(crate) fn resolve_simulation(
    v: &Validator,
    s: &SimulationConfig,
    fps: f64,
    material: &Material,
    poisson_max: f64,
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
    let (nu, density) = (poisson_max, material.density);
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
                poisson_max: nu,
            })
        }
        Some(n) => n,
    };
    let colliders = resolve_colliders(v, &s.colliders)?;
    let transfer = resolve_transfer(v, s)?;
    Ok(SimulationNumbers {
        padding,
        substeps,
        gravity_world,
        damping,
        colliders,
        transfer,
    })
}

/// `simulation.box`, which completes `[simulation]`: derived around the
/// simulated splats (`"auto"`) or given as a cube, and holding every
/// simulated splat clear of the wall margin; no simulated splat may start
/// inside a collider.
pub(crate) fn resolve_box(
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
        anchoring: s.anchoring,
        transfer: numbers.transfer,
    })
}

/// `simulation.transfer` and `simulation.pic_time`: τ only with FLIP,
/// positive (infinite: pure FLIP).
fn resolve_transfer(v: &Validator, s: &SimulationConfig) -> Result<Transfer, SceneError> {
    match (s.transfer, s.pic_time) {
        (TransferWord::Apic, None) => Ok(Transfer::Apic),
        (TransferWord::Apic, Some(_)) => Err(v.invalid(
            "simulation.pic_time",
            "is set, but `simulation.transfer` is \"apic\", which has no PIC time",
            "set `simulation.transfer = \"flip\"`, or remove `pic_time`",
        )),
        (TransferWord::Flip, pic_time) => {
            let pic_time = pic_time.unwrap_or(DEFAULT_PIC_TIME);
            if pic_time.is_nan() || pic_time <= 0.0 {
                return Err(v.out_of_range(
                    "simulation.pic_time",
                    pic_time,
                    "must be > 0 seconds (`inf` for pure FLIP)",
                ));
            }
            Ok(Transfer::Flip { pic_time })
        }
    }
}
