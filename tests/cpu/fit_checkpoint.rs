//! Fit checkpoints (src/fit/checkpoint.rs), the recovery measures of a twin
//! experiment (src/fit/recovery.rs) and the pre-run refusals
//! (src/fit/preflight.rs), without a device.

use physfit::fit::checkpoint::{Checkpoint, CheckpointError, FitFingerprint};
use physfit::fit::preflight::{preflight, PreflightError};
use physfit::fit::recovery::{deforming_drivers, green_strain_norm, Recovery};
use physfit::fit::{FitState, IterationRecord, StageChoice, StageKind};
use physfit::mpm::ParticleState;
use physfit::solve::adam::Adam;

use crate::common::scene_with;

fn means() -> Vec<[f32; 3]> {
    (0..27)
        .map(|i| {
            [
                (i % 3) as f32 * 0.4 + 0.1,
                ((i / 3) % 3) as f32 * 0.4 + 0.1,
                (i / 9) as f32 * 0.4 + 0.1,
            ]
        })
        .collect()
}

pub(crate) fn state() -> FitState {
    let running = running_state();
    // A finished stage that stopped at its cap keeps its state then, for a
    // resume that raises the cap.
    let capped = FitState {
        stage: 0,
        converged: Vec::new(),
        stage_losses: Vec::new(),
        tallies: Vec::new(),
        ..running.clone()
    };
    FitState {
        capped: vec![physfit::fit::state::CappedStage {
            stage: 0,
            state: Box::new(capped),
        }],
        ..running
    }
}

fn running_state() -> FitState {
    FitState {
        stage: 1,
        iteration: 3,
        log10_youngs: vec![3.1, 4.000000000000001, 1.0 / 3.0],
        velocity: vec![0.1, -0.2, std::f64::consts::PI],
        // Poisson's ratio's z (ν = 0.49·sigmoid(z)): restored exactly.
        poisson: vec![-1.0 / 3.0],
        adam: Adam {
            m: vec![1e-300, 0.5, -7.25],
            v: vec![3.0e-17, 2.0, 1.0 / 7.0],
            t: 3,
        },
        curvature: vec![physfit::fit::state::StageCurvature {
            kind: physfit::fit::StageKind::Velocity,
            pairs: vec![physfit::solve::lbfgs::CurvaturePair {
                s: vec![0.1, -0.2, 1.0 / 3.0],
                y: vec![1e-300, 2.5, -7.0],
                rho: 1.0 / 7.0,
            }],
        }],
        exact_step: Some(physfit::fit::exact_step::ExactStep {
            log10_youngs: vec![-0.125, 0.0, 1.0 / 3.0],
            poisson_z: vec![0.1],
            fraction: 0.5,
            loss: [0.25, 1.0 / 7.0],
            predicted_decrease: 0.1,
            steps: 3,
        }),
        discretisation: Some({
            use physfit::fit::discretisation_check::{DiscretisationCheck, RefinementEnd};
            use physfit::fit::Resolution;
            let at = |grid_res, drivers, substeps| Resolution {
                grid_res,
                drivers,
                substeps,
            };
            let level =
                |log10_youngs: Vec<f64>, poisson, loss, evaluations, newton_steps, seconds| {
                    physfit::fit::LevelFit {
                        log10_youngs,
                        poisson: vec![poisson],
                        velocity: vec![0.25, -0.5, 1.0 / 3.0],
                        loss,
                        evaluations,
                        newton_steps,
                        rounds: 2,
                        seconds,
                    }
                };
            let mut check = DiscretisationCheck::start(
                at(16, 500, 9),
                vec![3.1, 4.0, 1.0 / 3.0],
                vec![0.1 / 3.0],
                3,
            )
            .refitting_velocity(vec![0.2, -0.5, 0.1]);
            check.push_level(
                at(32, 1900, 18),
                level(vec![3.2, 4.1, 0.3], 0.25, [0.25, 1.0 / 9.0], 7, 2, 12.5),
            );
            check.push_level(
                at(64, 7300, 36),
                level(vec![3.21, 4.09, 0.31], 0.255, [0.125, 0.1], 4, 1, 30.25),
            );
            check.finish(RefinementEnd::Converged);
            check
        }),
        uncertainty: Some(physfit::fit::FitUncertainty {
            frames: vec![1, 2],
            residuals: 12_345,
            image_loss: 0.1 / 3.0,
            scale: 2.5e-7,
            evaluations: 9,
            youngs_method: Some(physfit::fit::uncertainty::CurvatureMethod::Diagonal),
            velocity_method: Some(physfit::fit::uncertainty::CurvatureMethod::Hessian),
            youngs_log10_std: vec![Some(0.25), None, Some(1.0 / 7.0)],
            velocity_std: vec![Some(1e-3), Some(2e-3), None],
            poisson_std: Vec::new(),
            youngs_constrained: vec![true, false, true],
            correlations: Some(physfit::fit::uncertainty::Correlations {
                names: vec!["v0[0]".into(), "v0[1]".into(), "v0[2]".into()],
                matrix: vec![
                    vec![1.0, -0.5, 0.0],
                    vec![-0.5, 1.0, 0.0],
                    vec![0.0, 0.0, 1.0],
                ],
                newton_step: vec![Some(1e-4), Some(-2.5e-4), None],
            }),
            differences: Some(physfit::fit::uncertainty::HessianDifferences::Forward),
            stiffness_newton_step: Some(physfit::fit::uncertainty::StiffnessNewtonStep {
                log10_youngs: vec![-0.125, 1.0 / 3.0],
                poisson_z: Vec::new(),
                predicted_decrease: 2.5e-3,
            }),
        }),
        scan: None,
        converged: vec![true],
        stage_losses: vec![0.5],
        tallies: vec![physfit::fit::state::StageTally {
            cap: 5,
            steps: 3,
            evaluations: 5,
        }],
        capped: Vec::new(),
        // A running L-BFGS stage's solver round-trips too (exact resume).
        lbfgs: Some(physfit::fit::state::LbfgsCheckpoint {
            solver: physfit::solve::lbfgs::LbfgsState {
                x: vec![0.1, 1.0 / 3.0],
                loss: 0.987654321,
                grad: vec![-1e-12, 2.5],
                pairs: vec![physfit::solve::lbfgs::CurvaturePair {
                    s: vec![0.01, -0.02],
                    y: vec![0.3, 1.0 / 7.0],
                    rho: 17.25,
                }],
                evaluations: 4,
                first: false,
                small_steps: 1,
                unused_gradients: 2,
                gradients: 3,
                reevaluations: 1,
                pending: None,
                last_step: Some(0.0125),
                measured_pairs: 1,
            },
        }),
        records: vec![IterationRecord {
            round: 1,
            stage: StageKind::Velocity,
            iteration: 0,
            loss: 0.123456789012345,
            image: 0.1,
            l1: 0.2,
            dssim: 0.3,
            tv: 0.4,
            velocity_tv: 0.0,
            psnr: 31.5,
            ssim: 0.97,
            grad_norm: 2.5,
            learning_rate: 0.05,
            rejected: 1,
        }],
    }
}

