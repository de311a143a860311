//! `physfit check` end to end: the demo scene passes with a summary, a
//! broken scene exits non-zero with a message naming the field, and the fit
//! settings (fields, regions with their drivers, rounds, checkpoints,
//! schedules, E in world units) are printed as the fit will use them, with
//! paths as typed from the working directory.

use std::path::Path;
use std::process::Command;

use physfit::drive::DriverSet;
use physfit::fit::RegionAssignment;
use physfit::output::youngs_world;
use physfit::scene::{FieldSetting, UNCOVERED_REGION};

use crate::scene::{Fixture, BASE};

pub(crate) fn check(scene: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("check")
        .arg(scene)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

/// `physfit check`'s summary of `scene`, which must pass.
fn passing_summary(scene: &Path) -> String {
    let out = check(scene);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn demo_scene_passes_with_a_summary() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fox.toml");
    let out = check(&scene);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "50000 (SH degree 0)",
        "grid_res 16",
        "transfer flip (PIC time 0.1 s)",
        "simulated",
        "anchored",
        "substeps",
        "256×256",
        "fov",
        "5 frames per view (0–4, 0 the rest frame)",
        "tail: 220 drivers",
    ] {
        assert!(
            stdout.contains(needle),
            "summary lacks `{needle}`:\n{stdout}"
        );
    }
}

/// Paths joined from the scene's directory (`scenes/../assets/fox.ply`)
/// are printed as a user would type them from the working directory, and
/// the `.ply`'s odd values are said once, in the summary.
#[test]
fn check_prints_normalised_paths_and_odd_values_once() {
    let out = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(["check", "scenes/fox.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .output()
        .expect("run physfit");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("from assets/fox.ply"), "{stdout}");
    assert!(stdout.contains("output       out/fox"), "{stdout}");
    assert!(!stdout.contains("/../"), "{stdout}");
    let all = format!("{stdout}{stderr}");
    assert_eq!(all.matches("opacity logit clamped").count(), 1, "{all}");
}

#[test]
fn broken_scene_fails_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let fox = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fox.ply");
    let toml = format!(
        "[gaussians]\npath = {:?}\n[[views]]\n[views.camera]\nwidth = 64\nheight = 64\nfx = -5.0\n\
         position = [0.0, -3.0, 2.0]\nlook_at = [0.0, 0.0, 2.0]\nup = [0.0, 0.0, 1.0]\n",
        fox.to_string_lossy()
    );
    let scene = dir.path().join("broken.toml");
    std::fs::write(&scene, toml).unwrap();
    let out = check(&scene);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("views[0].camera.fx") && stderr.contains("broken.toml"),
        "{stderr}"
    );
}

