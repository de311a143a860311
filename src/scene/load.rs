//! [`Scene::load`]: reads `scene.toml`, resolves every path relative to it,
//! loads the splats, cameras and frame sizes, and validates every setting
//! (errors name the file, the field and the fix; docs/scene.md), section
//! by section in the order the errors are reported.

use std::path::{Path, PathBuf};

use super::config::{GaussiansConfig, ReferenceConfig, SceneConfig, ViewConfig};
use super::drivers::resolve_drivers;
use super::error::SceneError;
use super::fit_field::{poisson_bound, resolve_poisson_range, PoissonRange, FITTED_POISSON_MAX};
use super::fit_settings::resolve_fit;
use super::material::resolve_material;
use super::ply::{load_gaussians, LoadedSplats};
use super::selection::resolve_regions;
use super::simulation::{resolve_box, resolve_simulation};
use super::toml_location::{deepest_nesting, header_at, key_at, table_at};
use super::validate::Validator;
use super::validated_scene::{frame_count, Scene};
use super::view::{resolve_view, View};

/// `[reference]`: the frame rate and the background colour.
fn resolve_reference(v: &Validator, r: &ReferenceConfig) -> Result<(f64, [f32; 3]), SceneError> {
    let fps = v.positive("reference.fps", r.fps)?;
    if !r.background.iter().all(|x| (0.0..=1.0).contains(x)) {
        return Err(v.out_of_range(
            "reference.background",
            format!("{:?}", r.background),
            "each channel must be in [0, 1] (linear RGB)",
        ));
    }
    Ok((fps, r.background))
}

/// `[[views]]`: at least one, every name different, and as many reference
/// frames in every view that has frames.
pub(crate) fn resolve_views(
    v: &Validator,
    configs: &[ViewConfig],
) -> Result<Vec<View>, SceneError> {
    if configs.is_empty() {
        return Err(v.invalid(
            "views",
            "no view",
            "add at least one [[views]] table with a camera",
        ));
    }
    let views = configs
        .iter()
        .enumerate()
        .map(|(i, view)| resolve_view(v, i, view))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, view) in views.iter().enumerate() {
        if let Some(j) = views[..i].iter().position(|w| w.name == view.name) {
            return Err(v.invalid(
                &format!("views[{i}].name"),
                format!("'{}' is also the name of views[{j}]; their output files would overwrite each other", view.name),
                "give every view a different name",
            ));
        }
    }
    let mut first: Option<(usize, usize)> = None;
    for (i, view) in views.iter().enumerate() {
        if let Some(frames) = &view.frames {
            match first {
                None => first = Some((i, frames.len())),
                Some((j, n)) if n != frames.len() => {
                    return Err(SceneError::FrameCount {
                        path: v.path.to_path_buf(),
                        field: format!("views[{i}].frames"),
                        found: frames.len(),
                        first_field: format!("views[{j}].frames"),
                        expected: n,
                    })
                }
                _ => {}
            }
        }
    }
    Ok(views)
}

/// `[gaussians]`: the `.ply` path and its splats.
fn resolve_splats(
    v: &Validator,
    g: &GaussiansConfig,
) -> Result<(PathBuf, LoadedSplats), SceneError> {
    let gaussians_path = v.existing("gaussians.path", &g.path)?;
    let splats = load_gaussians(&gaussians_path).map_err(|error| SceneError::Ply {
        path: v.path.to_path_buf(),
        field: "gaussians.path".into(),
        error: Box::new(error),
    })?;
    // Said here, naming the file, rather than later as "no splat lies in
    // the simulated region".
    if splats.gaussians.is_empty() {
        return Err(v.invalid(
            "gaussians.path",
            format!(
                "{} holds no usable splat (its vertex element is empty, or every splat had \
                 non-finite values and was dropped)",
                crate::io::shown::shown(&gaussians_path)
            ),
            "give a 3DGS .ply with splats",
        ));
    }
    Ok((gaussians_path, splats))
}

