//! The alignment of a scene's views as one library call
//! ([`align_scene`]), its result in memory ([`SceneAlignment`]) and the
//! files it writes ([`SceneAlignment::write_outputs`]): what `physfit
//! align` runs, so that a program aligns a scene without the command line
//! (docs/design.md § Camera alignment).
//!
//! Each chosen view is aligned in turn ([`align_view`]) on one
//! [`ViewProblem`]; its picture (reference | before | after | difference)
//! is made in memory. Nothing is written until the caller asks, into a
//! folder of its choosing (the command's staging folder).

use std::path::Path;

use glam::Vec3;
use image::RgbImage;

use super::scene_edit::{edited_scene, ViewEdit};
use super::summary::{AlignSummary, ViewSummary, ALIGN_SUMMARY_FILE, ALIGN_SUMMARY_VERSION};
use super::view_align::check_start;
use super::{
    align_view, AlignError, AlignProgress, AlignSettings, Reference, ViewAlignment, ViewProblem,
    ViewState,
};
use crate::gpu::GpuContext;
use crate::io::atomic_write::write_atomic;
use crate::io::png::write_png;
use crate::loss::LossWeights;
use crate::report::{captioned_row, difference};
use crate::scene::Scene;
use crate::splat::SplatBuffers;
use crate::stop::StopSignal;

/// The aligned scene's file name in the output directory.
pub const ALIGNED_SCENE_FILE: &str = "scene.toml";

/// What [`align_scene`] aligns, and how.
#[derive(Clone, Debug)]
pub struct SceneAlignOptions {
    /// The views to align, by index in the scene (each must have frames).
    pub views: Vec<usize>,
    /// What is fitted, pyramid levels, evaluation caps.
    pub settings: AlignSettings,
    /// Stops the alignment at the next evaluation when raised
    /// ([`AlignError::Stopped`]).
    pub stop: Option<StopSignal>,
}

/// What [`align_scene`] tells its caller as it goes.
pub enum AlignEvent<'a> {
    /// The `done`-th view of the run (0-based) starts.
    ViewStarted {
        /// Views aligned before it.
        done: usize,
        /// Its name.
        view: &'a str,
    },
    /// An evaluation of the view under way.
    Evaluation {
        /// The view's name.
        view: &'a str,
        /// Its level, evaluations and loss so far.
        progress: &'a AlignProgress,
    },
    /// A view is aligned.
    ViewFinished(&'a AlignedView),
}

/// One view's alignment and its picture.
pub struct AlignedView {
    /// The view's index in the scene.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Before and after, the changes, the conditioning.
    pub alignment: ViewAlignment,
    /// Reference | before | after | 4 × difference, captioned with the
    /// PSNRs.
    pub picture: RgbImage,
}

impl AlignedView {
    /// The picture's file name in the output directory.
    pub fn picture_file(&self) -> String {
        picture_file(&self.name)
    }
}

/// The picture's file name of view `name` in the output directory.
pub fn picture_file(name: &str) -> String {
    format!("{name}.png")
}

/// Every view's alignment, in the order aligned.
pub struct SceneAlignment {
    /// What was fitted.
    pub settings: AlignSettings,
    /// The views.
    pub views: Vec<AlignedView>,
}

impl SceneAlignment {
    /// The scene's fields to change: views that alignment improved (a view
    /// made worse, or no better, keeps its start).
    pub fn edits(&self) -> Vec<ViewEdit> {
        let what = self.settings.what;
        self.views
            .iter()
            .filter(|v| !v.alignment.worse && !v.alignment.kept_start)
            .map(|v| ViewEdit {
                index: v.index,
                camera: v.alignment.after.camera.clone(),
                focal: what.focal,
                color: what.color.then_some(v.alignment.after.color),
            })
            .collect()
    }

    /// The views alignment made worse, as "name: before → after dB".
    pub fn worse(&self) -> Vec<String> {
        self.views
            .iter()
            .filter(|v| v.alignment.worse)
            .map(|v| {
                format!(
                    "{}: {:.2} → {:.2} dB",
                    v.name, v.alignment.psnr_before, v.alignment.psnr_after
                )
            })
            .collect()
    }

    /// `align.json`'s content.
    pub fn summary(&self, scene_path: &Path) -> AlignSummary {
        AlignSummary {
            version: ALIGN_SUMMARY_VERSION,
            scene: scene_path.display().to_string(),
            what: self.settings.what.label(),
            views: self
                .views
                .iter()
                .map(|v| ViewSummary::new(&v.name, &v.alignment, v.picture_file()))
                .collect(),
        }
    }

