//! The options of `physfit render`, apart from the command, so that the
//! still render, the motion render ([`super::render_motion`]) and the splat
//! sequence render ([`super::render_splats`]) all read them without
//! importing each other.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use physfit::interact::InteractionFlags;

/// What `--color-by` colours the splats by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorBy {
    /// The colour map of the fitted log10 E (world units), with a colour bar.
    Stiffness,
}

/// Options of `physfit render`.
#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The scene description.
    pub scene: PathBuf,
    /// Output directory (created if missing; refused when it holds an
    /// earlier render's files, unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Render only this view: its name or its number (0-based, in
    /// scene.toml order); repeatable. Default: every view.
    #[arg(long)]
    pub camera: Vec<String>,
    /// Image size WxH (square pixels, horizontal field of view kept); default: the camera's.
    #[arg(long)]
    pub size: Option<String>,
    /// The fit's drivers.safetensors: simulate the fitted object and write
    /// a PNG sequence and a looping GIF per view (`DIR/<view>/frame_NNNN.png`,
    /// `DIR/<view>.gif`).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Render these splat files (a quoted glob such as 'out/frame_*.ply',
    /// sorted by file name), each the scene's splats posed for one frame,
    /// to `DIR/<view>/frame_NNNN.png` (file k is frame k), a folder a
    /// view's `frames` can name.
    #[arg(long, conflicts_with = "params")]
    pub splats: Option<String>,
    /// With --params: frames written, the rest frame 0 included, so N gives
    /// frame_0000 .. frame_{N−1} (docs/scene.md § Frame counts; default:
    /// the scene's reference frame count, else 48).
    #[arg(long)]
    pub frames: Option<usize>,
    /// With --params: the camera circles the object's centre by this many
    /// degrees over the sequence, at the scene camera's distance and height.
    #[arg(long, allow_hyphen_values = true)]
    pub orbit: Option<f32>,
    /// With --params: an [[interactions]] file (docs/scene.md "Interactions file").
    #[arg(long)]
    pub interactions: Option<PathBuf>,
    /// With --params: initial velocity VX,VY,VZ (world units/s) added to the start.
    #[arg(long, allow_hyphen_values = true)]
    pub velocity: Option<String>,
    /// With --velocity: only inside the box X0,Y0,Z0..X1,Y1,Z1 (world units).
    #[arg(long, allow_hyphen_values = true)]
    pub in_box: Option<String>,
    /// With --params: an impulse "centre=X,Y,Z;radius=R;acceleration=AX,AY,AZ;start=T0;end=T1"
    /// (world units, seconds); repeatable.
    #[arg(long, allow_hyphen_values = true)]
    pub impulse: Vec<String>,
    /// With --params: gravity GX,GY,GZ (world units/s²) in place of the scene's.
    #[arg(long, allow_hyphen_values = true)]
    pub gravity: Option<String>,
    /// With --params: a floor under the object, perpendicular to gravity
    /// (friction μ = 0.5): `--ground` half a grid cell under its lowest
    /// splat, `--ground=H` at height H along up (against gravity; z for a
    /// gravity along −z).
    #[arg(long, num_args = 0..=1, require_equals = true, allow_hyphen_values = true, value_name = "H")]
    pub ground: Option<Option<f64>>,
    /// With --params: start from rest instead of the fitted initial velocity.
    #[arg(long)]
    pub from_rest: bool,
    /// With --params: let the object go: the fit's anchored part moves
    /// too, so that with gravity it falls (onto --ground, say) or rests.
    #[arg(long)]
    pub release: bool,
    /// With --params: colour the splats by the fitted stiffness (colour bar added).
    #[arg(long, value_enum)]
    pub color_by: Option<ColorBy>,
    /// With --params: each frame beside the scene's reference frame, with
    /// the view's colour correction (`views[i].color_correction`).
    #[arg(long)]
    pub side_by_side: bool,
    /// Replace an earlier render's files in the output directory (only those).
    #[arg(long)]
    pub force: bool,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

impl RenderArgs {
    /// The interaction flags as given.
    pub fn interaction_flags(&self) -> InteractionFlags {
        InteractionFlags {
            velocity: self.velocity.clone(),
            in_box: self.in_box.clone(),
            impulses: self.impulse.clone(),
            gravity: self.gravity.clone(),
            from_rest: self.from_rest,
            release: self.release,
        }
    }

    /// The flags that only make sense with `--params`, when given.
    pub(super) fn motion_flags(&self) -> Vec<&'static str> {
        let flags = self.interaction_flags();
        [
            ("--frames", self.frames.is_some()),
            ("--orbit", self.orbit.is_some()),
            ("--interactions", self.interactions.is_some()),
            ("--velocity", flags.velocity.is_some()),
            ("--in-box", flags.in_box.is_some()),
            ("--impulse", !flags.impulses.is_empty()),
            ("--gravity", flags.gravity.is_some()),
            ("--ground", self.ground.is_some()),
            ("--from-rest", flags.from_rest),
            ("--release", flags.release),
            ("--color-by", self.color_by.is_some()),
            ("--side-by-side", self.side_by_side),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}
