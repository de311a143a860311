//! `DIR/scene.toml`: the user's scene with only what alignment refined
//! changed, edited with `toml_edit` so that comments and layout stay.
//!
//! - Every relative path (`gaussians.path`, a view's `frames`, `masks` and
//!   `camera.transforms`, a region's `points`, `output.directory`) is
//!   rewritten to resolve from DIR to the same file; an `[output]` without
//!   `directory` gets the one it resolved to, so a fit of the aligned scene
//!   writes where the original's would.
//! - An aligned view's camera gets inline `rotation` and `translation`
//!   (and `fx`, `fy` when the focal length was fitted). A camera given by
//!   `position`/`look_at`/`up` or by a nerfstudio `transforms` file is
//!   replaced by the inline form (with its intrinsics, for `transforms`),
//!   under a comment naming what it replaced.
//! - A view whose colour was fitted gets `color_correction = { gain, offset }`.

use std::path::{Component, Path, PathBuf};

use toml_edit::visit_mut::{visit_table_like_kv_mut, VisitMut};
use toml_edit::{value, Array, DocumentMut, Formatted, InlineTable, Item, KeyMut, Value};

use crate::scene::{Camera, ColorCorrection};

use super::error::AlignError;

/// Keys whose string values are paths relative to the scene file.
const PATH_KEYS: [&str; 6] = [
    "path",
    "frames",
    "masks",
    "transforms",
    "points",
    "directory",
];

/// What to write for one view.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewEdit {
    /// Index in `[[views]]`.
    pub index: usize,
    /// The aligned camera.
    pub camera: Camera,
    /// Write its focal lengths too.
    pub focal: bool,
    /// The colour correction to write, when fitted.
    pub color: Option<ColorCorrection>,
}

