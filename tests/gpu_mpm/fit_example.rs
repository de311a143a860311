//! examples/fit_block.rs, the fit through the library API alone, on the
//! small block twin of tests/gpu_mpm/fit_problem.rs: the example's source
//! is built here as a module and its fit called, so that the test binary
//! proves the example compiles and fits.

use physfit::fit::output_plan::CHECKPOINT_FILE;
use physfit::fit::StageKind;

use super::fit_problem::fixture;
use crate::common;

#[path = "../../examples/fit_block.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn the_example_fits_the_block_twin_in_memory_writing_only_its_checkpoint() {
    let ctx = common::gpu();
    let (dir, mut scene) = fixture(&ctx);
    // Two short Adam stages, one round (the scan and L-BFGS have tests of
    // their own): seconds on a software adapter.
    scene.fit.rounds = 1;
    scene.fit.scan.points = 0;
    scene.fit.velocity.iterations = 3;
    scene.fit.velocity.warmup = 1;
    scene.fit.velocity.frames = Some(3);
    scene.fit.stiffness.iterations = 2;
    scene.fit.stiffness.warmup = 1;
    let out = dir.path().join("fit");
    let result = example::fit_scene(&ctx, scene, &out).unwrap();

    let kinds: Vec<_> = result.stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(
        kinds,
        [StageKind::Velocity.name(), StageKind::Stiffness.name()]
    );
    let run: u32 = result
        .stages
        .iter()
        .filter_map(|s| s.run.as_ref().map(|r| r.iterations))
        .sum();
    assert_eq!(result.records.len(), run as usize);
    assert!(run > 0 && run <= 5, "{run} iterations");
    let (first, last) = (result.records[0].loss, result.last_loss().unwrap());
    assert!(last < first, "the loss fell: {first} → {last}");

    // Every driver's E in both units agrees with its log10, and the free
    // drivers moved off the start's rest velocity.
    let side = result.box_side;
    for d in &result.drivers {
        assert!(
            (d.youngs_normalised - 10f64.powf(d.log10_youngs)).abs() <= 1e-9 * d.youngs_normalised
        );
        assert!(
            (d.youngs_world - d.youngs_normalised * side * side).abs() <= 1e-9 * d.youngs_world
        );
    }
    assert!(result
        .drivers
        .iter()
        .filter(|d| !d.anchored)
        .any(|d| d.velocity.iter().any(|v| *v != 0.0)));
    let text = example::describe(&result);
    assert!(
        text.contains("E[0]: log10") && text.contains("v0[driver"),
        "{text}"
    );

    // The run wrote its checkpoint and no output.
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(written, [CHECKPOINT_FILE]);
}
