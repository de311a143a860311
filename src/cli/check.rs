//! `physfit check scene.toml`: load and validate a scene and print what
//! physfit will use, so a scene can be checked before any GPU work.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;
use physfit::budget::{estimate, MachineMemory, Workload};
use physfit::io::shown;
use physfit::scene::Transfer;
use physfit::scene::WallMode;
use physfit::scene::{DriverCount, Scene, AUTO_DRIVERS_PER_CELL, MIN_DRIVERS_PER_CELL};

use super::check_fall::fall_summary;
use super::check_fit::fit_summary;

fn v3<T: std::fmt::Display>(v: &[T; 3]) -> String {
    format!("[{}, {}, {}]", v[0], v[1], v[2])
}

fn f3(v: [f64; 3]) -> String {
    format!("[{:.4}, {:.4}, {:.4}]", v[0], v[1], v[2])
}

/// The summary printed by `physfit check`.
///
/// Errors: building the drivers for a stage with regions
/// ([`fit_summary`]).
pub fn summary(scene: &Scene) -> Result<String> {
    let mut s = String::new();
    let g = scene.gaussians();
    let _ = writeln!(s, "scene        {}", shown(&scene.path));
    let _ = writeln!(
        s,
        "splats       {} (SH degree {}) from {}",
        g.len(),
        g.sh_degree,
        shown(&scene.gaussians_path)
    );
    let report = &scene.splats.report;
    if !report.is_clean() {
        let _ = writeln!(s, "odd values   {report}");
    }
    if let Some((lo, hi)) = g.bounds() {
        let _ = writeln!(
            s,
            "world bounds min {} max {}",
            f3(lo.map(f64::from)),
            f3(hi.map(f64::from))
        );
    }
    let sim = &scene.simulation;
    let b = sim.sim_box;
    let _ = writeln!(
        s,
        "sim box      min {} max {} (side {:.4}, {})",
        f3(b.min),
        f3(b.max()),
        b.side,
        if sim.auto_box { "auto" } else { "given" }
    );
    let _ = writeln!(
        s,
        "grid         grid_res {}, dx = {:.5} (normalised) = {:.5} world units, walls {}, anchoring {}, transfer {}",
        sim.grid_res,
        1.0 / sim.grid_res as f64,
        b.side / sim.grid_res as f64,
        match sim.walls {
            WallMode::Sticky => "sticky",
            WallMode::Slip => "slip",
        },
        sim.anchoring.word(),
        transfer_text(sim.transfer)
    );
    let n_sim = scene.simulated.iter().filter(|x| **x).count();
    let n_anch = scene.anchored.iter().filter(|x| **x).count();
    let _ = writeln!(
        s,
        "regions      {n_sim} simulated, {n_anch} anchored, {} static",
        g.len() - n_sim
    );
    let st = scene.stability();
    let _ = writeln!(
        s,
        "time         fps {}, {} substeps/frame, dt = {:.4e} s; explicit bound {:.4e} s at E = {:.3e}, ν = {}{} needs ≥ {} substeps",
        scene.fps,
        sim.substeps,
        st.dt,
        st.dt_bound,
        st.youngs_max,
        st.poisson_max,
        match scene.fit.stiffness.poisson.fitted() {
            true => " (the top of the fitted ν)",
            false => "",
        },
        st.min_substeps
    );
    let gn = scene.gravity_normalised();
    let _ = writeln!(
        s,
        "gravity      {} world/s² = {} box/s², damping {} 1/s",
        v3(&sim.gravity_world),
        f3(gn),
        sim.damping
    );
    s.push_str(&fall_summary(scene));
    let m = &scene.material;
    let _ = writeln!(
        s,
        "material     density {}, Poisson {}, E0 {:.3e}, log10 E in [{}, {}]",
        m.density,
        m.poisson_ratio,
        m.youngs_modulus,
        m.log10_youngs_range[0],
        m.log10_youngs_range[1]
    );
    let d = &scene.drivers;
    let rule = match d.rule {
        DriverCount::Auto => format!("auto, {AUTO_DRIVERS_PER_CELL} per occupied cell"),
        DriverCount::Given(n) if n > d.count => format!("{n} given, capped at the points"),
        DriverCount::Given(_) => "given".to_string(),
        DriverCount::Fraction(f) => format!("fraction {f} of the simulated splats"),
    };
    let _ = writeln!(
        s,
        "drivers      {} ({rule}; k = {}, seed {}); {:.2} per occupied cell ({} cells{})",
        d.count,
        d.k,
        d.seed,
        d.per_occupied_cell(),
        d.occupied_cells,
        if d.fill {
            format!(
                ", {} of them interior, filled with {} points",
                d.interior_cells, d.fill_points
            )
        } else {
            String::new()
        }
    );
    if d.too_sparse() {
        let _ = writeln!(
            s,
            "WARNING      {:.2} drivers per occupied grid cell is below {MIN_DRIVERS_PER_CELL}: \
             MPM tears the material numerically; fix: raise `drivers.count` (or use \"auto\", \
             {AUTO_DRIVERS_PER_CELL} per cell = {}) or lower `simulation.grid_res`",
            d.per_occupied_cell(),
            AUTO_DRIVERS_PER_CELL * d.occupied_cells
        );
    }
    for (i, view) in scene.views.iter().enumerate() {
        let c = &view.camera;
        let fov_x = 2.0 * (c.width as f32 / (2.0 * c.fx)).atan().to_degrees();
        let fov_y = 2.0 * (c.height as f32 / (2.0 * c.fy)).atan().to_degrees();
        let p = c.position();
        let _ = writeln!(
            s,
            "view {i} {:?}  {}×{} px, fx {} fy {} cx {} cy {}, fov {:.1}°×{:.1}°, position [{:.4}, {:.4}, {:.4}]",
            view.name, c.width, c.height, c.fx, c.fy, c.cx, c.cy, fov_x, fov_y, p.x, p.y, p.z
        );
        match &view.frames {
            Some(f) => {
                let _ = writeln!(
                    s,
                    "  frames     {} of {}×{} px from {} ({} .. {})",
                    f.len(),
                    f.width,
                    f.height,
                    shown(&f.spec),
                    shown(&f.paths[0]),
                    shown(&f.paths[f.len() - 1])
                );
            }
            None => {
                let _ = writeln!(s, "  frames     none (this view has no reference frames)");
            }
        }
        if let Some(m) = &view.masks {
            let _ = writeln!(
                s,
                "  masks      {} from {} ({} .. {}): the loss counts only their white pixels",
                m.len(),
                shown(&m.spec),
                shown(&m.paths[0]),
                shown(&m.paths[m.len() - 1])
            );
        }
    }
    match scene.frame_count() {
        Some(n) => {
            let _ = writeln!(
                s,
                "reference    {n} frames per view (0–{}, 0 the rest frame) = {:.3} s",
                n.saturating_sub(1),
                n as f64 / scene.fps
            );
        }
        None => {
            let _ = writeln!(
                s,
                "reference    NO FRAMES: `physfit fit` needs `frames` in at least one view"
            );
        }
    }
    s.push_str(&fit_summary(scene)?);
    let _ = writeln!(s, "output       {}", shown(&scene.output_dir));
    Ok(s)
}