/// `path` with `.` and `..` resolved lexically (it may hold glob characters,
/// so it cannot be canonicalised).
fn normalised(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `target` relative to the directory `base` (both absolute, normalised).
fn relative(target: &Path, base: &Path) -> PathBuf {
    let (t, b): (Vec<_>, Vec<_>) = (target.components().collect(), base.components().collect());
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

struct PathRewriter<'a> {
    from: &'a Path,
    to: &'a Path,
}

impl PathRewriter<'_> {
    fn rewrite(&self, written: &str) -> String {
        let p = Path::new(written);
        if p.is_absolute() {
            return written.to_string();
        }
        let target = normalised(&self.from.join(p));
        relative(&target, self.to)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

impl VisitMut for PathRewriter<'_> {
    fn visit_table_like_kv_mut(&mut self, key: KeyMut<'_>, node: &mut Item) {
        if PATH_KEYS.contains(&key.get()) {
            if let Some(Value::String(s)) = node.as_value_mut() {
                let decor = s.decor().clone();
                let mut new = Formatted::new(self.rewrite(s.value()));
                *new.decor_mut() = decor;
                *s = new;
                return;
            }
        }
        visit_table_like_kv_mut(self, key, node);
    }
}

/// Shortest decimal that reads back as the same f32.
fn number(v: f32) -> Value {
    let f: f64 = format!("{v}").parse().expect("a float prints as a float");
    Value::from(f)
}

fn vector(v: [f32; 3]) -> Value {
    Value::Array(v.iter().map(|&x| number(x)).collect::<Array>())
}

fn matrix_rows(camera: &Camera) -> Value {
    let r = camera.rotation;
    let mut rows = Array::new();
    for i in 0..3 {
        rows.push(vector(r.row(i).to_array()));
    }
    Value::Array(rows)
}

fn edit_view(doc: &mut DocumentMut, edit: &ViewEdit, scene_path: &Path) -> Result<(), AlignError> {
    let bad = |message: String| AlignError::SceneEdit {
        path: scene_path.to_path_buf(),
        message,
    };
    let views = doc
        .get_mut("views")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or_else(|| bad("no [[views]] array of tables to edit".into()))?;
    let view = views
        .get_mut(edit.index)
        .ok_or_else(|| bad(format!("no views[{}]", edit.index)))?;
    if let Some(color) = edit.color {
        let mut t = InlineTable::new();
        t.insert("gain", vector(color.gain));
        t.insert("offset", vector(color.offset));
        view.insert("color_correction", value(t));
    }
    let inline = view
        .get("camera")
        .is_some_and(|c| c.is_inline_table() || c.is_value());
    let camera = view
        .get_mut("camera")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| bad(format!("views[{}].camera is not a table", edit.index)))?;
    let mut replaced = Vec::new();
    if let Some(file) = camera.remove("transforms") {
        let frame = camera
            .remove("frame")
            .and_then(|f| f.as_integer())
            .unwrap_or(0);
        let file = file.as_str().unwrap_or("?").to_string();
        replaced.push(format!("transforms = \"{file}\", frame = {frame}"));
        let c = &edit.camera;
        camera.insert("width", value(i64::from(c.width)));
        camera.insert("height", value(i64::from(c.height)));
        camera.insert("cx", Item::Value(number(c.cx)));
        camera.insert("cy", Item::Value(number(c.cy)));
        camera.insert("fx", Item::Value(number(c.fx)));
        camera.insert("fy", Item::Value(number(c.fy)));
    }
    let mut look = Vec::new();
    for key in ["position", "look_at", "up"] {
        if let Some(old) = camera.remove(key) {
            let text = old.as_value().map(|v| v.to_string()).unwrap_or_default();
            look.push(format!("{key} = {}", text.trim()));
        }
    }
    if !look.is_empty() {
        replaced.push(look.join(", "));
    }
    camera.insert("rotation", Item::Value(matrix_rows(&edit.camera)));
    camera.insert(
        "translation",
        Item::Value(vector(edit.camera.translation.to_array())),
    );
    if edit.focal {
        camera.insert("fx", Item::Value(number(edit.camera.fx)));
        camera.insert("fy", Item::Value(number(edit.camera.fy)));
    }
    let comment = if replaced.is_empty() {
        "# Pose refined by `physfit align`.\n".to_string()
    } else {
        format!(
            "# Pose refined by `physfit align`; it replaced {}.\n",
            replaced.join("; ")
        )
    };
    // A comment inside an inline table is not TOML 1.0: put it above the
    // `camera = { … }` line instead.
    if inline {
        if let Some(mut key) = view.key_mut("camera") {
            key.leaf_decor_mut().set_prefix(comment);
        }
    } else if let Some(mut key) = camera.key_mut("rotation") {
        key.leaf_decor_mut().set_prefix(comment);
    }
    Ok(())
}

