//! Every example of README.md and docs/*.md runs on the bundled data, so
//! that none goes stale: each fenced TOML block is marked with what it is
//! (the word after `toml` in its fence) and loaded as that, on the demo's
//! splats and frames in `scenes/`:
//!
//! | fence | what the test does |
//! | --- | --- |
//! | `toml scene` | a whole scene, saved in `scenes/`: [`Scene::load`] accepts it (what `physfit check` runs) |
//! | `toml scene-part` | some tables of a scene: merged into `scenes/fox.toml`, which must still load |
//! | `toml truth` | a truth file: [`Truth::load`] accepts it for the demo's E range |
//! | `toml interactions` | an interactions file: it parses, every impulse pushes the demo's tail, and no collider holds the demo's object at rest |
//! | `toml fragment` | deliberately partial: it must be TOML, nothing more |
//!
//! A TOML block without a mark fails the test. The commands of the `sh`
//! blocks name only files that exist, and their `--impulse` flags aim where
//! the demo's tail is; tests/gpu_mpm/doc_commands.rs runs them.

use crate::common::doc_blocks::{all_blocks, commands, repo, words};

use physfit::drive::DriverSet;
use physfit::interact::{InteractionFlags, Interactions};
use physfit::scene::{FieldSetting, Scene};
use physfit::synth::Truth;

/// A scratch copy of the repository's layout: `assets/` and every entry of
/// `scenes/` linked, so that a scene written to `scenes/` in it reads the
/// bundled data through the same relative paths.
fn scratch_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo().join("assets"), dir.path().join("assets")).unwrap();
    std::fs::create_dir(dir.path().join("scenes")).unwrap();
    for entry in std::fs::read_dir(repo().join("scenes")).unwrap() {
        let entry = entry.unwrap();
        std::os::unix::fs::symlink(
            entry.path(),
            dir.path().join("scenes").join(entry.file_name()),
        )
        .unwrap();
    }
    dir
}

/// Loads `text` as the scene file `scenes/example.toml` of a scratch copy.
fn load_scene(text: &str, place: &str) -> Scene {
    let dir = scratch_repo();
    let path = dir.path().join("scenes/example.toml");
    std::fs::write(&path, text).unwrap();
    Scene::load(&path).unwrap_or_else(|e| panic!("{place}: the scene is refused: {e}"))
}

