//! `physfit bench fit` on a tiny case (a 288-splat synthetic block, 32
//! drivers, one 32×32 view, 3 frames: the rest frame and 2 fitted): every figure it reports is measured
//! (positive, finite), both stages and every stage of their split. Timings
//! are never asserted against targets here (docs/benchmarks.md holds
//! those).

use crate::common;

use physfit::bench::fit::{block, run_case, synthetic_scene_of, StageFigures};

fn check_stage(name: &str, s: &StageFigures, frames: &[usize]) {
    assert_eq!(s.frames, frames, "{name}");
    let t = &s.stages;
    for (what, v) in [
        ("iteration_s", s.iteration_s),
        ("stages_total_s", s.stages_total_s),
        ("mpm_forward_s", t.mpm_forward_s),
        ("mpm_adjoint_s", t.mpm_adjoint_s),
        ("deformation_s", t.deformation_s),
        ("render_forward_s", t.render_forward_s),
        ("render_backward_s", t.render_backward_s),
        ("loss_s", t.loss_s),
        // The references are the forward at other parameters.
        ("loss", s.loss),
    ] {
        assert!(v.is_finite() && v > 0.0, "{name} {what} = {v}");
    }
}

#[test]
fn tiny_case_reports_every_figure() {
    let ctx = common::gpu();
    let dir = tempfile::tempdir().unwrap();
    let scene = synthetic_scene_of(dir.path(), &block(6, 6, 8), 32, 32, 32).unwrap();
    let refs = dir.path().join("references");
    let r = run_case(&ctx, "tiny", scene, 3, 1, &refs).unwrap();
    assert_eq!(r.splats, 288);
    assert_eq!(r.drivers, 32);
    assert_eq!(r.views, 1);
    assert_eq!(r.image_size, [32, 32]);
    assert_eq!((r.frames, r.repetitions), (3, 1));
    assert!(r.substeps_per_frame > 0);
    assert!(refs.join("view0").join("0002.png").is_file());
    assert!(!refs.join("view0").join("0003.png").exists());
    // The synthetic scene's `fit.velocity.frames = 4` (frames 1–3), clipped
    // to the 3 made (frames 1–2).
    check_stage("stage 1", &r.stage1, &[1, 2]);
    assert_eq!(r.stage1.flow, "full");
    check_stage("stage 2", &r.stage2, &[1, 2]);
    // The default per-driver E: stage 2 on the truncated flow.
    assert_eq!(r.stage2.flow, "truncated");
    assert!(r.peak_gpu_bytes > 0);
    for (what, v) in [("references_s", r.references_s), ("setup_s", r.setup_s)] {
        assert!(v.is_finite() && v > 0.0, "{what} = {v}");
    }
}