#[test]
fn a_checkpoint_reads_back_bit_for_bit_and_refuses_other_settings() {
    let (dir, scene) = scene_with(&means(), "");
    let scene = scene.unwrap();
    let fingerprint = FitFingerprint::of(&scene, StageChoice::Both, None).unwrap();
    let path = dir.path().join("checkpoint.json");
    let c = Checkpoint::new(fingerprint.clone(), state(), vec![12.5]);
    c.save(&path).unwrap();
    let back = Checkpoint::load(&path, &fingerprint).unwrap();
    assert_eq!(back, c, "every f64 round-trips exactly");

    assert_eq!(back.state.poisson[0].to_bits(), (-1.0f64 / 3.0).to_bits());
    // A fit of ν is another fit than one that holds it (and a fit that
    // holds it keeps the fingerprint it had before ν could be fitted).
    let (_d3, fitted_nu) = scene_with(&means(), "[fit.stiffness]\npoisson = \"global\"\n");
    let fitted_nu = FitFingerprint::of(&fitted_nu.unwrap(), StageChoice::Both, None).unwrap();
    let err = Checkpoint::load(&path, &fitted_nu).unwrap_err().to_string();
    assert!(err.contains("fit.stiffness.poisson"), "{err}");
    assert!(!fingerprint.0.contains_key("fit.stiffness.poisson"));

    // Other settings: refused, naming the field.
    let (_d2, other) = scene_with(&means(), "[fit.stiffness]\nlearning_rate = 0.2\n");
    let other = FitFingerprint::of(&other.unwrap(), StageChoice::Both, None).unwrap();
    let err = Checkpoint::load(&path, &other).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CheckpointError::Mismatch { .. }), "{text}");
    assert!(text.contains("fit.stiffness.learning_rate"), "{text}");
    assert!(!text.contains("fit.velocity.learning_rate"), "{text}");
    // Another stage choice too.
    let stage = FitFingerprint::of(&scene, StageChoice::Velocity, None).unwrap();
    assert!(Checkpoint::load(&path, &stage)
        .unwrap_err()
        .to_string()
        .contains("`stages`"));
    // Raising iterations is not a difference.
    let (_d3, more) = scene_with(&means(), "[fit.stiffness]\niterations = 500\n");
    let more = FitFingerprint::of(&more.unwrap(), StageChoice::Both, None).unwrap();
    assert!(fingerprint.differences(&more).is_empty());

    // A view's colour correction changes what the loss compares: refused,
    // naming the view's field; the identity written out is no difference.
    let corrected = |table: &str| {
        let (_d, s) = scene_with(&means(), &format!("[views.color_correction]\n{table}\n"));
        FitFingerprint::of(&s.unwrap(), StageChoice::Both, None).unwrap()
    };
    let gain = corrected("gain = [1.1, 1.0, 0.9]");
    let text = Checkpoint::load(&path, &gain).unwrap_err().to_string();
    assert!(text.contains("views[0].color_correction"), "{text}");
    assert_eq!(fingerprint.differences(&gain).len(), 1, "{text}");
    let offset = corrected("gain = [1.1, 1.0, 0.9]\noffset = [0.0, 0.01, 0.0]");
    assert_eq!(gain.differences(&offset).len(), 1);
    let identity = corrected("gain = [1.0, 1.0, 1.0]\noffset = [0.0, 0.0, 0.0]");
    assert!(fingerprint.differences(&identity).is_empty());

    // Not a checkpoint.
    std::fs::write(&path, b"{\"format\": \"something else\"}").unwrap();
    let err = Checkpoint::load(&path, &fingerprint).unwrap_err();
    assert!(matches!(err, CheckpointError::Format { .. }), "{err}");
}

