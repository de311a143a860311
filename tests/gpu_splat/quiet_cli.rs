//! What the binary prints beyond its own sentences: under `--quiet`
//! nothing at all on a successful run (no loader, adapter or `.ply`
//! warnings), a software adapter announced once per command otherwise,
//! and no Vulkan loader complaint when the process has no
//! `XDG_RUNTIME_DIR` (it gets a private one, removed at exit).

use std::path::Path;
use std::process::{Command, Output};

/// `physfit args…` from the crate root, with the user's default logging
/// (no `RUST_LOG`), `TMPDIR` at `tmp` and no `XDG_RUNTIME_DIR`.
fn physfit_plain(args: &[&str], tmp: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", tmp)
        .output()
        .expect("run physfit")
}

/// A small render of the demo's first view into `out`, then `more`.
fn render_args<'a>(out: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "render",
        "scenes/fox.toml",
        "--size",
        "32x24",
        "--camera",
        "0",
        "--out",
        out,
    ];
    args.extend_from_slice(more);
    args
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn quiet_render_and_check_print_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("q");
    let out = out.to_str().unwrap();
    let render = render_args(out, &["--quiet"]);
    for args in [
        &render[..],
        // The flag is global: before the command as well.
        &["--quiet", "check", "scenes/fox.toml"][..],
        &["info", "--quiet"][..],
    ] {
        let run = physfit_plain(args, tmp.path());
        let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
        assert!(run.status.success(), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?} printed on stderr");
        assert_eq!(stdout, "", "{args:?} printed on stdout");
    }
}

#[test]
fn a_software_adapter_is_announced_once_in_a_plain_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let run = physfit_plain(&render_args(out.to_str().unwrap(), &[]), tmp.path());
    let stderr = text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let software = stderr.matches("no hardware GPU found").count();
    // A hardware adapter announces nothing; a software one once.
    assert!(software <= 1, "{stderr}");
    for line in stderr.lines().filter(|l| l.contains("no hardware GPU")) {
        assert!(line.starts_with("warning: "), "not a plain line: {line}");
    }
    // The `.ply`'s clamped opacities are `check`'s to say, not render's.
    assert!(!stderr.contains("opacity"), "{stderr}");
    assert!(!stderr.contains(" INFO "), "{stderr}");
}

#[test]
fn without_xdg_runtime_dir_the_loader_is_silent_and_the_directory_goes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = physfit_plain(&["info"], tmp.path());
    let stderr = text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
    assert!(!text(&run.stdout).is_empty(), "info describes the adapter");
    // The private runtime directory was made in TMPDIR and removed at exit.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
