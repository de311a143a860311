//! Running the `physfit` binary in tests.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `physfit args…` in `dir` (warnings and errors logged only) and
/// waits for it.
pub fn physfit(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

/// The stderr of a run that must have succeeded (panics with it otherwise).
pub fn ok(run: &Output) -> String {
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{stderr}");
    stderr
}

/// The stderr of a run that must have been refused: exit status 1, the
/// status of an error the run reports (panics with the stderr otherwise).
pub fn refused(run: &Output) -> String {
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    stderr
}