#[test]
fn green_strain_ignores_rotation_and_sees_stretch() {
    let (s, c) = (0.6f32.sin(), 0.6f32.cos());
    let rotation = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]];
    assert!(green_strain_norm(&rotation) < 1e-6);
    let stretch = [[1.01, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let e = green_strain_norm(&stretch);
    assert!((e - 0.5 * (1.01f64 * 1.01 - 1.0)).abs() < 1e-6, "{e}");

    let mut moving = ParticleState::at_rest(vec![[0.5; 3]; 3], vec![[0.0; 3]; 3]);
    moving.f[0] = rotation;
    moving.f[2] = stretch;
    let rest = ParticleState::at_rest(vec![[0.5; 3]; 3], vec![[0.0; 3]; 3]);
    assert_eq!(deforming_drivers(&[rest, moving]), vec![false, false, true]);
}

#[test]
fn recovery_measures_velocity_over_free_drivers_and_e_over_deforming_ones() {
    let truth_e = [4.0, 4.0, 4.0, 4.0, 3.0];
    let fitted_e = [4.1, 3.7, 4.0, 9.0, 3.2];
    let anchored = [false, false, false, true, false];
    let deforming = [true, true, false, true, true];
    let truth_v = [
        1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0,
    ];
    let mut fitted_v = truth_v;
    fitted_v[0] = 1.2; // one driver off by 0.2 of 4 free unit speeds
    fitted_v[9] = 50.0; // anchored: ignored
    let r = Recovery::measure(
        &fitted_e, &fitted_v, &truth_e, &truth_v, &anchored, &deforming,
    );
    assert_eq!(r.free_drivers, 4);
    assert_eq!(r.deforming_drivers, 3, "drivers 0, 1 and 4");
    assert!(
        (r.velocity_relative_error - 0.2 / 2.0).abs() < 1e-12,
        "{r:?}"
    );
    // |Δ| = 0.1, 0.3, 0.2: median 0.2, P90 0.3.
    assert!((r.log10_youngs_median_error - 0.2).abs() < 1e-12, "{r:?}");
    assert!((r.log10_youngs_p90_error - 0.3).abs() < 1e-12, "{r:?}");
    assert!(r.summary().contains("10.0%"), "{}", r.summary());
}

#[test]
fn preflight_refuses_scenes_without_frames() {
    let (_d, scene) = scene_with(&means(), "");
    let scene = scene.unwrap();
    let err = preflight(&scene, StageChoice::Both).unwrap_err();
    assert!(matches!(err, PreflightError::NoFrames { .. }), "{err}");
    assert!(err.to_string().contains("frames"), "{err}");
}

#[test]
fn fit_json_of_another_version_is_refused_naming_the_fix() {
    use physfit::fit::summary::{SummaryError, SUMMARY_VERSION};
    use physfit::fit::FitSummary;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fit.json");
    // The shape of a fit.json, then its version changed.
    let text = format!(
        r#"{{"format":"physfit.fit","version":{},"scene":"s.toml",
        "units":{{"youngs_normalised":"n","youngs_world":"w","box_side":2.0,"velocity":"v"}},
        "settings":{{"inputs_sha256":{{"gaussians":"a","reference_frames":"b"}},
          "simulation":{{"grid_res":16,"substeps":9,"drivers":4}},
          "material":{{"youngs_modulus":1e4,"log10_youngs_range":[3.0,5.0]}},
          "fit":{{"rounds":1,"checkpoint_every":3,"check_discretisation":false,"discretisation_levels":3,"scan":{{"points":5,"velocity_evaluations":4}},
            "velocity":{{"solver":"lbfgs","iterations":1,"tolerance":0.0,"w_l1":0.8,"w_ssim":0.2,
              "tv_weight":0.0,"velocity_tv_weight":0.0,"field":"global"}},
            "stiffness":{{"solver":"lbfgs","iterations":2,"tolerance":0.0,"w_l1":0.8,"w_ssim":0.2,
              "tv_weight":0.0,"velocity_tv_weight":0.0,"field":"regions","regions":["tail"]}}}},
          "stages":"both"}},
        "adapter":{{"name":"a","backend":"b","driver":"d","software":true}},
        "camera_check":[{{"view":"front","psnr":40.0,"reference":"f/0.png","picture":null}}],
        "stages":[],"final":{{"loss":0.1,"image":0.1,"tv":0.0,"mean_psnr":30.0,"mean_ssim":0.9,"frames":[]}},
        "youngs_parameters":[{{"name":"tail","log10_normalised":4.0,"normalised":1e4,"world":4e4}}],
        "velocity_parameters":[0.5]}}"#,
        SUMMARY_VERSION
    );
    std::fs::write(&path, &text).unwrap();
    let summary = FitSummary::read(&path).unwrap();
    assert_eq!(summary.settings.simulation.grid_res, 16);
    assert_eq!(summary.camera_check[0].view, "front");
    assert_eq!(summary.youngs_parameters[0].world, 4e4);
    // What it writes reads back equal, has the schema's shape and no Rust
    // Debug text.
    let again = dir.path().join("again.json");
    summary.write(&again).unwrap();
    assert_eq!(FitSummary::read(&again).unwrap(), summary);
    let written = std::fs::read_to_string(&again).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&FitSummary::json_schema()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        crate::common::json_shape::missing_fields(&schema, &value),
        Vec::<String>::new()
    );
    for debug in ["Some(", "None", "NamedRegion", "learning_rate"] {
        assert!(!written.contains(debug), "{debug} in {written}");
    }
    let old = text.replacen(
        &format!("\"version\":{SUMMARY_VERSION}"),
        "\"version\":1",
        1,
    );
    std::fs::write(&path, old).unwrap();
    let err = FitSummary::read(&path).unwrap_err();
    assert!(matches!(err, SummaryError::Format { .. }), "{err}");
    assert!(err.to_string().contains("re-run the fit"), "{err}");
}