/// The workload `physfit check` estimates: the fit when the scene has
/// reference frames (the heaviest command, and what a scene is checked
/// for), else the forward simulation `physfit simulate` runs by default
/// ([`super::DEFAULT_FRAMES`] frames, the rest frame 0 included) rendered
/// from every camera.
pub fn check_workload(scene: &Scene) -> Workload {
    match scene.frame_count() {
        Some(_) => Workload::Fit,
        None => Workload::Forward {
            command: "physfit simulate",
            frames: super::DEFAULT_FRAMES,
            cameras: scene.views.iter().map(|v| v.camera.clone()).collect(),
            frames_held: false,
        },
    }
}

/// Runs `physfit check`: the summary, then the memory estimate against
/// the machine (the adapter probed, no device created), refused before
/// anything is allocated when it does not fit.
/// Runs `physfit check`; `quiet` prints nothing (the exit status and any
/// error say whether the scene is usable).
pub fn run(path: &Path, quiet: bool) -> Result<()> {
    let scene = Scene::load(path)?;
    let machine = MachineMemory::probe();
    let estimate = estimate(&scene, &check_workload(&scene));
    estimate.check(&scene.path, &machine)?;
    let summary = summary(&scene)?;
    if quiet {
        return Ok(());
    }
    print!("{summary}");
    println!("memory       {}", estimate.against(&machine));
    println!("ok");
    Ok(())
}

/// `simulation.transfer` as `physfit check` shows it: the word, and FLIP's
/// τ (docs/design.md § MPM, "Transfer").
fn transfer_text(transfer: Transfer) -> String {
    match transfer.pic_time() {
        None => transfer.word().to_string(),
        Some(tau) => format!("{} (PIC time {tau} s)", transfer.word()),
    }
}
