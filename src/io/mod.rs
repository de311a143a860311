//! Generic file output, shared by every stage that writes files:
//! [`atomic_write`] (temp file + rename, so a reader never sees half a file)
//! and [`png`] (the one PNG writer, through it).

pub mod atomic_write;
pub mod png;