/// A checkpoint is checked against the plan it continues: a stage past the
/// plan, per-stage lists of another length than the stages finished, an
/// array of another length than its parameterisation, a log10 E outside
/// the range are refused, naming the file and the field (and a huge E in
/// exponent notation, not 300 digits).
#[test]
fn a_checkpoint_that_does_not_fit_its_plan_is_refused_naming_the_field() {
    use physfit::fit::plan::plan_stages;
    use physfit::fit::Parameters;
    let (_dir, scene) = scene_with(&means(), "");
    let scene = scene.unwrap();
    let plan = plan_stages(&scene, &[0], 3, 1, StageChoice::Both);
    let (youngs, velocity) = (2, 3);
    let start = FitState::start(
        Parameters {
            log10_youngs: vec![3.5; youngs],
            velocity: vec![0.0; velocity],
            poisson: Vec::new(),
        },
        &plan,
    );
    let path = std::path::Path::new("out/checkpoint.json");
    let check = |state: FitState| {
        Checkpoint::new(FitFingerprint(Default::default()), state, Vec::new())
            .check_against(path, &plan, youngs, velocity, 0, (3.0, 4.5))
            .err()
            .map(|e| e.to_string())
    };
    assert_eq!(check(start.clone()), None, "a fresh start fits its plan");
    let mut finished = start.clone();
    finished.stage = plan.len();
    finished.adam = Adam::new(0);
    finished.converged = vec![true; plan.len()];
    finished.stage_losses = vec![0.5; plan.len()];
    assert_eq!(
        check(finished.clone()),
        None,
        "a finished fit fits its plan"
    );
    // A fit that ended by skipping its converged rounds kept the skipped
    // stage's Adam (physfit before 2026-12-04): nothing reads it, so its
    // checkpoint still resumes to write the outputs.
    let mut skipped = finished.clone();
    skipped.adam = Adam::new(velocity);
    assert_eq!(
        check(skipped),
        None,
        "a finished fit's stale Adam is not read"
    );

    let refused = |state: FitState, field: &str| {
        let text = check(state).unwrap_or_else(|| panic!("{field}: accepted"));
        assert!(
            text.contains("out/checkpoint.json")
                && text.contains(&format!("`{field}`"))
                && text.contains("fix:"),
            "{field}: {text}"
        );
        text
    };
    // A per-driver field's discretisation check keeps its median alone:
    // one value whatever the number of E parameters; a check of each
    // parameter keeps one per parameter.
    let median_check = |values: usize| {
        use physfit::fit::{
            DiscretisationCheck, LevelFit, RefinementEnd, Resolution, YoungsStatistic,
        };
        let at = |drivers, substeps| Resolution {
            grid_res: 16,
            drivers,
            substeps,
        };
        let mut d = DiscretisationCheck::start(at(300, 9), vec![3.6; values], Vec::new(), 1)
            .comparing(YoungsStatistic::FreeDriverMedian);
        d.push_level(
            at(600, 18),
            LevelFit {
                log10_youngs: vec![3.7; values],
                poisson: Vec::new(),
                velocity: Vec::new(),
                loss: [1.0, 0.5],
                evaluations: 4,
                newton_steps: 0,
                rounds: 1,
                seconds: 1.0,
            },
        );
        d.finish(RefinementEnd::LevelCap);
        let mut s = finished.clone();
        s.discretisation = Some(d);
        s
    };
    assert_eq!(check(median_check(1)), None, "a per-driver check's median");
    refused(
        median_check(youngs),
        "state.discretisation.fitted_log10_youngs",
    );
    let mut s = finished.clone();
    s.stage = 99;
    refused(s, "state.stage");
    let mut s = finished.clone();
    s.poisson = vec![0.0];
    refused(s, "state.poisson");
    let mut s = finished.clone();
    s.converged.clear();
    refused(s, "state.converged");
    let mut s = finished.clone();
    s.tallies = vec![physfit::fit::state::StageTally::default(); 1];
    refused(s, "state.tallies");
    // A kept state of a stage that stopped at its cap: of a finished
    // stage, and itself fitting the plan.
    let mut s = finished.clone();
    s.capped = vec![physfit::fit::state::CappedStage {
        stage: plan.len(),
        state: Box::new(start.clone()),
    }];
    refused(s, "state.capped[0].stage");
    let mut s = finished.clone();
    let mut kept = start.clone();
    kept.log10_youngs.push(3.5);
    s.capped = vec![physfit::fit::state::CappedStage {
        stage: 0,
        state: Box::new(kept),
    }];
    refused(s, "state.capped[0].state.log10_youngs");
    let mut s = start.clone();
    s.log10_youngs.push(3.5);
    refused(s, "state.log10_youngs");
    let mut s = start.clone();
    let mut u = state().uncertainty.unwrap();
    u.youngs_log10_std = vec![Some(0.1); 1_000_000];
    s.uncertainty = Some(u);
    refused(s, "state.uncertainty.youngs_log10_std");
    let mut s = start.clone();
    let mut u = state().uncertainty.unwrap();
    u.youngs_log10_std.clear();
    u.youngs_constrained.clear();
    u.velocity_std.clear();
    u.poisson_std = vec![Some(0.01)];
    s.uncertainty = Some(u);
    refused(s, "state.uncertainty.poisson_std");
    let mut s = start.clone();
    s.adam.m.push(0.0);
    refused(s, "state.adam.m");
    let mut s = start.clone();
    s.log10_youngs[1] = 1e308;
    let text = refused(s, "state.log10_youngs[1]");
    assert!(text.contains("1.000000e308") && text.len() < 400, "{text}");
}
