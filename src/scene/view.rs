//! One view of the scene: a camera and (optionally) its reference frames,
//! resolved from a `[[views]]` entry.

use std::path::PathBuf;

use glam::{Mat3, Vec3};

use super::camera::Camera;
use super::color_correction::ColorCorrection;
use super::config::{CameraConfig, ColorCorrectionConfig, ViewConfig};
use super::error::SceneError;
use super::frames::{frame_size, list_frames, load_frame, FrameError};
use crate::io::Frame;
use super::nerfstudio::read_transforms;
use super::validate::{representable, Validator};

/// Default near plane, world units.
pub const DEFAULT_NEAR: f64 = 0.01;

/// A camera with its reference frames.
#[derive(Clone, Debug)]
pub struct View {
    /// Label (`views[i].name`, default `view{i}`).
    pub name: String,
    /// The camera.
    pub camera: Camera,
    /// Reference frames; `None` when the view has none.
    pub frames: Option<FrameSet>,
    /// Loss masks, one per reference frame ([`super::masks`]); `None` when
    /// every pixel counts.
    pub masks: Option<FrameSet>,
    /// The camera's colour correction, applied to every render compared
    /// with this view's frames ([`ColorCorrection`]); the identity when
    /// `views[i].color_correction` is absent.
    pub color_correction: ColorCorrection,
}

/// A view's reference frame files, all of the camera's size (checked from
/// the image headers at load time; decoded on demand).
#[derive(Clone, Debug)]
pub struct FrameSet {
    /// The directory or glob as resolved.
    pub spec: PathBuf,
    /// Frame files in time order (frame k is time k/fps).
    pub paths: Vec<PathBuf>,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
}

impl FrameSet {
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// True when there are no frames (never for a loaded scene).
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Decodes frame `k` to linear RGBA.
    pub fn load(&self, k: usize) -> Result<Frame, FrameError> {
        load_frame(&self.paths[k], Some((self.width, self.height)))
    }
}

/// Checks a world-to-camera rotation is orthonormal with determinant +1.
fn check_rotation(v: &Validator, field: &str, r: Mat3) -> Result<(), SceneError> {
    let err = (r * r.transpose() - Mat3::IDENTITY)
        .to_cols_array()
        .iter()
        .fold(0.0f32, |m, x| m.max(x.abs()));
    let det = r.determinant();
    if err.is_nan() || err >= 1e-3 || det.is_nan() || det <= 0.0 {
        return Err(v.invalid(
            field,
            format!("not a rotation (‖R Rᵀ − I‖max = {err:.2e}, det = {:.4})", r.determinant()),
            "give an orthonormal 3×3 matrix with determinant +1, rows = camera x (right), y (down), z (forward) in world coordinates",
        ));
    }
    Ok(())
}

