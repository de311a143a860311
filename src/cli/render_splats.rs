//! `physfit render scene.toml --splats GLOB --out DIR`: renders a sequence of
//! splat files made elsewhere (another simulator's frames, one `.ply` per
//! frame, each splat posed at its particle) with the scene's cameras, through
//! the same forward renderer as plain `render`. Each file must hold the
//! scene's splats in the scene's order (same count, as
//! `gaussians.path`); file k becomes `DIR/<view>/frame_NNNN.png`, the layout
//! `physfit synth` writes, so `DIR/<view>/*.png` can be a view's `frames`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::SceneRenderer;
use physfit::gpu::GpuContext;
use physfit::scene::load_gaussians;
use physfit::scene::Camera;
use physfit::synth::frame_path;

use physfit::io::shown;

use physfit::io::Input;
use physfit::io::Owned;

use super::count::count;
use super::interrupt::{nothing_kept, Interrupt};
use super::opaque_png::write_opaque_png;
use super::output::open_output;
use super::render_args::RenderArgs;

/// The files `pattern` names, sorted by file name (frame order). A pattern
/// that matches no file is an error naming it.
pub fn list_splat_files(pattern: &str) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = glob::glob(pattern)
        .with_context(|| format!("--splats '{pattern}' is not a valid glob pattern"))?
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    anyhow::ensure!(
        !files.is_empty(),
        "--splats '{pattern}' matches no file: give a glob such as 'out/frame_*.ply' \
         (quoted, so that physfit and not the shell expands it)"
    );
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// Renders every file of `files` in every view of `views`, writing
/// `DIR/<view>/frame_NNNN.png` (`--out`) (file k is frame k), staged and under the
/// one writer discipline ([`physfit::io::output_dir`]; `inputs` the scene's,
/// the splat files added). Each file must have the scene's splat count
/// `scene_splats`. `interrupt` is polled between files (phase `render`,
/// counting files).
pub fn render_splat_files(
    args: &RenderArgs,
    scene_splats: usize,
    background: [f32; 3],
    files: &[PathBuf],
    views: &[(String, Camera)],
    (mut inputs, interrupt): (Vec<Input>, &Interrupt),
) -> Result<()> {
    let (scene_path, target): (&Path, &Path) = (&args.scene, &args.out);
    let (force, quiet) = (args.force, args.quiet);
    let owned = views
        .iter()
        .map(|(name, _)| Owned::frames(name, "png"))
        .collect();
    inputs.extend(
        files
            .iter()
            .map(|f| Input::file(f, "splat files (--splats)")),
    );
    let mut staged = open_output(target, "render --splats", owned, inputs, force)?;
    if !quiet {
        eprintln!("output {}", shown(target));
    }
    let out = staged.staging().to_path_buf();
    let out = out.as_path();
    for (name, _) in views {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", shown(&dir)))?;
    }
    let ctx = GpuContext::new(&Default::default())?;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(files.len() as u64)
    }
    .with_style(
        ProgressStyle::with_template("rendering {bar:30} {pos}/{len} {msg}")
            .expect("static template"),
    );
    for (k, file) in files.iter().enumerate() {
        interrupt.reach("render", k);
        interrupt.check(|| nothing_kept(&staged))?;
        bar.set_message(shown(file).to_string());
        let splats =
            load_gaussians(file).with_context(|| format!("--splats: reading {}", shown(file)))?;
        let n = splats.gaussians.len();
        anyhow::ensure!(
            n == scene_splats,
            "--splats: {} holds {n} usable splats but the scene {} has {scene_splats} \
             (gaussians.path): every file must hold the scene's splats in the same order, \
             each posed for its frame; write the frames from the scene's own .ply",
            shown(file),
            shown(scene_path)
        );
        let mut renderer = SceneRenderer::at_rest(&ctx, &splats.gaussians, background)
            .with_context(|| format!("--splats: uploading {}", shown(file)))?;
        for (name, camera) in views {
            let path = frame_path(out, name, k);
            let frame = renderer
                .render(&ctx, camera)
                .with_context(|| format!("rendering {} in view '{name}'", shown(file)))?;
            write_opaque_png(&path, frame.width, frame.height, frame.pixels)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    staged.commit()?;
    if !quiet {
        eprintln!(
            "wrote {} of {}, <view>/frame_NNNN.png",
            count(files.len(), "frame", "frames"),
            count(views.len(), "view", "views")
        );
        eprintln!("output {}", shown(target));
    }
    Ok(())
}
