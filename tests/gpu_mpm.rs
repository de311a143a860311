//! The GPU MPM on the present adapter (lavapipe in CI): forward physics,
//! the adjoint against finite differences of the GPU loss and against the
//! f64 twin (also at a fit's length), schedules of one computation against
//! each other, colliders against the twin and finite differences, the scene → particles → splats glue, `physfit simulate`, impulses and `physfit render --params`, and
//! `physfit bench mpm`, `bench fit` and `bench discretisation` end to end, a fit problem built
//! from scene settings, loss masks and colour corrections in the fit problem (docs/design.md § Verification 3–7). One test binary, which also travels to GPU machines (shared/gpu/prepare.sh, beside the checkout).

#[path = "gpu_mpm/align_demo.rs"]
mod align_demo;
mod common;
#[path = "gpu_mpm/support.rs"]
mod support;

#[path = "gpu_mpm/adjoint.rs"]
mod adjoint;
#[path = "gpu_mpm/bench_discretisation.rs"]
mod bench_discretisation;
#[path = "gpu_mpm/bench_fit.rs"]
mod bench_fit;
#[path = "gpu_mpm/bench_mpm.rs"]
mod bench_mpm;
#[path = "gpu_mpm/chain_vs_twin.rs"]
mod chain_vs_twin;
#[path = "gpu_mpm/colliders.rs"]
mod colliders;
#[path = "gpu_mpm/contact_gradient.rs"]
mod contact_gradient;
#[path = "gpu_mpm/deform.rs"]
mod deform;
#[path = "gpu_mpm/doc_commands.rs"]
mod doc_commands;
#[path = "gpu_mpm/error_bars.rs"]
mod error_bars;
#[path = "gpu_mpm/exact_step.rs"]
mod exact_step;
#[path = "gpu_mpm/fill.rs"]
mod fill;
#[path = "gpu_mpm/fit_cli.rs"]
mod fit_cli;
#[path = "gpu_mpm/fit_color_correction.rs"]
mod fit_color_correction;
#[path = "gpu_mpm/fit_example.rs"]
mod fit_example;
#[path = "gpu_mpm/fit_flow.rs"]
mod fit_flow;
#[path = "gpu_mpm/fit_loop.rs"]
mod fit_loop;
#[path = "gpu_mpm/fit_masks.rs"]
mod fit_masks;
#[path = "gpu_mpm/fit_problem.rs"]
mod fit_problem;
#[path = "gpu_mpm/fit_settings.rs"]
mod fit_settings;
#[path = "gpu_mpm/forcing.rs"]
mod forcing;
#[path = "gpu_mpm/forward.rs"]
mod forward;
#[path = "gpu_mpm/initial_affine.rs"]
mod initial_affine;
#[path = "gpu_mpm/kept_forward.rs"]
mod kept_forward;
#[path = "gpu_mpm/memory_estimate.rs"]
mod memory_estimate;
#[path = "gpu_mpm/poisson.rs"]
mod poisson;
#[path = "gpu_mpm/poisson_fit.rs"]
mod poisson_fit;
#[path = "gpu_mpm/render_params.rs"]
mod render_params;
#[path = "gpu_mpm/simulate_cli.rs"]
mod simulate_cli;
#[path = "gpu_mpm/static_tiles.rs"]
mod static_tiles;
#[path = "gpu_mpm/synth_cli.rs"]
mod synth_cli;
#[path = "gpu_mpm/time_step.rs"]
mod time_step;
#[path = "gpu_mpm/twin.rs"]
mod twin;
#[path = "gpu_mpm/writer_cli.rs"]
mod writer_cli;
#[path = "gpu_mpm/xdrop_scan.rs"]
mod xdrop_scan;
#[path = "gpu_mpm/xsim_scan.rs"]
mod xsim_scan;
