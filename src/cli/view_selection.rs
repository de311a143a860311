//! The views a `--camera NAME|INDEX` list selects from a scene, shared by
//! `render`, `simulate` and `align`.

use std::path::Path;

use anyhow::{Context, Result};

use physfit::io::shown;
use physfit::scene::Camera;
use physfit::scene::Scene;

use super::count::count;

/// The views `cameras` names (names or 0-based numbers; all views when
/// empty), each with its camera at `size`.
pub fn resolve_views(
    scene: &Scene,
    scene_path: &Path,
    cameras: &[String],
    size: Option<(u32, u32)>,
) -> Result<Vec<(String, Camera)>> {
    let indices = view_indices(scene, scene_path, cameras)?;
    Ok(indices
        .into_iter()
        .map(|i| {
            let view = &scene.views[i];
            let camera = match size {
                Some((w, h)) => view.camera.resized(w, h),
                None => view.camera.clone(),
            };
            (view.name.clone(), camera)
        })
        .collect())
}

/// The indices of the views `cameras` names (names or 0-based numbers, as
/// `--camera` takes them; every view when empty).
pub fn view_indices(scene: &Scene, scene_path: &Path, cameras: &[String]) -> Result<Vec<usize>> {
    if cameras.is_empty() {
        return Ok((0..scene.views.len()).collect());
    }
    cameras
        .iter()
        .map(|c| {
            scene
                .views
                .iter()
                .position(|v| v.name == *c)
                .or_else(|| c.parse::<usize>().ok().filter(|&i| i < scene.views.len()))
                .with_context(|| {
                    let names: Vec<&str> = scene.views.iter().map(|v| v.name.as_str()).collect();
                    format!(
                        "--camera {c}: {} has {}, named {} and numbered {}; fix: give one \
                         of those names or numbers",
                        shown(scene_path),
                        count(scene.views.len(), "view", "views"),
                        names.join(", "),
                        match scene.views.len() {
                            1 => "0".to_string(),
                            n => format!("0 to {}", n - 1),
                        }
                    )
                })
        })
        .collect()
}