impl Scene {
    /// Loads and validates `path` (module doc).
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|error| SceneError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        if let Some((line, depth)) = deepest_nesting(&text) {
            return Err(SceneError::Parse {
                path: path.to_path_buf(),
                message: format!(
                    "line {line}: keys, tables or arrays nested {depth} deep (a scene file \
                     nests a few levels; the parser stops at its recursion limit); fix: remove \
                     the nesting at line {line} (docs/scene.md lists each field)"
                ),
            });
        }
        let config: SceneConfig = toml::from_str(&text).map_err(|e| {
            // An error on a table's own header (`[extra]`) is about that
            // table, not the one before it.
            let header = e.span().and_then(|span| header_at(&text, span.start));
            let table = e.span().and_then(|span| table_at(&text, span.start));
            let key = e.span().and_then(|span| key_at(&text, span.start));
            let message = e.to_string().trim_end().to_string();
            // Name the field as `table.key` where the error is on a
            // `key = value` line, and say what to do about it.
            let fix = |k: &str| {
                if message.contains("unknown field") {
                    format!("fix: remove or rename `{k}` (the known fields are listed above; docs/scene.md describes each)")
                } else {
                    format!("fix: give `{k}` a value of the type the error expects (docs/scene.md lists each field)")
                }
            };
            if let Some(h) = header {
                let fix = if message.contains("unknown field") {
                    format!("fix: remove or rename the table `[{h}]` (docs/scene.md lists the tables)")
                } else {
                    format!("fix: correct the table `[{h}]` (docs/scene.md lists the tables)")
                };
                return SceneError::Parse {
                    path: path.to_path_buf(),
                    message: format!("`[{h}]`: {message}\n{fix}"),
                };
            }
            SceneError::Parse {
                path: path.to_path_buf(),
                message: match (table, key) {
                    (Some(t), Some(k)) => format!("`{t}.{k}`: {message}\n{}", fix(&k)),
                    (None, Some(k)) => format!("`{k}`: {message}\n{}", fix(&k)),
                    (Some(t), None) => format!("in `{t}`: {message}"),
                    (None, None) => message,
                },
            }
        })?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let v = Validator { path, dir };
        Scene::resolve(&v, config)
    }

    /// Validates a scene given as a value, as [`Scene::load`] validates the
    /// file it parses into a [`SceneConfig`]: the same checks and
    /// messages, relative paths (the .ply, the frames, the output folder)
    /// resolved against `dir`, errors naming `name` where they would name
    /// the file. For a program that builds or edits a scene in memory
    /// (a parsed file with a field changed, say) rather than writing one.
    pub fn from_config(config: SceneConfig, dir: &Path, name: &Path) -> Result<Scene, SceneError> {
        let v = Validator { path: name, dir };
        Scene::resolve(&v, config)
    }

    /// Resolves the parsed file section by section, in the order the errors
    /// are reported: the first invalid setting in this order is the one a
    /// user sees.
    fn resolve(v: &Validator, config: SceneConfig) -> Result<Scene, SceneError> {
        let c = &config;
        let (fps, background) = resolve_reference(v, &c.reference)?;
        let material = resolve_material(v, &c.material)?;
        // The substeps must hold at the largest ν the fit may reach: the
        // top of a fitted ν's range, checked first.
        let poisson_range = resolve_poisson_range(v, "fit.stiffness", &c.fit.stiffness)?;
        let nu_max = poisson_bound(&c.fit.stiffness, material.poisson_ratio, poisson_range);
        let numbers = resolve_simulation(v, &c.simulation, fps, &material, nu_max)?;
        let views = resolve_views(v, &c.views)?;
        let (gaussians_path, splats) = resolve_splats(v, &c.gaussians)?;
        let means = &splats.gaussians.means;
        let regions = resolve_regions(v, &c.regions, &splats.gaussians)?;
        let simulation = resolve_box(v, &c.simulation, numbers, means, &regions.simulated)?;
        let drivers = resolve_drivers(v, &c.drivers, &simulation, means, &regions.simulated)?;
        let fit = resolve_fit(v, &c.fit, frame_count(&views))?;
        let nu = material.poisson_ratio;
        let PoissonRange { low, high } = fit.stiffness.poisson_range;
        if fit.stiffness.poisson.fitted() && !(nu > low && nu < high) {
            return Err(v.out_of_range(
                "material.poisson_ratio",
                nu,
                format!(
                    "must be in ({low}, {high}) when `fit.stiffness.poisson` fits ν: it is the \
                     fitted ν's start, and a fitted ν stays inside that range \
                     (`fit.stiffness.poisson_range`, default [0, {FITTED_POISSON_MAX}]); move \
                     the start inside it or widen the range"
                ),
            ));
        }
        let output_dir = v.join(&c.output.directory);
        Ok(Scene {
            path: v.path.to_path_buf(),
            gaussians_path,
            splats,
            views,
            fps,
            background,
            simulation,
            material,
            simulated: regions.simulated,
            anchored: regions.anchored,
            drivers,
            anchored_region: regions.anchored_region,
            fit,
            output_dir,
            config,
        })
    }
}
