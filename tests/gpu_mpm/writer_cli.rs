//! The one writer discipline of every command that writes, end to end
//! (docs/design.md § Output directories): an output directory over the
//! command's inputs, at a root or at home is refused with or without
//! `--force`; nothing is written through a linked folder; one run per
//! directory; SIGINT and SIGTERM stop every command at a safe point,
//! leaving nothing partial; a staging folder a killed run left is removed
//! by the next, saying so.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::cli::{ok, physfit, refused};
use crate::synth_cli::{fixture, scene_toml, synth};

/// Runs `physfit args…` in `dir` with `env` set.
fn physfit_with(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .expect("run physfit")
}

/// The fixture with frames made by synth (`synth/<view>/frame_NNNN.png`)
/// and a scene naming them, `framed.toml`.
fn framed() -> tempfile::TempDir {
    let dir = fixture();
    let d = dir.path();
    ok(&synth(d, &["--same-discretisation", "--quiet"]));
    std::fs::write(d.join("framed.toml"), scene_toml(true)).unwrap();
    dir
}

/// Every path under `dir`, relative, sorted, with its bytes (folders empty).
pub(crate) fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        for entry in std::fs::read_dir(&p).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() && !path.is_symlink() {
                todo.push(path);
                all.push((name, Vec::new()));
            } else {
                all.push((name, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    all.sort();
    all
}

#[test]
fn an_out_over_the_inputs_at_a_root_or_at_home_is_refused_even_with_force() {
    let dir = framed();
    let d = dir.path();
    let before = snapshot(d);
    let velocity = ["--velocity", "0.1,0,0", "--frames", "2"];
    for (args, says) in [
        (
            vec!["render", "scene.toml", "--out", ".", "--force"],
            "holds scene.toml",
        ),
        (
            [
                &["simulate", "scene.toml", "--out", ".", "--force"][..],
                &velocity[..],
            ]
            .concat(),
            "holds scene.toml",
        ),
        // The reference frames a scene names: render and align read them.
        (
            vec!["render", "framed.toml", "--out", "synth/front", "--force"],
            "holds synth/front",
        ),
        (
            vec![
                "align",
                "framed.toml",
                "--out",
                "synth/front/sub",
                "--force",
            ],
            "lies inside synth/front",
        ),
        (
            vec!["align", "framed.toml", "--out", ".", "--force"],
            "holds framed.toml",
        ),
        (
            vec!["fit", "framed.toml", "--out", ".", "--force"],
            "holds framed.toml",
        ),
        (
            vec![
                "synth",
                "scene.toml",
                "--truth",
                "truth.toml",
                "--out",
                ".",
                "--force",
            ],
            "holds scene.toml",
        ),
        (
            vec!["render", "scene.toml", "--out", "/", "--force"],
            "file system root",
        ),
    ] {
        let stderr = refused(&physfit(d, &args));
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(snapshot(d), before, "{args:?}: nothing written");
    }
    std::fs::create_dir(d.join("home")).unwrap();
    let stderr = refused(&physfit_with(
        d,
        &[("HOME", d.join("home").to_str().unwrap())],
        &["render", "scene.toml", "--out", "home/.", "--force"],
    ));
    assert!(stderr.contains("is the home directory"), "{stderr}");
    assert_eq!(std::fs::read_dir(d.join("home")).unwrap().count(), 0);
}

#[cfg(unix)]
#[test]
fn nothing_is_written_through_a_linked_folder() {
    let dir = fixture();
    let d = dir.path();
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    std::fs::write(d.join("elsewhere/frame_0000.png"), "theirs").unwrap();
    std::os::unix::fs::symlink(d.join("elsewhere"), d.join("out/front")).unwrap();
    let stderr = refused(&physfit(
        d,
        &[
            "simulate",
            "scene.toml",
            "--velocity",
            "0.1,0,0",
            "--frames",
            "2",
            "--out",
            "out",
            "--force",
        ],
    ));
    assert!(
        stderr.contains("out/front is a symbolic link") && stderr.contains("never writes through"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("elsewhere/frame_0000.png")).unwrap(),
        "theirs"
    );
    assert_eq!(std::fs::read_dir(d.join("elsewhere")).unwrap().count(), 1);
}

#[test]
fn one_run_per_directory_and_a_second_is_refused_naming_the_first() {
    let dir = framed();
    let d = dir.path();
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let first = physfit::io::run_lock::RunLock::take(&out, "fit").unwrap();
    for args in [
        vec!["render", "scene.toml", "--out", "out"],
        vec!["fit", "framed.toml", "--out", "out"],
    ] {
        let stderr = refused(&physfit(d, &args));
        assert!(
            stderr.contains("being written by another physfit run")
                && stderr.contains(&format!("`physfit fit`, process {}", std::process::id())),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "the lock only");
    drop(first);
    ok(&physfit(
        d,
        &["render", "scene.toml", "--out", "out", "--quiet"],
    ));
    assert!(out.join("front.png").exists() && !out.join(".physfit.lock").exists());
}

#[test]
fn a_directory_that_cannot_be_written_is_refused_before_any_work() {
    let dir = framed();
    let d = dir.path();
    std::fs::write(d.join("a-file"), "mine").unwrap();
    let stderr = refused(&physfit(d, &["fit", "framed.toml", "--out", "a-file/out"]));
    assert!(
        stderr.contains("creating the output directory a-file/out"),
        "{stderr}"
    );
    assert!(!stderr.contains("fitting"), "{stderr}");
}

/// What an interrupted run into `out` left: the exit status, stderr.
fn interrupted(d: &Path, hook: &str, args: &[&str]) -> (Option<i32>, String) {
    let run = physfit_with(d, &[("PHYSFIT_TEST_INTERRUPT_AT", hook)], args);
    (
        run.status.code(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

#[test]
fn sigint_and_sigterm_stop_every_command_at_a_safe_point_writing_nothing() {
    let dir = framed();
    let d = dir.path();
    let velocity = ["--velocity", "0.1,0,0", "--frames", "3"];
    let synth_args = [
        "--truth",
        "truth.toml",
        "--same-discretisation",
        "--frames",
        "3",
    ];
    for (command, hook, rest) in [
        ("simulate", "simulate@1", &velocity[..]),
        ("simulate", "write@1", &velocity[..]),
        ("synth", "simulate@1", &synth_args[..]),
        ("synth", "render@2", &synth_args[..]),
        ("render", "render@1", &[][..]),
        ("align", "align@1", &[][..]),
    ] {
        let scene = if command == "align" {
            "framed.toml"
        } else {
            "scene.toml"
        };
        for (signal, status) in [("", 130), (",term", 143)] {
            let hook = format!("{hook}{signal}");
            // Into a directory it creates: removed again.
            let args = [&[command, scene, "--out", "new"][..], rest].concat();
            let (code, stderr) = interrupted(d, &hook, &args);
            assert_eq!(code, Some(status), "{command} {hook}: {stderr}");
            assert!(
                stderr.contains("interrupted: stopping at the next safe point")
                    && stderr.contains(
                        "interrupted: nothing was written; new, which this run created, is removed"
                    ),
                "{command} {hook}: {stderr}"
            );
            assert!(
                !d.join("new").exists(),
                "{command} {hook}: no directory left"
            );
            // Into one of the user's: left as it was.
            std::fs::create_dir_all(d.join("mine")).unwrap();
            std::fs::write(d.join("mine/notes.txt"), "mine").unwrap();
            let args = [&[command, scene, "--out", "mine"][..], rest].concat();
            let (code, stderr) = interrupted(d, &hook, &args);
            assert_eq!(code, Some(status), "{command} {hook}: {stderr}");
            assert!(
                stderr.contains("mine is as it was"),
                "{command} {hook}: {stderr}"
            );
            assert_eq!(
                snapshot(&d.join("mine")),
                [("notes.txt".to_string(), b"mine".to_vec())],
                "{command} {hook}"
            );
        }
    }
}

#[test]
fn a_staging_folder_left_by_a_killed_run_is_removed_saying_so() {
    let dir = fixture();
    let d = dir.path();
    let stale = d.join("out/.physfit-render.staging");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("front.png"), "partial").unwrap();
    // A second signal exits at once, as a kill would: the staging folder stays.
    let (code, stderr) = interrupted(
        d,
        "render@1,term,twice",
        &["render", "scene.toml", "--out", "cut"],
    );
    assert_eq!(code, Some(143), "{stderr}");
    assert!(stderr.contains("exiting at once"), "{stderr}");
    let stderr = ok(&physfit(d, &["render", "scene.toml", "--out", "out"]));
    assert!(
        stderr.contains("removed out/.physfit-render.staging")
            && stderr.contains("interrupted `physfit render`"),
        "{stderr}"
    );
    assert!(!stale.exists());
    assert!(d.join("out/front.png").exists());
    ok(&physfit(
        d,
        &["render", "scene.toml", "--out", "cut", "--quiet"],
    ));
    let left: Vec<_> = std::fs::read_dir(d.join("cut"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
