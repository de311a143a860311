//! The documents' physfit commands run on the bundled data (the TOML
//! examples: tests/cpu/doc_examples.rs). Each command that names only
//! bundled files runs as written but small: `--frames 2`, `--size 32x32`,
//! its output in a scratch folder, `--params` a drivers file of the demo's
//! own drivers (what a fit writes; a fit takes minutes, so the demo's
//! `fit` runs in tests/gpu_mpm/fit_example.rs instead). Skipped and named:
//! `fit` and `bench` (minutes), and commands on a user's own files
//! (`scene.toml`), which are templates.

use std::path::Path;

use physfit::drive::DriverSet;
use physfit::output::FittedDrivers;
use physfit::scene::Scene;

use crate::common::cli::{ok, physfit};
use crate::common::doc_blocks::{commands, repo};

/// `args` with the costly settings made small and the outputs redirected
/// into `scratch` (`--params` to `params`).
fn small(args: &[String], scratch: &Path, params: &Path, k: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.as_str() {
            "--frames" => Some("2".to_string()),
            "--size" => Some("32x32".to_string()),
            "--out" => Some(scratch.join(format!("out{k}")).display().to_string()),
            "--params" => Some(params.display().to_string()),
            _ => None,
        };
        out.push(arg.clone());
        if let Some(v) = value {
            it.next();
            out.push(v);
        }
    }
    if args.iter().any(|a| a == "--params") && !args.iter().any(|a| a == "--frames") {
        out.extend(["--frames".to_string(), "2".to_string()]);
    }
    out
}

#[test]
fn the_documents_commands_on_bundled_data_run() {
    let scratch = tempfile::tempdir().unwrap();
    let scene = Scene::load(&repo().join("scenes/fox.toml")).unwrap();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let n = drivers.len();
    let params = scratch.path().join("drivers.safetensors");
    FittedDrivers::new(&scene, &drivers, &vec![4.0; n], &vec![0.0; 3 * n], None)
        .unwrap()
        .save(&params)
        .unwrap();
    let mut ran = Vec::new();
    for (k, (place, args)) in commands().iter().enumerate() {
        let command = args[0].as_str();
        let bundled = args.get(1).is_some_and(|a| a.starts_with("scenes/"));
        if matches!(command, "fit" | "bench") || (command != "info" && !bundled) {
            continue;
        }
        let small = small(args, scratch.path(), &params, k);
        let strs: Vec<&str> = small.iter().map(String::as_str).collect();
        eprintln!("{place}: physfit {}", strs.join(" "));
        ok(&physfit(&repo(), &strs));
        ran.push(command.to_string());
    }
    for wanted in ["info", "simulate", "render"] {
        assert!(
            ran.iter().any(|c| c == wanted),
            "no `{wanted}` ran: {ran:?}"
        );
    }
}
