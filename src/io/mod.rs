//! Generic file output, shared by every stage that writes files:
//! [`atomic_write`] (temp file + rename, so a reader never sees half a file)
//! [`png`] (the one PNG writer, through it), [`shown`] (paths printed as
//! a user would type them) and the one writer discipline of every command
//! ([`output_dir`], with [`owned`], [`output_place`], [`run_lock`] and
//! [`output_error`]).

pub mod atomic_write;
pub mod output_dir;
pub mod output_error;
pub mod output_place;
pub mod owned;
pub mod png;
pub mod run_lock;
pub mod shown;
