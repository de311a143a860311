//! Which parts of physfit's discretisation move the optimum of its own
//! loss away from a twin's true E (docs/benchmarks.md, "What moves E").
//!
//! For a twin whose truth is a two-valued E (a box region and the rest)
//! and a uniform v0, and for variants of the scene's discretisation taken
//! one at a time (drivers per occupied cell, substeps, grid), this finds
//! the (box, rest) log10 E that minimise the fit's loss at the truth's v0,
//! on the frames and views the stiffness stage fits: a coarse scan of the
//! box value, a parabola through the three best points, then the same for
//! the rest at that box value, then the box again. The optimum is what a
//! fit converges to when v0 is right, so its distance from the truth is
//! the bias the discretisation puts into E.
//!
//! ```sh
//! PHYSFIT_DISC_TWIN=demo cargo test --release --test gpu_mpm \
//!     discretisation_scan -- --ignored --nocapture
//! ```
//!
//! `PHYSFIT_DISC_TWIN` is `demo` (scenes/fox.toml, scenes/fox_truth.toml)
//! or `xsim` (scenes/xsim/); `PHYSFIT_DISC_VARIANTS` a comma-separated
//! subset of the variant names printed (all by default).

use std::path::{Path, PathBuf};
use std::time::Instant;

use physfit::drive::DriverSet;
use physfit::fit::{FitProblem, FitProblemOptions, Selection};
use physfit::scene::Scene;
use physfit::synth::Truth;

use crate::common::gpu;

/// One variant: a name and the scene keys it sets (`table.key`, TOML
/// value; `Item::None` removes the key).
struct Variant {
    name: String,
    keys: Vec<(&'static str, &'static str, toml_edit::Item)>,
}

fn variant(name: &str, keys: Vec<(&'static str, &'static str, toml_edit::Item)>) -> Variant {
    Variant {
        name: name.to_string(),
        keys,
    }
}

fn int(v: i64) -> toml_edit::Item {
    toml_edit::value(v)
}

/// The scene with `keys` set, written beside the original (so that its
/// relative paths hold) under a hidden name removed on drop.
struct VariantScene(PathBuf);

impl VariantScene {
    fn write(scene: &Path, name: &str, keys: &[(&str, &str, toml_edit::Item)]) -> Self {
        let text = std::fs::read_to_string(scene).unwrap();
        let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
        for (table, key, value) in keys {
            if value.is_none() {
                doc[table].as_table_mut().unwrap().remove(key);
            } else {
                doc[table][key] = value.clone();
            }
        }
        let path = scene.with_file_name(format!(".discretisation-{name}.toml"));
        std::fs::write(&path, doc.to_string()).unwrap();
        Self(path)
    }
}

impl Drop for VariantScene {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The truth file's text with its default and first box's log10 E set.
fn truth_with(text: &str, rest: f64, boxed: f64) -> String {
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    doc["youngs"]["default"] = toml_edit::value(rest);
    let boxes = doc["youngs"]["boxes"].as_array_mut().unwrap();
    let first = boxes.get_mut(0).unwrap().as_inline_table_mut().unwrap();
    first.insert("log10", toml_edit::Value::from(boxed));
    doc.to_string()
}

/// The truth's (rest, box) log10 E.
fn truth_values(text: &str) -> (f64, f64) {
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let rest = doc["youngs"]["default"].as_float().unwrap();
    let boxed = doc["youngs"]["boxes"].as_array().unwrap().get(0).unwrap();
    let boxed = boxed.as_inline_table().unwrap()["log10"]
        .as_float()
        .unwrap();
    (rest, boxed)
}

/// The vertex of the parabola through three equally spaced points
/// `(x − h, a), (x, b), (x + h, c)`, kept within `x ± h`.
fn vertex(x: f64, h: f64, (a, b, c): (f64, f64, f64)) -> f64 {
    let curvature = a - 2.0 * b + c;
    if curvature <= 0.0 {
        return if a < c { x - h } else { x + h };
    }
    x + (0.5 * h * (a - c) / curvature).clamp(-h, h)
}

struct Scanner<'a> {
    problem: FitProblem,
    ctx: &'a physfit::gpu::GpuContext,
    drivers: DriverSet,
    truth_text: String,
    truth_path: PathBuf,
    range: [f64; 2],
    selection: Selection,
    evaluations: usize,
    seconds: f64,
}

impl Scanner<'_> {
    fn loss(&mut self, rest: f64, boxed: f64) -> f64 {
        // Inside the scene's E range, which the truth file must respect.
        let inside = |v: f64| v.clamp(self.range[0] + 1e-3, self.range[1] - 1e-3);
        let (rest, boxed) = (inside(rest), inside(boxed));
        let text = truth_with(&self.truth_text, rest, boxed);
        let truth = Truth::parse(&text, &self.truth_path, self.range).unwrap();
        let values = truth.per_driver(&self.drivers);
        let start = Instant::now();
        let report = self
            .problem
            .loss_of_drivers(
                self.ctx,
                &values.log10_youngs,
                &values.velocity,
                &self.selection,
            )
            .unwrap();
        self.seconds += start.elapsed().as_secs_f64();
        self.evaluations += 1;
        if std::env::var_os("PHYSFIT_DISC_VERBOSE").is_some() {
            println!("    rest {rest:.3} box {boxed:.3}: loss {:.5}", report.loss);
        }
        report.loss
    }

    /// The minimiser of `f` near `centre`: the best of `offsets`, then the
    /// parabola through it and its neighbours `step` away.
    fn minimise(
        &mut self,
        centre: f64,
        offsets: &[f64],
        step: f64,
        f: impl Fn(&mut Self, f64) -> f64,
    ) -> f64 {
        let mut best = (f64::INFINITY, centre);
        for o in offsets {
            let x = centre + o;
            let l = f(self, x);
            if l < best.0 {
                best = (l, x);
            }
        }
        let x = best.1;
        let (a, c) = (f(self, x - step), f(self, x + step));
        vertex(x, step, (a, best.0, c))
    }
}

