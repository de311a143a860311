//! The `fall` line of `physfit check`: what the object reaches first when
//! it falls from rest under the scene's gravity ([`Scene::fall_from_rest`],
//! docs/scene.md § Colliders, "The fall"), and a warning when that is the
//! box's wall margin within the frames the scene simulates.

use physfit::scene::{Fall, Scene};

const AXES: [&str; 3] = ["x", "y", "z"];

/// The lines to print (empty without gravity), each ending in a newline.
pub(super) fn fall_summary(scene: &Scene) -> String {
    // The frames a fit or `physfit simulate` runs: the reference frames,
    // else simulate's default.
    let frames = scene.frame_count().unwrap_or(super::DEFAULT_FRAMES);
    let last = (frames.saturating_sub(1)) as f64 / scene.fps;
    let frame = |t: f64| t * scene.fps;
    match scene.fall_from_rest() {
        Fall::NoGravity => String::new(),
        Fall::Anchored => "fall         none: the anchored splats hold the object\n".to_string(),
        Fall::Caught { collider, time } => format!(
            "fall         from rest, the object reaches simulation.colliders[{collider}] at \
             t = {time:.3} s (frame {:.1}) before the box's wall margin\n",
            frame(time)
        ),
        Fall::LeavesBox { axis, upper, time } => {
            let wall = format!("{}{}", if upper { "+" } else { "−" }, AXES[axis]);
            let mut s = format!(
                "fall         from rest, the object reaches the box's wall margin on the {wall} \
                 side at t = {time:.3} s (frame {:.1}) before any collider stops it\n",
                frame(time)
            );
            if time <= last {
                s.push_str(&format!(
                    "WARNING      that is within the {frames} frames simulated (0–{}, {last:.3} s): \
                     the walls then hold the object (sticky walls freeze it), which no material \
                     explains; fix: add a ground under it (`[[simulation.colliders]]`, \
                     docs/scene.md § Colliders) or extend `simulation.box` on the {wall} side\n",
                    frames - 1
                ));
            }
            s
        }
    }
}
