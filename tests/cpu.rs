//! Tests that need no GPU device: scene files, .ply, reference frames, the
//! f64 CPU twins against finite differences and against gsplat's renders,
//! `physfit check`, and every WGSL file through naga. One test binary
//! (fewer to link than one per file; docs/design.md § Verification 1–2).

mod common;

#[path = "cpu/adam.rs"]
mod adam;
#[path = "cpu/bad_inputs.rs"]
mod bad_inputs;
#[path = "cpu/cli_wording.rs"]
mod cli_wording;
#[path = "cpu/curvature.rs"]
mod curvature;
#[path = "cpu/discretisation_changes.rs"]
mod discretisation_changes;
#[path = "cpu/discretisation_levels.rs"]
mod discretisation_levels;
#[path = "cpu/doc_examples.rs"]
mod doc_examples;
#[path = "cpu/drivers.rs"]
mod drivers;
#[path = "cpu/error_bars.rs"]
mod error_bars;
#[path = "cpu/error_paths.rs"]
mod error_paths;
#[path = "cpu/fit_checkpoint.rs"]
mod fit_checkpoint;
#[path = "cpu/fit_schema.rs"]
mod fit_schema;
#[path = "cpu/fit_settings.rs"]
mod fit_settings;
#[path = "cpu/frames.rs"]
mod frames;
#[path = "cpu/interactions.rs"]
mod interactions;
#[path = "cpu/kernel_bindings.rs"]
mod kernel_bindings;
#[path = "cpu/lbfgs.rs"]
mod lbfgs;
#[path = "cpu/masks.rs"]
mod masks;
#[path = "cpu/memory_estimate.rs"]
mod memory_estimate;
#[path = "cpu/output_files.rs"]
mod output_files;
#[path = "cpu/ply.rs"]
mod ply;
#[path = "cpu/reader_props.rs"]
mod reader_props;
#[path = "cpu/reference_chain.rs"]
mod reference_chain;
#[path = "cpu/reference_collider.rs"]
mod reference_collider;
#[path = "cpu/reference_deform.rs"]
mod reference_deform;
#[path = "cpu/reference_gsplat_case.rs"]
mod reference_gsplat_case;
#[path = "cpu/reference_loss.rs"]
mod reference_loss;
#[path = "cpu/reference_mpm.rs"]
mod reference_mpm;
#[path = "cpu/reference_mpm_refinement.rs"]
mod reference_mpm_refinement;
#[path = "cpu/reference_splat.rs"]
mod reference_splat;
#[path = "cpu/report.rs"]
mod report;
#[path = "cpu/scene.rs"]
mod scene;
#[path = "cpu/scene_check.rs"]
mod scene_check;
#[path = "cpu/scene_colliders.rs"]
mod scene_colliders;
#[path = "cpu/solvers.rs"]
mod solvers;
#[path = "cpu/truth.rs"]
mod truth;
#[path = "cpu/wgsl_mirrors.rs"]
mod wgsl_mirrors;
#[path = "cpu/wgsl_validation.rs"]
mod wgsl_validation;
#[path = "cpu/xdrop_scene.rs"]
mod xdrop_scene;
#[path = "cpu/xfox_scene.rs"]
mod xfox_scene;
#[path = "cpu/xsim_scene.rs"]
mod xsim_scene;
