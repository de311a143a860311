//! Generic file output, shared by every stage that writes files:
//! [`atomic_write`] (temp file + rename, so a reader never sees half a file)
//! [`png`] (the one PNG writer, through it) and [`shown`] (paths printed as
//! a user would type them).

pub mod atomic_write;
pub mod png;
pub mod shown;