fn vec3(v: [f64; 3]) -> Vec3 {
    Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// World-to-camera pose (OpenCV) looking from `position` at `look_at`
/// with `up` pointing up in the image: rows right, down, forward.
pub fn look_at_pose(position: Vec3, look_at: Vec3, up: Vec3) -> Option<(Mat3, Vec3)> {
    let forward = (look_at - position).try_normalize()?;
    let right = forward.cross(up).try_normalize()?;
    let down = forward.cross(right);
    let rotation = Mat3::from_cols(right, down, forward).transpose();
    Some((rotation, -(rotation * position)))
}

fn resolve_camera(v: &Validator, field: &str, c: &CameraConfig) -> Result<Camera, SceneError> {
    let f = |name: &str| format!("{field}.{name}");
    let near = v.positive(&f("near"), c.near.unwrap_or(DEFAULT_NEAR))?;
    if let Some(transforms) = &c.transforms {
        let inline = [
            ("width", c.width.is_some()),
            ("height", c.height.is_some()),
            ("fx", c.fx.is_some()),
            ("fy", c.fy.is_some()),
            ("cx", c.cx.is_some()),
            ("cy", c.cy.is_some()),
            ("rotation", c.rotation.is_some()),
            ("translation", c.translation.is_some()),
            ("position", c.position.is_some()),
            ("look_at", c.look_at.is_some()),
            ("up", c.up.is_some()),
        ];
        if let Some((name, _)) = inline.iter().find(|(_, set)| *set) {
            return Err(v.invalid(
                &f(name),
                "given together with `transforms`",
                "use either a transforms.json (with `frame`) or inline intrinsics and pose, not both",
            ));
        }
        let file = v.existing(&f("transforms"), transforms)?;
        let index = c.frame.ok_or_else(|| {
            v.invalid(
                &f("frame"),
                "missing",
                "give the index of the camera's entry in the transforms.json `frames` list",
            )
        })?;
        let cam = read_transforms(&file, index).map_err(|message| {
            v.invalid(
                &f("transforms"),
                message,
                "fix the transforms.json or the `frame` index",
            )
        })?;
        v.positive(&f("transforms"), cam.fx)?;
        v.positive(&f("transforms"), cam.fy)?;
        check_rotation(v, &f("transforms"), cam.rotation)?;
        return Ok(Camera {
            width: cam.width,
            height: cam.height,
            fx: cam.fx as f32,
            fy: cam.fy as f32,
            cx: cam.cx as f32,
            cy: cam.cy as f32,
            rotation: cam.rotation,
            translation: cam.translation,
            near: near as f32,
        });
    }
    if c.frame.is_some() {
        return Err(v.invalid(
            &f("frame"),
            "given without `transforms`",
            "remove it, or add `transforms = \"transforms.json\"`",
        ));
    }
    let width = c.width.ok_or_else(|| {
        v.invalid(
            &f("width"),
            "missing",
            "give the image width in pixels (or use `transforms`)",
        )
    })?;
    let height = c
        .height
        .ok_or_else(|| v.invalid(&f("height"), "missing", "give the image height in pixels"))?;
    if width == 0 {
        return Err(v.out_of_range(&f("width"), 0, "must be ≥ 1 pixel"));
    }
    if height == 0 {
        return Err(v.out_of_range(&f("height"), 0, "must be ≥ 1 pixel"));
    }
    let fx = c.fx.ok_or_else(|| {
        v.invalid(
            &f("fx"),
            "missing",
            "give the focal length in pixels: fx = width / (2 tan(horizontal fov / 2))",
        )
    })?;
    let fx = v.positive(&f("fx"), fx)?;
    let fy = v.positive(&f("fy"), c.fy.unwrap_or(fx))?;
    let cx = c.cx.unwrap_or(width as f64 / 2.0);
    let cy = c.cy.unwrap_or(height as f64 / 2.0);
    if !representable(cx) {
        return Err(v.out_of_range(
            &f("cx"),
            cx,
            "must be finite and at most 1e30 (pixels from the left edge)",
        ));
    }
    if !representable(cy) {
        return Err(v.out_of_range(
            &f("cy"),
            cy,
            "must be finite and at most 1e30 (pixels from the top edge)",
        ));
    }
    let (rotation, translation) = match (c.rotation, c.translation, c.position, c.look_at, c.up) {
        (Some(r), Some(t), None, None, None) => {
            let rows = r.map(vec3);
            let rotation = Mat3::from_cols(rows[0], rows[1], rows[2]).transpose();
            if !r.iter().flatten().all(|&x| representable(x)) {
                return Err(v.out_of_range(
                    &f("rotation"),
                    format!("{r:?}"),
                    "every entry must be finite",
                ));
            }
            check_rotation(v, &f("rotation"), rotation)?;
            (rotation, vec3(v.finite3(&f("translation"), t)?))
        }
        (None, None, Some(p), Some(l), Some(u)) => {
            let p = vec3(v.finite3(&f("position"), p)?);
            let l = vec3(v.finite3(&f("look_at"), l)?);
            let u = vec3(v.finite3(&f("up"), u)?);
            look_at_pose(p, l, u).ok_or_else(|| {
                v.invalid(
                    &f("up"),
                    "`look_at` equals `position`, or `up` is parallel to the viewing direction",
                    "move `look_at` off the camera and give an `up` not along the view",
                )
            })?
        }
        (Some(_), None, ..) => {
            return Err(v.invalid(
                &f("translation"),
                "missing (given `rotation`)",
                "give `translation` with `rotation` (world-to-camera)",
            ))
        }
        (None, Some(_), ..) => {
            return Err(v.invalid(
                &f("rotation"),
                "missing (given `translation`)",
                "give `rotation` with `translation` (world-to-camera)",
            ))
        }
        (Some(_), Some(_), ..) => {
            return Err(v.invalid(
                &f("position"),
                "given together with `rotation`/`translation`",
                "use either rotation + translation or position + look_at + up",
            ))
        }
        (None, None, p, l, u) => {
            let missing = if p.is_none() {
                "position"
            } else if l.is_none() {
                "look_at"
            } else if u.is_none() {
                "up"
            } else {
                "rotation"
            };
            return Err(v.invalid(
                &f(missing),
                "missing: the camera has no complete pose",
                "give either `rotation` + `translation` (world-to-camera) or `position` + `look_at` + `up`",
            ));
        }
    };
    Ok(Camera {
        width,
        height,
        fx: fx as f32,
        fy: fy as f32,
        cx: cx as f32,
        cy: cy as f32,
        rotation,
        translation,
        near: near as f32,
    })
}

fn resolve_frames(
    v: &Validator,
    field: &str,
    spec: &str,
    camera: &Camera,
) -> Result<FrameSet, SceneError> {
    let spec_path = v.join(std::path::Path::new(spec));
    let is_pattern = spec.contains(['*', '?', '[']);
    if !is_pattern && !spec_path.exists() {
        return Err(SceneError::MissingFile {
            path: v.path.to_path_buf(),
            field: field.to_string(),
            file: spec_path,
        });
    }
    let frames_err = |error: FrameError| SceneError::Frames {
        path: v.path.to_path_buf(),
        field: field.to_string(),
        error,
    };
    let pattern = if is_pattern && std::path::Path::new(spec).is_absolute() {
        // An absolute pattern is the user's whole pattern.
        PathBuf::from(spec)
    } else if is_pattern {
        // A relative one is relative to the scene directory, escaped so
        // that only the user's part is a glob.
        let dir = glob::Pattern::escape(&v.dir.to_string_lossy());
        PathBuf::from(format!("{dir}/{spec}"))
    } else {
        spec_path.clone()
    };
    if is_pattern {
        let root = if v.dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            v.dir
        };
        crate::scene::frames::check_glob_bound(&pattern, root).map_err(frames_err)?;
    }
    let paths = list_frames(&pattern).map_err(frames_err)?;
    for p in &paths {
        let (w, h) = frame_size(p).map_err(frames_err)?;
        if (w, h) != (camera.width, camera.height) {
            return Err(frames_err(FrameError::WrongSize {
                path: p.clone(),
                expected_w: camera.width,
                expected_h: camera.height,
                found_w: w,
                found_h: h,
            }));
        }
    }
    Ok(FrameSet {
        spec: spec_path,
        paths,
        width: camera.width,
        height: camera.height,
    })
}

