//! Generic file output, shared by every stage that writes files, and the
//! one image type, [`Frame`]:
//! [`atomic_write`] (temp file + rename, so a reader never sees half a file)
//! [`png`] (the one PNG writer, through it), [`shown`] (paths printed as
//! a user would type them) and the one writer discipline of every command
//! ([`output_dir`], with [`owned`], [`output_place`], [`run_lock`] and
//! [`output_error`]).

internal_mods! {
    atomic_write;
    frame;
    output_dir;
    output_error;
    output_place;
    owned;
    png;
    run_lock;
    shown;
}

pub use frame::Frame;

pub use atomic_write::write_atomic;
pub use output_dir::{Earlier, OutputDir, OutputPlan};
pub use output_place::Input;
pub use owned::Owned;
pub use shown::{normalised, shown};
