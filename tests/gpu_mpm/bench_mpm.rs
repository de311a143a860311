//! `physfit bench mpm` on a tiny case: every figure it reports is measured
//! (positive, finite) and every stage is timed. Timings are never asserted against targets here
//! (docs/benchmarks.md holds those).

use crate::common;

use physfit::bench::mpm::{run_case, MpmBenchCase};

#[test]
fn tiny_case_reports_every_figure() {
    tiny_case_in(false);
}

/// The same under the FLIP transfer (its kernels run and are timed).
#[test]
fn tiny_flip_case_reports_every_figure() {
    tiny_case_in(true);
}

fn tiny_case_in(flip: bool) {
    let ctx = common::gpu();
    let case = MpmBenchCase {
        name: "tiny".into(),
        edge: 6,
        grid_res: 16,
        substeps: 9,
        flip,
    };
    let r = run_case(&ctx, &case, None, 2).unwrap();
    assert_eq!(r.particles, 216);
    assert_eq!(r.checkpoint_every, 3);
    assert_eq!(r.repetitions, 2);
    for (name, v) in [
        ("forward_s", r.forward_s),
        ("adjoint_s", r.adjoint_s),
        ("adjoint_recompute_s", r.adjoint_recompute_s),
        (
            "forward_particle_substeps_per_s",
            r.forward_particle_substeps_per_s,
        ),
        (
            "adjoint_particle_substeps_per_s",
            r.adjoint_particle_substeps_per_s,
        ),
    ] {
        assert!(v.is_finite() && v > 0.0, "{name} = {v}");
    }
    for (name, v) in [
        ("forward_cpu_s", r.forward_cpu_s),
        ("adjoint_cpu_s", r.adjoint_cpu_s),
        ("adjoint_recompute_cpu_s", r.adjoint_recompute_cpu_s),
    ] {
        assert!(v.is_finite() && v >= 0.0, "{name} = {v}");
        // getrusage measures every platform CI runs on.
        #[cfg(unix)]
        assert!(v > 0.0, "{name} = {v}");
    }
    for r in r.adjoint_over_forward {
        #[cfg(unix)]
        assert!(r.is_some_and(|r| r.is_finite() && r > 0.0), "{r:?}");
        #[cfg(not(unix))]
        let _ = r;
    }
    assert!(r.peak_memory_bytes > 0);
    let stages: Vec<&str> = r.kernel_ms.iter().map(|s| s.stage.as_str()).collect();
    for stage in ["p2g", "grid_update", "g2p", "g2p_adjoint", "p2g_adjoint"] {
        assert!(stages.contains(&stage), "{stage} not timed: {stages:?}");
    }
    assert!(r.kernel_ms.iter().all(|s| s.ms > 0.0 && s.ms.is_finite()));
}
