//! The memory estimate against what a fit measurably allocates (the
//! context's peak), and `physfit fit` refusing a mistyped
//! `simulation.grid_res` before it allocates anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use physfit::bench::fit::{block, run_case, synthetic_scene_of};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The demo scene with `grid_res = grid_res`, written into `dir` with
/// absolute paths and its output directory inside `dir`.
fn fox_with_grid(dir: &Path, grid_res: u32) -> PathBuf {
    let scenes = root().join("scenes");
    let text = std::fs::read_to_string(scenes.join("fox.toml"))
        .unwrap()
        .replace("grid_res = 16", &format!("grid_res = {grid_res}"))
        .replace(
            "\"../assets/fox.ply\"",
            &format!("{:?}", root().join("assets/fox.ply")),
        )
        .replace(
            "\"fox_frames/",
            &format!("\"{}/fox_frames/", scenes.display()),
        )
        .replace("\"../out/fox\"", &format!("{:?}", dir.join("out")));
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn estimate_bounds_the_measured_peak_of_a_small_fit_within_twice() {
    let ctx = common::gpu();
    let dir = tempfile::tempdir().unwrap();
    let scene = synthetic_scene_of(dir.path(), &block(6, 6, 8), 32, 32, 32).unwrap();
    let refs = dir.path().join("references");
    let r = run_case(&ctx, "tiny", scene, 3, 1, &refs).unwrap();
    let (peak, estimate) = (r.peak_gpu_bytes, r.estimated_gpu_bytes);
    assert!(peak > 0);
    assert!(
        estimate >= peak,
        "estimate {estimate} below the measured peak {peak}"
    );
    assert!(
        estimate <= 2 * peak,
        "estimate {estimate} over twice the measured peak {peak}"
    );
}

#[test]
fn fit_refuses_a_mistyped_grid_res_naming_the_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scene = fox_with_grid(dir.path(), 4096);
    let out = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(["fit", "--quiet"])
        .arg(&scene)
        .env("RUST_LOG", "error")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`simulation.grid_res` = 4096"), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("stack backtrace"),
        "{stderr}"
    );
    let written = std::fs::read_dir(dir.path().join("out"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(written, 0, "nothing written");
}

/// A grid over the adapter's binding limit is a typed [`GpuError::OverLimit`]
/// naming the buffer and the limit, before wgpu sees it (never a
/// validation panic), and nothing stays allocated.
#[test]
fn a_grid_over_the_binding_limit_is_a_typed_error() {
    use physfit::gpu::GpuError;
    use physfit::mpm::{MpmError, MpmOptions, MpmSetup, MpmSimulator};
    let ctx = common::gpu();
    // (n+1)³ nodes of 16 bytes past the storage binding limit.
    let limit = ctx.limits.max_storage_buffer_binding_size;
    let n = ((limit / 16) as f64).cbrt().ceil() as u32 + 1;
    let config = physfit::mpm::MpmConfig {
        grid_res: n,
        ..crate::support::small_config()
    };
    let setup = MpmSetup {
        particle_volume: 1e-6,
        anchored: vec![false; 8],
        held_points: Vec::new(),
        youngs: vec![1e3; 8],
        youngs_max: 1e3,
    };
    let options = MpmOptions {
        check_time_step: false,
        ..MpmOptions::default()
    };
    let before = ctx.memory.current();
    let err = MpmSimulator::with_options(&ctx, &config, &setup, &options)
        .err()
        .expect("over the limit");
    match &err {
        MpmError::Gpu(e) => assert!(matches!(e.root(), GpuError::OverLimit { .. }), "{err}"),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string().contains("max_storage_buffer_binding_size"),
        "{err}"
    );
    ctx.wait().unwrap();
    assert_eq!(ctx.memory.current(), before, "nothing stays allocated");
}