/// The text of the aligned scene for `out_dir` (module doc). `scene_path`
/// is the original file, `output_dir` the output directory it resolved to.
pub fn edited_scene(
    scene_path: &Path,
    output_dir: &Path,
    out_dir: &Path,
    edits: &[ViewEdit],
) -> Result<String, AlignError> {
    let text = std::fs::read_to_string(scene_path).map_err(AlignError::io(scene_path))?;
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| AlignError::SceneEdit {
                path: scene_path.to_path_buf(),
                message: e.to_string(),
            })?;
    let absolute = |p: &Path| -> Result<PathBuf, AlignError> {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().map_err(AlignError::io(p))?.join(p)
        };
        Ok(normalised(&p))
    };
    let from = absolute(scene_path.parent().unwrap_or(Path::new(".")))?;
    let to = absolute(out_dir)?;
    let rewriter = &mut PathRewriter {
        from: &from,
        to: &to,
    };
    rewriter.visit_document_mut(&mut doc);
    let has_directory = doc.get("output").and_then(|o| o.get("directory")).is_some();
    if !has_directory {
        let target = relative(&absolute(output_dir)?, &to);
        let output = doc
            .entry("output")
            .or_insert(toml_edit::table())
            .as_table_like_mut()
            .ok_or_else(|| AlignError::SceneEdit {
                path: scene_path.to_path_buf(),
                message: "`output` is not a table".into(),
            })?;
        output.insert(
            "directory",
            value(target.to_string_lossy().replace('\\', "/")),
        );
    }
    for edit in edits {
        edit_view(&mut doc, edit, scene_path)?;
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_from_the_new_directory() {
        assert_eq!(
            relative(Path::new("/a/b/c.ply"), Path::new("/a/x/y")),
            PathBuf::from("../../b/c.ply")
        );
        assert_eq!(
            normalised(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        let r = PathRewriter {
            from: Path::new("/w/scenes"),
            to: Path::new("/w/out/aligned"),
        };
        assert_eq!(
            r.rewrite("fox_frames/front/frame_000[0-4].png"),
            "../../scenes/fox_frames/front/frame_000[0-4].png"
        );
        assert_eq!(r.rewrite("../assets/fox.ply"), "../../assets/fox.ply");
        assert_eq!(r.rewrite("/abs/x.ply"), "/abs/x.ply");
    }

    fn camera() -> Camera {
        Camera {
            width: 640,
            height: 480,
            fx: 500.5,
            fy: 500.5,
            cx: 320.0,
            cy: 240.0,
            rotation: glam::Mat3::IDENTITY,
            translation: glam::Vec3::new(0.25, -0.5, 3.0),
            near: 0.01,
        }
    }

    #[test]
    fn a_transforms_camera_becomes_inline_with_a_comment_and_the_rest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let scenes = dir.path().join("scenes");
        std::fs::create_dir(&scenes).unwrap();
        let scene = scenes.join("s.toml");
        std::fs::write(
            &scene,
            r#"# my scene
[gaussians]
path = "../assets/obj.ply"   # the splats

[[views]]
name = "phone"
frames = "video/*.png"
camera = { transforms = "capture/transforms.json", frame = 3 }

[[views]]
name = "other"
frames = "other"
[views.camera]
width = 640
height = 480
fx = 500.0
position = [0.0, -3.0, 0.0]
look_at = [0.0, 0.0, 0.0]
up = [0.0, 0.0, 1.0]

[regions]
simulated = [{ points = "pts.ply", radius = 0.1 }]
"#,
        )
        .unwrap();
        let out = dir.path().join("aligned");
        std::fs::create_dir(&out).unwrap();
        let edits = [
            ViewEdit {
                index: 0,
                camera: camera(),
                focal: false,
                color: Some(ColorCorrection {
                    gain: [0.9, 1.0, 1.1],
                    offset: [0.01, 0.0, -0.02],
                }),
            },
            ViewEdit {
                index: 1,
                camera: camera(),
                focal: true,
                color: None,
            },
        ];
        let text = edited_scene(&scene, &scenes.join("output"), &out, &edits).unwrap();
        assert!(text.starts_with("# my scene"), "{text}");
        assert!(
            text.contains(r#"path = "../assets/obj.ply"   # the splats"#),
            "{text}"
        );
        assert!(
            text.contains(r#"frames = "../scenes/video/*.png""#),
            "{text}"
        );
        assert!(text.contains(r#"points = "../scenes/pts.ply""#), "{text}");
        assert!(text.contains(r#"directory = "../scenes/output""#), "{text}");
        assert!(
            text.contains(
                r#"it replaced transforms = "../scenes/capture/transforms.json", frame = 3"#
            ),
            "{text}"
        );
        assert!(
            text.contains("it replaced position = [0.0, -3.0, 0.0]"),
            "{text}"
        );
        assert!(
            text.contains("color_correction = { gain = [0.9, 1.0, 1.1]"),
            "{text}"
        );
        let doc: DocumentMut = text.parse().unwrap();
        let phone = &doc["views"][0]["camera"];
        assert_eq!(phone["width"].as_integer(), Some(640));
        assert_eq!(phone["fx"].as_float(), Some(500.5));
        assert_eq!(phone["translation"][2].as_float(), Some(3.0));
        assert!(phone.get("transforms").is_none() && phone.get("frame").is_none());
        let other = &doc["views"][1]["camera"];
        assert!(other.get("look_at").is_none() && other.get("position").is_none());
        assert_eq!(other["fx"].as_float(), Some(500.5));
        assert_eq!(other["rotation"][1][1].as_float(), Some(1.0));
    }
}