    /// Writes into `dir` the aligned `scene.toml` (the scene at
    /// `scene_path` with only the aligned fields changed, its relative
    /// paths rewritten to resolve from `out_dir`, where the files will
    /// finally lie), `align.json` and a picture per view. The pictures are
    /// written even for a view made worse: they show why.
    pub fn write_outputs(
        &self,
        dir: &Path,
        scene_path: &Path,
        scene: &Scene,
        out_dir: &Path,
    ) -> Result<(), AlignError> {
        for view in &self.views {
            write_png(&dir.join(view.picture_file()), &view.picture)?;
        }
        let text = edited_scene(scene_path, &scene.output_dir, out_dir, &self.edits())?;
        let scene_file = dir.join(ALIGNED_SCENE_FILE);
        write_atomic(&scene_file, text.as_bytes()).map_err(AlignError::io(&scene_file))?;
        let summary_file = dir.join(ALIGN_SUMMARY_FILE);
        let json = serde_json::to_string_pretty(&self.summary(scene_path))
            .expect("the summary serialises");
        write_atomic(&summary_file, json.as_bytes()).map_err(AlignError::io(&summary_file))?;
        Ok(())
    }
}

/// Aligns `options.views` of `scene` in turn, telling `on` of each view
/// and evaluation. A view without frames, or whose start does not show
/// the object, is refused before anything of it is evaluated.
pub fn align_scene(
    ctx: &GpuContext,
    scene: &Scene,
    options: &SceneAlignOptions,
    mut on: impl FnMut(AlignEvent<'_>),
) -> Result<SceneAlignment, AlignError> {
    for &i in &options.views {
        if scene.views[i].frames.is_none() {
            return Err(AlignError::NoFrames {
                view: scene.views[i].name.clone(),
            });
        }
    }
    let settings = &options.settings;
    let gaussians = &scene.splats.gaussians;
    let splats = SplatBuffers::upload(ctx, gaussians)?;
    let centres: Vec<Vec3> = gaussians.means.iter().map(|&m| Vec3::from(m)).collect();
    let weights = LossWeights {
        l1: scene.fit.w_l1 as f32,
        ssim: scene.fit.w_ssim as f32,
    };
    let mut problem =
        ViewProblem::new(ctx, &splats, scene.background, weights, settings.what.color)?;
    if let Some(stop) = &options.stop {
        problem.set_stop(stop.clone());
    }
    let mut views = Vec::new();
    for (done, &i) in options.views.iter().enumerate() {
        let view = &scene.views[i];
        on(AlignEvent::ViewStarted {
            done,
            view: &view.name,
        });
        if options.stop.as_ref().is_some_and(StopSignal::raised) {
            return Err(AlignError::Stopped);
        }
        let frames = view.frames.as_ref().expect("checked above");
        let frame = frames.load(0)?;
        let mask = match &view.masks {
            Some(m) => Some(m.load_mask(0)?),
            None => None,
        };
        let start = ViewState {
            camera: view.camera.clone(),
            color: view.color_correction,
        };
        check_start(&view.name, &start.camera, &centres)?;
        let alignment = align_view(
            ctx,
            &mut problem,
            &Reference {
                frame: &frame,
                mask: mask.as_ref(),
            },
            &start,
            &centres,
            settings,
            |progress| {
                on(AlignEvent::Evaluation {
                    view: &view.name,
                    progress,
                })
            },
        )
        .map_err(|e| match e {
            AlignError::NonFinite { .. } => AlignError::NonFinite {
                view: view.name.clone(),
            },
            other => other,
        })?;
        let before = problem.picture(&alignment.before)?;
        let after = problem.picture(&ViewState {
            camera: alignment.after.camera.clone(),
            color: alignment.after.color,
        })?;
        let diff = difference(&frame, &after);
        let before_caption = format!("before {:.2} dB", alignment.psnr_before);
        let after_caption = format!(
            "after {:.2} dB",
            if alignment.kept_start {
                alignment.psnr_before
            } else {
                alignment.psnr_after
            }
        );
        let picture = captioned_row(&[
            ("reference", &frame),
            (before_caption.as_str(), &before),
            (after_caption.as_str(), &after),
            ("|reference − after| × 4", &diff),
        ])?;
        let aligned = AlignedView {
            index: i,
            name: view.name.clone(),
            alignment,
            picture,
        };
        on(AlignEvent::ViewFinished(&aligned));
        views.push(aligned);
    }
    Ok(SceneAlignment {
        settings: settings.clone(),
        views,
    })
}