/// The lattice scene (64 splats, 64 drivers) with a region field for E, a
/// rigid velocity and every stage setting away from its default: the
/// summary names each, gives every region the drivers the fit assigns it
/// (counted here by the library over the same K-Means drivers) and warns
/// about a region that holds none.
#[test]
fn fit_settings_are_summarised_with_the_drivers_per_region() {
    let fx = Fixture::new();
    let scene = fx
        .load(&format!(
            "{BASE}\n[fit]\nrounds = 2\ncheckpoint_every = 7\n\
             [fit.velocity]\nfield = \"rigid\"\nvelocity_tv_weight = 0.25\nlearning_rate = 0.2\n\
             iterations = 40\nframes = 3\nwarmup = 3\n\
             [fit.stiffness]\nfield = \"regions\"\nlearning_rate = 0.07\niterations = 60\n\
             [fit.stiffness.regions]\n\
             low = [{{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 0.6] }}]\n\
             left = [{{ min = [-1.0, -1.0, -1.0], max = [0.25, 2.0, 2.0] }}]\n\
             outside = [{{ min = [5.0, 5.0, 5.0], max = [6.0, 6.0, 6.0] }}]\n"
        ))
        .unwrap();
    let FieldSetting::Regions(regions) = &scene.fit.stiffness.field else {
        panic!("{:?}", scene.fit.stiffness.field)
    };
    let a = RegionAssignment::new(regions, &DriverSet::from_scene(&scene).unwrap());
    assert_eq!(a.names, ["low", "left", "outside", UNCOVERED_REGION]);
    let stdout = passing_summary(&fx.path("scene.toml"));
    let side = scene.simulation.sim_box.side;
    let mut needles = vec![
        "2 rounds".to_string(),
        "checkpoint every 7 iterations".to_string(),
        // Rigid (6 parameters) and regions (4) go to L-BFGS, which has no
        // learning rate, warm-up, decay or clip: only its cap applies.
        "velocity   L-BFGS (6 parameters), at most 40 evaluations".to_string(),
        "frames 3 (fits 1–2)".to_string(),
        "velocity_tv_weight 0.25".to_string(),
        "\"rigid\"".to_string(),
        "stiffness  L-BFGS (4 parameters), at most 60 evaluations".to_string(),
        // L-BFGS's stiffness stage follows the exact gradient.
        "full flow, E frozen".to_string(),
        "exact flow, v0 frozen".to_string(),
        // The scan, the slowest phase, and what each phase may cost:
        // 5 + 1 points of 4 + 1 evaluations, the first's velocity fit (cold)
        // at the velocity stage's cap of 40, 36 more; rounds × cap for the
        // stages.
        "scan       5 points over log10 E [3, 5]".to_string(),
        "on frames 1–2 (40 for the first)".to_string(),
        "evaluations at most 266: scan 66, velocity 2 × 40, stiffness 2 × 60".to_string(),
        "all frames".to_string(),
        "tv_weight 0.01".to_string(),
        "\"regions\": one log10 E per region, 4 regions over 64 drivers".to_string(),
        "WARNING      region `fit.stiffness.regions.outside` holds no driver".to_string(),
        format!("side {side:.4}"),
        format!(
            "log10 E in [{:.3}, {:.3}]",
            youngs_world(1e3, side).log10(),
            youngs_world(1e5, side).log10()
        ),
    ];
    for (name, n) in a.names.iter().zip(&a.drivers) {
        needles.push(format!("{name}: {n} drivers"));
    }
    for needle in &needles {
        assert!(
            stdout.contains(needle.as_str()),
            "summary lacks `{needle}`:\n{stdout}"
        );
    }
    for absent in ["learning_rate", "warmup", "decay", "grad_clip"] {
        assert!(
            !stdout.contains(absent),
            "{absent} does not apply:\n{stdout}"
        );
    }
    assert_eq!(a.drivers[2], 0);
    assert_eq!(stdout.matches("holds no driver").count(), 1, "{stdout}");
}

/// With ν fitted, `physfit check` says the scan goes on over ν (its
/// points, at E's best value, one loss each) and counts those losses.
/// A per-driver stiffness field is fitted by Adam on PhysDreamer's
/// truncated gradient, and the summary says so.
#[test]
fn a_per_driver_stiffness_stage_is_summarised_with_the_truncated_flow() {
    let fx = Fixture::new();
    fx.load(BASE).unwrap();
    let stdout = passing_summary(&fx.path("scene.toml"));
    let stiffness = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("stiffness  "))
        .unwrap_or_else(|| panic!("no stiffness line:\n{stdout}"));
    assert!(
        stiffness.contains("Adam (") && stiffness.contains("truncated flow, v0 frozen"),
        "{stiffness}"
    );
}

#[test]
fn check_says_the_scan_goes_on_over_poissons_ratio_when_it_is_fitted() {
    let fx = Fixture::new();
    fx.load(&format!(
        "{BASE}\n[fit.velocity]\nfield = \"global\"\niterations = 10\n\
         [fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n\
         poisson_range = [0.0, 0.4]\niterations = 12\n"
    ))
    .unwrap();
    let stdout = passing_summary(&fx.path("scene.toml"));
    // E's scan: 6 points of 4 + 1 evaluations, the first's velocity at
    // the stage's cap of 10 (6 more): 36; ν's: 5 + 1 losses.
    for needle in [
        "then ν at 5 points from 0.040 to 0.360 and one more by a parabola, at the best E and \
         its velocity, one loss each",
        "evaluations at most 108: scan 42, velocity 3 × 10, stiffness 3 × 12",
    ] {
        assert!(
            stdout.contains(needle),
            "summary lacks `{needle}`:\n{stdout}"
        );
    }
}