/// `part`'s tables merged into `base`, key by key (a table into a table,
/// anything else replaced).
fn merged(base: &mut toml::Table, part: toml::Table) {
    for (key, value) in part {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(p)) => merged(b, p),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn demo() -> Scene {
    Scene::load(&repo().join("scenes/fox.toml")).unwrap()
}

/// Checks that `impulses` push the demo's tail: the free drivers within
/// each impulse's radius of its centre at rest (what `render --params`
/// pushes when the impulse starts at 0) are many, and most of them in the
/// demo's `tail` region; and that no added collider holds the demo's
/// simulated splats at rest.
fn check_aim(interactions: &Interactions, place: &str) {
    let scene = demo();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let FieldSetting::Regions(regions) = &scene.fit.stiffness.field else {
        panic!("the demo fits E by regions");
    };
    let tail = &regions.iter().find(|r| r.name == "tail").unwrap().region;
    let mut count = 0;
    for impulse in interactions.impulses() {
        count += 1;
        let pushed: Vec<[f32; 3]> = drivers
            .rest
            .iter()
            .zip(&drivers.anchored)
            .filter(|(_, anchored)| !**anchored)
            .map(|(p, _)| drivers.sim_box.to_world(*p))
            .filter(|p| {
                let d2: f64 = (0..3)
                    .map(|c| (f64::from(p[c]) - impulse.centre[c]).powi(2))
                    .sum();
                d2 <= impulse.radius * impulse.radius
            })
            .collect();
        let in_tail = pushed.iter().filter(|p| tail.contains(**p)).count();
        assert!(
            pushed.len() >= 10 && 2 * in_tail > pushed.len(),
            "{place}: the impulse at {:?} pushes {} free drivers of the demo, {in_tail} of \
             them in its tail; aim it at the tail",
            impulse.centre,
            pushed.len()
        );
    }
    interactions
        .check_colliders_clear(&scene)
        .unwrap_or_else(|e| panic!("{place}: {e}"));
    assert!(
        count > 0 || interactions.colliders().count() > 0,
        "{place}: no impulse or collider to check"
    );
}

#[test]
fn every_toml_example_is_marked_and_runs_on_the_bundled_data() {
    let scene = demo();
    let mut checked = 0;
    for block in all_blocks() {
        let Some(kind) = block.info.strip_prefix("toml") else {
            continue;
        };
        let place = &block.place;
        match kind.trim() {
            "scene" => {
                load_scene(&block.text, place);
            }
            "scene-part" => {
                let mut base: toml::Table =
                    toml::from_str(&std::fs::read_to_string(&scene.path).unwrap()).unwrap();
                let part: toml::Table = toml::from_str(&block.text)
                    .unwrap_or_else(|e| panic!("{place}: not TOML: {e}"));
                merged(&mut base, part);
                load_scene(&toml::to_string(&base).unwrap(), place);
            }
            "truth" => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("truth.toml");
                std::fs::write(&path, &block.text).unwrap();
                Truth::load(&path, scene.material.log10_youngs_range)
                    .unwrap_or_else(|e| panic!("{place}: the truth is refused: {e}"));
            }
            "interactions" => {
                let interactions = Interactions::parse(&block.text, place)
                    .unwrap_or_else(|e| panic!("{place}: refused: {e}"));
                check_aim(&interactions, place);
            }
            "fragment" => {
                toml::from_str::<toml::Table>(&block.text)
                    .unwrap_or_else(|e| panic!("{place}: not TOML: {e}"));
            }
            other => panic!(
                "{place}: a TOML example marked `{other}`; mark it `toml scene`, `toml \
                 scene-part`, `toml truth`, `toml interactions` or `toml fragment` \
                 (tests/cpu/doc_examples.rs)"
            ),
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} TOML examples found");
}

#[test]
fn the_documents_commands_name_files_that_exist_and_aim_at_the_tail() {
    let commands = commands();
    assert!(commands.len() >= 10, "{} commands found", commands.len());
    let known = [
        "info", "check", "align", "fit", "render", "simulate", "synth", "bench",
    ];
    let mut impulses = 0;
    for (place, args) in &commands {
        let command = args.first().map(String::as_str).unwrap_or("");
        assert!(known.contains(&command), "{place}: `physfit {command}`");
        for arg in args {
            // The bundled data, named from the repository's top.
            if arg.starts_with("scenes/") || arg.starts_with("assets/") {
                assert!(repo().join(arg).exists(), "{place}: {arg} does not exist");
            }
        }
        let flags = InteractionFlags {
            impulses: args
                .windows(2)
                .filter(|w| w[0] == "--impulse")
                .map(|w| w[1].clone())
                .collect(),
            ..InteractionFlags::default()
        };
        if !flags.impulses.is_empty() {
            let interactions = flags
                .interactions()
                .unwrap_or_else(|e| panic!("{place}: {e}"));
            check_aim(&interactions, place);
            impulses += 1;
        }
    }
    assert!(impulses >= 1, "the README's flick is checked");
}

#[test]
fn the_shell_words_of_a_command_keep_quoted_arguments_whole() {
    assert_eq!(
        words(r#"physfit render a.toml --impulse "centre=1,2,3;radius=0.1" --out 'x y'  # c"#),
        [
            "physfit",
            "render",
            "a.toml",
            "--impulse",
            "centre=1,2,3;radius=0.1",
            "--out",
            "x y"
        ]
    );
}
