//! Interactions with a fitted object (docs/design.md § Interactions):
//! what `physfit render --params` simulates the object under. Forward only,
//! no adjoint.
//!
//! An [`Interactions`] is one list of [`Interaction`]s, read from an
//! `[[interactions]]` TOML file ([`Interactions::load`], docs/scene.md
//! "Interactions file") and from the simple command-line flags
//! ([`InteractionFlags`]); several combine. Colliders added to the
//! scene's come from the file's `[[colliders]]` and from `--ground`
//! ([`ground`]). Every value is in world units
//! (positions, lengths, velocities in units/s, accelerations in units/s²,
//! times in seconds from frame 0); the simulator's normalised units are
//! applied where they are used ([`plan`]).

internal_mods! {
    error;
    file;
    flags;
    gif_sequence;
    ground;
    interaction;
    orbit;
    plan;
}

pub use gif_sequence::{gif_delay_centiseconds, gif_fps};

pub use error::InteractionError;
pub use flags::InteractionFlags;
pub use gif_sequence::GifError;
pub use ground::{Ground, GROUND_FRICTION};
pub use interaction::{Impulse, Interaction, Interactions, Start, VelocityRegion, MAX_IMPULSES};