/// `physfit check` says what the discretisation check will do: off, what
/// the default would do; for a per-driver E, that it is not checked; on
/// (the default), each level's grid, drivers and substeps up to the cap
/// (by default the fit's grid with the substeps and drivers doubled; with
/// `"grid"` the grid and substeps doubled level to level, the drivers the
/// scene's rule on each grid), the evaluations and Newton steps each may
/// take, the second problem it builds, the time budget (by default half
/// the stages' time), and a fitted ν's tolerance beside E's.
#[test]
fn check_says_what_the_discretisation_check_will_do() {
    let fx = Fixture::new();
    let off = "[fit]\ncheck_discretisation = false\n";
    let global = "[fit.stiffness]\nfield = \"global\"\n";
    let default = fx.load(&format!("{BASE}\n{global}")).unwrap();
    let first = physfit::fit::level_resolution(&default, 1).unwrap();
    assert_eq!(first.grid_res, 32, "the default keeps the grid");
    let on_its_grid = format!(
        "at {first} (the fit's {}: the grid kept, the substeps and the drivers doubled \
         (`discretisation_refine = \"fixed_grid\"`, the default))",
        physfit::fit::scene_resolution(&default)
    );
    for (fit, needles) in [
        (
            off,
            vec!["discretisation not checked (`fit.check_discretisation = false`; by default E is refitted after the stages at "],
        ),
        (
            "",
            vec![
                "discretisation the per-driver E (by Adam, from the coarser level's field carried \
                 onto the finer drivers; E, the velocity, then E again when the velocity is \
                 fitted) refitted after the stages at ",
                "while a level moves the median E over the free drivers by 0.05 decades or more",
                "fitted.ply carries the fit's own E, each driver's error bar widened by the \
                 median's discretisation error",
            ],
        ),
        (
            global,
            vec![
                on_its_grid.as_str(),
                "within `fit.discretisation_seconds` = \"auto\" (100% of the stages' time) over all levels",
            ],
        ),
        (
            "[fit]\ncheck_discretisation = true\ndiscretisation_levels = 2\n\
             discretisation_refine = \"grid\"\n\
             discretisation_seconds = 900.0\n[fit.stiffness]\nfield = \"global\"\niterations = 9\n",
            vec![
                "while a level moves an E by 0.05 decades or more: at most 2 levels, each E refit at most 9 evaluations",
                "each level builds a second fit problem at its discretisation",
                "the finest level's problem is estimated at ",
                "within `fit.discretisation_seconds` = 900 s over all levels",
                "each E refit at most 9 evaluations, E first at the carried velocity, then the \
                 velocity and E in turn until an E refit moves E by less than 0.005 decades (at \
                 most `fit.rounds` E refits, at least 2), then up to 4 Newton steps from the exact gradient \
                 when they did not settle",
                "fitted.ply carries the finest level's E\n",
            ],
        ),
        (
            "[fit]\ncheck_discretisation = true\ndiscretisation_levels = 2\n\
             discretisation_refine = \"grid\"\n\
             [fit.stiffness]\nfield = \"global\"\niterations = 9\npoisson = \"global\"\n",
            vec![
                "while a level moves an E by 0.05 decades or more or a fitted ν by 0.02 or more: \
                 at most 2 levels",
                "fitted.ply carries the finest level's E and ν\n",
            ],
        ),
    ] {
        let scene = fx.load(&format!("{BASE}\n{fit}")).unwrap();
        let n = scene.simulation.substeps;
        let stdout = passing_summary(&fx.path("scene.toml"));
        for needle in needles {
            assert!(stdout.contains(needle), "`{needle}` in:\n{stdout}");
        }
        if fit.contains("discretisation_refine = \"grid\"") {
            let level = |k| physfit::fit::level_resolution(&scene, k).unwrap();
            let (one, two) = (level(1), level(2));
            assert_eq!((one.grid_res, two.grid_res), (64, 128));
            assert_eq!((one.substeps, two.substeps), (2 * n, 4 * n));
            let levels = format!(
                "at grid 64, {} drivers, {} substeps per frame (the fit's grid 32, {} drivers, {n} \
                 substeps per frame: the grid and the substeps doubled",
                one.drivers, one.substeps, scene.drivers.count
            );
            assert!(stdout.contains(&levels), "`{levels}` in:\n{stdout}");
            let levels = format!(
                "then at grid 128, {} drivers, {} substeps per frame while",
                two.drivers, two.substeps
            );
            assert!(stdout.contains(&levels), "`{levels}` in:\n{stdout}");
        }
    }
}
