//! The exact-gradient step (src/fit/exact_step.rs) on the block twin made
//! at the fit's own discretisation (so the loss's optimum is the truth's
//! E, 10^3.8): a stiffness stage stopped at its start, 0.1 decades short,
//! is moved by Newton's step from the error bars' exact gradient and
//! Hessian towards the optimum (the velocity, fitted at the start's E,
//! held), then by further steps from fresh Hessians while each gains more
//! than 1%; the loss falls, and every output carries the moved E.

use crate::common::cli::{ok, physfit};
use physfit::fit::exact_step::MAX_NEWTON_STEPS;

use super::fit_cli::{fit_json, free_drivers_carry, scene_toml, twin_with, TRUTH_CONSTANT};

#[test]
fn newtons_step_from_the_exact_gradient_moves_a_stopped_stiffness_stage_towards_the_optimum() {
    // One round; the velocity fitted, the stiffness stage capped at its
    // start's evaluation (no step) from 10^3.7. (From 10^3.4 the loss is
    // not convex in E there, the Hessian's block is not positive definite
    // and no step is offered: Newton's step is a last move near an
    // optimum, not a search. Measured from 10^3.7: 10^3.8185, the loss
    // 3.06e-2 → 1.10e-2.)
    let scene = scene_toml("global", "")
        .replace("rounds = 2", "rounds = 1")
        .replace("iterations = 30", "iterations = 8")
        .replace("iterations = 20", "iterations = 1")
        .replace("youngs_modulus = 1.0e3", "youngs_modulus = 5.0119e3");
    let dir = twin_with(&scene, TRUTH_CONSTANT, &["--same-discretisation"]);
    let d = dir.path();
    let stderr = ok(&physfit(d, &["fit", "scene.toml", "--out", "fit"]));
    println!("{stderr}");
    let summary = fit_json(&d.join("fit"));
    let newton = summary
        .uncertainty
        .as_ref()
        .and_then(|u| u.stiffness_newton_step.clone())
        .expect("the error bars give Newton's step in E");
    let step = summary.exact_step.clone().expect("the step was tried");
    let start = 5.0119e3f64.log10();
    let fitted = summary.youngs_parameters[0].log10_normalised;
    println!("{newton:?}\n{step:?}\nfitted 10^{fitted:.4}");
    assert!(step.fraction == 1.0 || step.fraction == 0.5, "{step:?}");
    // The first step gained far more than 1% of the loss, so further steps
    // from fresh Hessians followed (measured: 3 steps, 10^3.7901, the loss
    // 3.06e-2 → 5.08e-3, where the first step alone reached 10^3.8185 and
    // 1.10e-2).
    assert!(
        (2..=MAX_NEWTON_STEPS).contains(&step.steps),
        "the first step's gain asks for more: {step:?}"
    );
    assert!(step.loss[1] < step.loss[0], "{step:?}");
    assert!(
        (fitted - 3.8).abs() < 0.02,
        "Newton's steps end at the optimum near 10^3.8: 10^{fitted:.4} (the first step: {:+.4})",
        newton.log10_youngs[0]
    );
    assert!(
        (fitted - (start + step.log10_youngs[0])).abs() < 1e-6,
        "{fitted}"
    );
    // Towards the truth (the velocity was fitted at the start's E, so the
    // loss's optimum in E given it is near 10^3.8, not at it).
    assert!(
        (fitted - 3.8).abs() < (start - 3.8).abs() && fitted > start,
        "towards the optimum at 10^3.8: 10^{fitted:.3} from 10^{start:.3}"
    );
    // The moved E is every output's.
    assert!(
        free_drivers_carry(&d.join("fit"), fitted),
        "drivers.safetensors carries the moved E"
    );
    assert!(
        stderr.contains("exact-gradient step: E moved by object "),
        "{stderr}"
    );
}