#[test]
#[ignore = "minutes to hours on a CPU: the figures of docs/benchmarks.md (module doc)"]
fn discretisation_scan() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let twin = std::env::var("PHYSFIT_DISC_TWIN").unwrap_or_else(|_| "demo".into());
    let (scene_path, truth_path) = match twin.as_str() {
        "demo" => (
            repo.join("scenes/fox.toml"),
            repo.join("scenes/fox_truth.toml"),
        ),
        "xsim" => (
            repo.join("scenes/xsim/xsim.toml"),
            repo.join("scenes/xsim/truth.toml"),
        ),
        other => panic!("PHYSFIT_DISC_TWIN={other}: use demo or xsim"),
    };
    let base = Scene::load(&scene_path).unwrap();
    let cells = base.drivers.occupied_cells as i64;
    let substeps = base.simulation.substeps as i64;
    let grid = base.simulation.grid_res as i64;
    let mut variants = vec![
        variant("scene", vec![]),
        variant("drivers 2/cell", vec![("drivers", "count", int(2 * cells))]),
        variant("drivers 8/cell", vec![("drivers", "count", int(8 * cells))]),
        variant(
            "drivers 16/cell",
            vec![("drivers", "count", int(16 * cells))],
        ),
        variant(
            "drivers 1/splat",
            vec![("drivers", "fraction", toml_edit::value(1.0))],
        ),
        variant(
            "substeps x2",
            vec![("simulation", "substeps", int(2 * substeps))],
        ),
        variant(
            "substeps x4",
            vec![("simulation", "substeps", int(4 * substeps))],
        ),
        variant(
            "grid x1.5",
            vec![("simulation", "grid_res", int(grid * 3 / 2))],
        ),
        variant("grid x2", vec![("simulation", "grid_res", int(grid * 2))]),
        // The demo's frames were simulated at twice the drivers and twice
        // the substeps (scenes/fox_frames/synth.json): there, physfit's
        // optimum must sit on the truth.
        variant(
            "drivers 8/cell substeps x2",
            vec![
                ("drivers", "count", int(8 * cells)),
                ("simulation", "substeps", int(2 * substeps)),
            ],
        ),
    ];
    if let Ok(names) = std::env::var("PHYSFIT_DISC_VARIANTS") {
        let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
        variants.retain(|v| wanted.contains(&v.name.as_str()));
    }
    let truth_text = std::fs::read_to_string(&truth_path).unwrap();
    let (rest_true, box_true) = truth_values(&truth_text);
    let ctx = gpu();
    println!(
        "twin {twin}: truth rest {rest_true}, box {box_true}; optimum of the loss at the truth's v0"
    );
    println!(
        "| variant | drivers | grid | substeps | rest | box | Δ rest | Δ box | loss | s per evaluation |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for v in &variants {
        // "drivers 1/splat" replaces count with fraction: drop count.
        let mut keys = v.keys.clone();
        if keys.iter().any(|(_, k, _)| *k == "fraction") {
            keys.push(("drivers", "count", toml_edit::Item::None));
        }
        let written = VariantScene::write(&scene_path, &v.name.replace([' ', '/'], "_"), &keys);
        let scene = Scene::load(&written.0).unwrap();
        let drivers = DriverSet::from_scene(&scene).unwrap();
        let options =
            FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.stiffness).unwrap();
        let problem = FitProblem::from_drivers(&ctx, &scene, drivers.clone(), &options).unwrap();
        let available = scene.views[0].frames.as_ref().unwrap().paths.len();
        let selection = Selection {
            frames: scene.fit.stiffness.fitted_frames(available).collect(),
            views: (0..scene.views.len()).collect(),
        };
        let mut s = Scanner {
            problem,
            ctx: &ctx,
            drivers,
            truth_text: truth_text.clone(),
            truth_path: truth_path.clone(),
            range: scene.material.log10_youngs_range,
            selection,
            evaluations: 0,
            seconds: 0.0,
        };
        let box_offsets = [-0.4, -0.2, 0.0, 0.2, 0.4, 0.6];
        let boxed = s.minimise(box_true, &box_offsets, 0.1, |s, x| s.loss(rest_true, x));
        let boxed = boxed.clamp(s.range[0] + 0.1, s.range[1] - 0.1);
        let rest = s.minimise(rest_true, &[-0.2, 0.0, 0.2], 0.1, |s, x| s.loss(x, boxed));
        let boxed = s.minimise(boxed, &[0.0], 0.05, |s, x| s.loss(rest, x));
        let loss = s.loss(rest, boxed);
        println!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:+.3} | {:+.3} | {:.5} | {:.2} |",
            v.name,
            scene.drivers.count,
            scene.simulation.grid_res,
            scene.simulation.substeps,
            rest,
            boxed,
            rest - rest_true,
            boxed - box_true,
            loss,
            s.seconds / s.evaluations as f64
        );
        assert!(loss.is_finite());
    }
}