/// Resolves `views[i].masks` (`field`) like frames (same listing, order and
/// size check), then checks what is particular to masks: PNG only (a JPEG's
/// ringing would blur the mask's edge), frames to mask, and one mask per
/// frame.
fn resolve_masks(
    v: &Validator,
    field: &str,
    spec: &str,
    camera: &Camera,
    frames: Option<&FrameSet>,
) -> Result<FrameSet, SceneError> {
    let Some(frames) = frames else {
        return Err(v.invalid(
            field,
            "given without `frames`: a mask limits the loss against reference frames",
            "add the view's `frames`, or remove `masks`",
        ));
    };
    let masks = resolve_frames(v, field, spec, camera)?;
    if let Some(jpeg) = masks
        .paths
        .iter()
        .find(|p| !p.extension().is_some_and(|e| e.eq_ignore_ascii_case("png")))
    {
        return Err(v.invalid(
            field,
            format!("{} is not a PNG", crate::io::shown::shown(jpeg)),
            "save masks as PNG (8-bit grey or RGBA: white or opaque = the pixel counts), or narrow the glob to `*.png`",
        ));
    }
    if masks.len() != frames.len() {
        return Err(v.invalid(
            field,
            format!(
                "{} masks for {} frames (from {})",
                masks.len(),
                frames.len(),
                crate::io::shown::shown(&frames.spec)
            ),
            "give one mask per reference frame, sorted the same way (mask k goes with frame k)",
        ));
    }
    Ok(masks)
}

