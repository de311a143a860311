//! The fit part of `physfit check`'s summary: the settings `physfit fit`
//! will run with, so that a scene's
//! `[fit]` tables can be read back before any GPU time is spent.
//!
//! Per stage: its `field` and, for `"regions"`, every region with the
//! drivers it holds (the scene's K-Means drivers assigned by
//! [`RegionAssignment`], exactly as the fit assigns them; K-Means runs only
//! when a stage has regions), its schedule (iterations, learning rate,
//! warm-up, decay, clip, frames) and its loss weights; then `fit.rounds`,
//! `fit.checkpoint_every`, and the E range in world units too (units that
//! do not depend on the box's padding: `E_world = E · side²`,
//! [`youngs_world`]).

use std::fmt::Write;

use anyhow::{Context, Result};
use physfit::drive::DriverSet;
use physfit::fit::RegionAssignment;
use physfit::output::youngs_world;
use physfit::scene::{FieldSetting, FitStage, Scene};

/// The lines `physfit check` prints about the fit (each ends in a newline).
///
/// Errors: K-Means failing on the scene's drivers (only run when a stage's
/// `field` is `"regions"`).
pub fn fit_summary(scene: &Scene) -> Result<String> {
    let mut s = String::new();
    let f = &scene.fit;
    let has_regions = [&f.velocity.field, &f.stiffness.field]
        .iter()
        .any(|field| matches!(field, FieldSetting::Regions(_)));
    let drivers = if has_regions {
        Some(DriverSet::from_scene(scene).with_context(|| {
            format!(
                "building the drivers of {} to assign them to the fit's regions",
                physfit::io::shown::shown(&scene.path)
            )
        })?)
    } else {
        None
    };
    let _ = writeln!(
        s,
        "fit          {} round{} of stage 1 (velocity) then stage 2 (stiffness); \
         checkpoint every {} iterations and at the end of each stage",
        f.rounds,
        if f.rounds == 1 { "" } else { "s" },
        f.checkpoint_every
    );
    for (label, stage, flow) in [
        ("velocity", &f.velocity, "full flow, E frozen"),
        ("stiffness", &f.stiffness, "truncated flow, v0 frozen"),
    ] {
        let smoothness = if label == "velocity" {
            format!("velocity_tv_weight {}", stage.velocity_tv_weight)
        } else {
            format!("tv_weight {}", stage.tv_weight)
        };
        let _ = writeln!(
            s,
            "  {label:<10} {} it, learning_rate {} (warmup {}, decay {}, grad_clip {}), {}, {flow}; \
             w_l1 {}, w_ssim {}, {smoothness}",
            stage.iterations,
            stage.learning_rate,
            stage.warmup,
            stage.decay,
            stage.grad_clip,
            frames(stage),
            stage.w_l1,
            stage.w_ssim,
        );
        field_lines(&mut s, label, &stage.field, drivers.as_ref());
    }
    let side = scene.simulation.sim_box.side;
    let m = &scene.material;
    let world = |log10_e: f64| youngs_world(10f64.powf(log10_e), side).log10();
    let _ = writeln!(
        s,
        "E units      settings are normalised (the box is the unit cube); in world units \
         E_world = E · side² (side {side:.4}): E0 {:.3e}, log10 E in [{:.3}, {:.3}]",
        youngs_world(m.youngs_modulus, side),
        world(m.log10_youngs_range[0]),
        world(m.log10_youngs_range[1]),
    );
    Ok(s)
}

/// The frames a stage fits on: its frame count (the rest frame 0
/// included) and the frames fitted.
fn frames(stage: &FitStage) -> String {
    match stage.frames {
        Some(n) => format!("frames {n} (fits 1–{})", n.saturating_sub(1)),
        None => "all frames (fits 1 to the last)".to_string(),
    }
}

/// The `field` line of a stage, with the drivers per region for
/// `"regions"` (a region that holds none keeps its starting value: warned).
fn field_lines(s: &mut String, label: &str, field: &FieldSetting, drivers: Option<&DriverSet>) {
    let what = if label == "velocity" { "v0" } else { "log10 E" };
    let regions = match field {
        FieldSetting::Drivers => {
            let _ = writeln!(s, "    field    \"drivers\": one {what} per driver");
            return;
        }
        FieldSetting::Global => {
            let _ = writeln!(
                s,
                "    field    \"global\": one {what} for the whole object"
            );
            return;
        }
        FieldSetting::Rigid => {
            let _ = writeln!(
                s,
                "    field    \"rigid\": linear + angular velocity about the free drivers' centroid"
            );
            return;
        }
        FieldSetting::Regions(regions) => regions,
    };
    let drivers = drivers.expect("drivers are built when a stage has regions");
    let a = RegionAssignment::new(regions, drivers);
    let list: Vec<String> = a
        .names
        .iter()
        .zip(&a.drivers)
        .map(|(name, n)| format!("{name}: {n} drivers"))
        .collect();
    let _ = writeln!(
        s,
        "    field    \"regions\": one {what} per region, {} regions over {} drivers ({})",
        a.count(),
        drivers.len(),
        list.join(", ")
    );
    for (name, n) in a.names.iter().zip(&a.drivers) {
        if *n == 0 {
            let _ = writeln!(
                s,
                "WARNING      region `fit.{label}.regions.{name}` holds no driver: its {what} \
                 keeps its starting value; fix: move its shapes onto the simulated splats"
            );
        }
    }
}
