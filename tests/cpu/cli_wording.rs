//! What the command line says when a user gets a flag wrong, checked on the
//! binary: each refusal here happens before any GPU work, so it needs no
//! device. The messages name the mistake once, in words, with the fix.

use std::path::Path;

use crate::common::cli::{physfit, refused};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn an_unquoted_splats_pattern_gets_a_hint_to_quote_it() {
    let out = tempfile::tempdir().unwrap();
    let a = out.path().join("frame_0000.ply");
    let b = out.path().join("frame_0001.ply");
    let run = physfit(
        repo(),
        &[
            "render",
            "scenes/fox.toml",
            "--splats",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.path().join("r").to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(
        stderr.contains("quote the pattern") && stderr.contains("frame_*.ply'"),
        "{stderr}"
    );
}

#[test]
fn side_by_side_with_an_orbit_is_refused_saying_why() {
    let out = tempfile::tempdir().unwrap();
    let run = physfit(
        repo(),
        &[
            "render",
            "scenes/fox.toml",
            "--params",
            out.path().join("drivers.safetensors").to_str().unwrap(),
            "--side-by-side",
            "--orbit",
            "30",
            "--out",
            out.path().join("r").to_str().unwrap(),
        ],
    );
    let stderr = refused(&run);
    assert!(
        stderr.contains("--orbit 30") && stderr.contains("fixed camera") && stderr.contains("fix:"),
        "{stderr}"
    );
}

#[test]
fn simulate_takes_camera_and_names_the_views_in_words() {
    let out = tempfile::tempdir().unwrap();
    let run = physfit(
        repo(),
        &[
            "simulate",
            "scenes/fox.toml",
            "--velocity",
            "0,1,0",
            "--camera",
            "back",
            "--out",
            out.path().join("s").to_str().unwrap(),
        ],
    );
    let stderr = refused(&run);
    assert!(
        stderr.contains("2 views, named front, face and numbered 0 to 1"),
        "{stderr}"
    );
    assert!(!stderr.contains("0..2"), "{stderr}");
}

#[test]
fn a_table_name_with_an_empty_part_gets_a_fix_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("scenes/fox.toml"))
        .unwrap()
        .replacen("[fit.velocity]", "[fit.]", 1);
    std::fs::write(dir.path().join("typo.toml"), text).unwrap();
    let stderr = refused(&physfit(dir.path(), &["check", "typo.toml"]));
    assert!(
        stderr.contains("`[fit.]`") && stderr.contains("\nfix: "),
        "{stderr}"
    );
}
