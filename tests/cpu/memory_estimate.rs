//! The memory estimate before allocation (physfit::budget): a mistyped
//! `simulation.grid_res` is refused by `physfit check` naming the field,
//! with no abort and nothing written; the machine figures are parsed; on a
//! software adapter host and device needs are added once, not twice; the
//! frames `render --params` holds until written are counted on the host.

use std::path::{Path, PathBuf};
use std::process::Command;

use physfit::budget::machine::parse_nvidia_smi;
use physfit::budget::{estimate, DeviceMemory, MachineMemory, PartKind, Workload};
use physfit::memory::host::parse_meminfo;
use physfit::memory::{MemoryError, MemoryKind};
use physfit::scene::Scene;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The demo scene with `grid_res` changed, written into `dir` with its
/// paths made absolute (and its output directory inside `dir`).
pub(crate) fn fox_with_grid(dir: &Path, grid_res: u32) -> PathBuf {
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
fn check_refuses_a_mistyped_grid_res_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let scene = fox_with_grid(dir.path(), 4096);
    let out = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("check")
        .arg(&scene)
        .env("RUST_LOG", "error")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`simulation.grid_res` = 4096"), "{stderr}");
    assert!(
        stderr.contains("fix: lower `simulation.grid_res`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("memory allocation"),
        "{stderr}"
    );
    assert!(!stderr.contains("stack backtrace"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing printed but the refusal");
    assert!(!dir.path().join("out").exists(), "nothing written");
}

#[test]
fn check_prints_the_estimate_of_the_demo() {
    let out = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("check")
        .arg(root().join("scenes/fox.toml"))
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("memory "))
        .unwrap_or_else(|| panic!("no memory line in\n{stdout}"));
    assert!(line.contains("physfit fit needs about"), "{line}");
    assert!(line.contains("host has"), "{line}");
}

#[test]
fn machine_figures_are_parsed() {
    let meminfo = "MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   22563356 kB\n";
    assert_eq!(parse_meminfo(meminfo), Some(22_563_356 * 1024));
    assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    assert_eq!(
        parse_nvidia_smi("143771, 1024\n"),
        Some((143_771 - 1024) << 20)
    );
    assert_eq!(parse_nvidia_smi("[N/A], 0\n"), None);
}

fn machine(host: u64, device: Option<(bool, Option<u64>)>) -> MachineMemory {
    MachineMemory {
        host_available: host,
        host_source: "test".into(),
        device: device.map(|(shared_with_host, available)| DeviceMemory {
            name: "test adapter".into(),
            shared_with_host,
            available,
            source: "test".into(),
            max_buffer_size: 1 << 40,
            max_storage_binding: 1 << 40,
        }),
    }
}

#[test]
fn a_software_adapter_counts_its_buffers_once_as_host_memory() {
    let scene = Scene::load(&root().join("scenes/fox.toml")).unwrap();
    let e = estimate(&scene, &Workload::Fit);
    let (host, device) = (e.host_bytes(), e.device_bytes());
    assert!(host > 0 && device > 0);
    let path = Path::new("scene.toml");
    // Software: host + device once against the host.
    let software = machine(host + device, Some((true, None)));
    assert_eq!(e.host_needed(&software), host + device);
    assert!(e.check(path, &software).is_ok());
    let err = e
        .check(path, &machine(host + device - 1, Some((true, None))))
        .unwrap_err();
    match &*err {
        MemoryError::TooLarge { kind, needed, .. } => {
            assert_eq!(*kind, MemoryKind::Shared);
            assert_eq!(*needed, host + device, "added once, not twice");
        }
        other => panic!("{other}"),
    }
    // Hardware: each against its own memory.
    let hardware = machine(host, Some((false, Some(device))));
    assert_eq!(e.host_needed(&hardware), host);
    assert!(e.check(path, &hardware).is_ok());
    let err = e
        .check(path, &machine(host, Some((false, Some(device - 1)))))
        .unwrap_err();
    assert!(
        matches!(
            *err,
            MemoryError::TooLarge {
                kind: MemoryKind::Device,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        e.against(&software).contains("software adapter"),
        "{}",
        e.against(&software)
    );
}

#[test]
fn a_buffer_over_the_binding_limit_is_refused_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let scene = Scene::load(&fox_with_grid(dir.path(), 512)).unwrap();
    let e = estimate(&scene, &Workload::Fit);
    let grid = e.part(PartKind::Grid).unwrap().bytes;
    assert!(grid > 513u64.pow(3) * 72 - 1, "{grid}");
    let mut m = machine(u64::MAX, Some((false, Some(u64::MAX))));
    m.device.as_mut().unwrap().max_storage_binding = 128 << 20;
    let err = e.check(&scene.path, &m).unwrap_err();
    assert_eq!(err.field(), "simulation.grid_res", "{err}");
    assert!(
        err.to_string().contains("max_storage_buffer_binding_size"),
        "{err}"
    );
}

#[test]
fn frames_held_until_written_are_counted_on_the_host() {
    let scene = Scene::load(&root().join("scenes/fox.toml")).unwrap();
    let cameras: Vec<_> = scene.views.iter().map(|v| v.camera.clone()).collect();
    let pixels: u64 = cameras
        .iter()
        .map(|c| u64::from(c.width) * u64::from(c.height))
        .sum();
    let forward = |frames: usize, frames_held: bool| {
        estimate(
            &scene,
            &Workload::Forward {
                command: "physfit render --params",
                frames,
                cameras: cameras.clone(),
                frames_held,
            },
        )
    };
    let (written, held) = (forward(48, false), forward(48, true));
    assert_eq!(written.device_bytes(), held.device_bytes());
    let extra = held.host_bytes() - written.host_bytes();
    // At least the 8-bit RGB frames themselves, per view and frame.
    assert!(extra >= 48 * pixels * 3, "{extra}");
    assert_eq!(
        forward(96, true).host_bytes() - forward(96, false).host_bytes(),
        2 * extra,
        "in proportion to the frames"
    );
}