/// Resolves `views[i].color_correction` (`field`): each of `gain` and
/// `offset` exactly 3 numbers when given (the identity's part otherwise),
/// gains finite and > 0 (a gain of 0 would make the view's render one flat
/// colour, with no gradient left to fit with), offsets finite.
fn resolve_color_correction(
    v: &Validator,
    field: &str,
    c: &ColorCorrectionConfig,
) -> Result<ColorCorrection, SceneError> {
    let three = |name: &str, values: &[f64], fix: &str| -> Result<[f32; 3], SceneError> {
        let field = format!("{field}.{name}");
        let Ok(values) = <[f64; 3]>::try_from(values) else {
            return Err(v.invalid(
                &field,
                format!("{} values, expected 3 (red, green, blue)", values.len()),
                format!("give one {fix} per RGB channel, e.g. `{name} = [r, g, b]`"),
            ));
        };
        Ok(values.map(|x| x as f32))
    };
    let mut out = ColorCorrection::IDENTITY;
    if let Some(gain) = &c.gain {
        out.gain = three("gain", gain, "gain")?;
        for (k, &a) in gain.iter().enumerate() {
            if !(a.is_finite() && a > 0.0 && (a as f32).is_finite()) {
                return Err(v.out_of_range(
                    &format!("{field}.gain"),
                    format!("{gain:?} (channel {k})"),
                    "every gain must be a finite number > 0 (1 leaves the channel unchanged; `physfit align` fits it)",
                ));
            }
        }
    }
    if let Some(offset) = &c.offset {
        out.offset = three("offset", offset, "offset")?;
        for (k, &b) in offset.iter().enumerate() {
            if !(b.is_finite() && (b as f32).is_finite()) {
                return Err(v.out_of_range(
                    &format!("{field}.offset"),
                    format!("{offset:?} (channel {k})"),
                    "every offset must be finite (0 leaves the channel unchanged; `physfit align` fits it)",
                ));
            }
        }
    }
    Ok(out)
}

/// A view name that is safe as one path component on every platform.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Resolves `views[index]`: its camera and the sizes of its frames.
pub(crate) fn resolve_view(
    v: &Validator,
    index: usize,
    c: &ViewConfig,
) -> Result<View, SceneError> {
    let field = format!("views[{index}]");
    let camera = resolve_camera(v, &format!("{field}.camera"), &c.camera)?;
    let frames = match &c.frames {
        None => None,
        Some(spec) => Some(resolve_frames(
            v,
            &format!("{field}.frames"),
            spec,
            &camera,
        )?),
    };
    let masks = match &c.masks {
        None => None,
        Some(spec) => Some(resolve_masks(
            v,
            &format!("{field}.masks"),
            spec,
            &camera,
            frames.as_ref(),
        )?),
    };
    let color_correction = match &c.color_correction {
        None => ColorCorrection::IDENTITY,
        Some(cc) => resolve_color_correction(v, &format!("{field}.color_correction"), cc)?,
    };
    let name = c.name.clone().unwrap_or_else(|| format!("view{index}"));
    if !is_plain_file_name(&name) {
        return Err(v.invalid(
            &format!("{field}.name"),
            format!("'{name}' cannot name output files (render and simulate write <out>/<name>.png and <out>/<name>/)"),
            "use letters, digits, '_', '-' and '.', not starting with '.'",
        ));
    }
    Ok(View {
        name,
        camera,
        frames,
        masks,
        color_correction,
    })
}
