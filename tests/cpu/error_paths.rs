//! The library's typed errors print their paths as a user would type them
//! from the working directory (`physfit::io::shown`): a path joined from a
//! scene's directory and a `../out/fox` it names reads `out/fox/…`, not
//! `scenes/../out/fox/…`.

use std::path::Path;

use physfit::fit::SessionError;
use physfit::synth::Truth;

#[test]
fn a_session_error_shows_its_path_normalised() {
    let error =
        SessionError::io("scenes/../out/fox/checkpoint.json")(std::io::Error::other("disk full"));
    let text = error.to_string();
    assert!(
        text.starts_with("out/fox/checkpoint.json: "),
        "normalised and relative: {text}"
    );
    assert!(!text.contains(".."), "{text}");
}

#[test]
fn a_truth_file_error_shows_its_path_normalised() {
    // Not TOML: refused naming the file, as typed.
    let error = Truth::parse("frames = [", Path::new("scenes/../truth.toml"), [3.0, 6.0])
        .expect_err("not TOML");
    let text = error.to_string();
    assert!(text.starts_with("truth.toml: "), "{text}");
    assert!(!text.contains(".."), "{text}");

    // A missing file outside the working directory keeps its absolute
    // form, normalised.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("sub").join("..").join("missing.toml");
    let error = Truth::load(&missing, [3.0, 6.0]).expect_err("no such file");
    let text = error.to_string();
    let expected = dir.path().join("missing.toml");
    assert!(
        text.starts_with(&format!("{}: cannot read", expected.display())),
        "{text}"
    );
    assert!(!text.contains(".."), "{text}");
}
