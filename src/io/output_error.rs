//! Why an output directory is refused or could not be written
//! ([`super::output_dir`]). Each names the path, what is wrong and the fix.

use std::path::PathBuf;

use super::shown::shown;

/// Why an output directory is refused or could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputDirError {
    /// `--out` is a file system root or the home directory, where any
    /// name physfit writes could be the user's.
    #[error(
        "--out {}: {what}; physfit does not write there, where its file names could be anyone's; \
         fix: choose a folder of its own, such as {}",
        shown(out), shown(&out.join("physfit-out"))
    )]
    Forbidden {
        /// The output directory.
        out: PathBuf,
        /// "is a file system root", "is the home directory".
        what: &'static str,
    },
    /// `--out` exists and is not a directory.
    #[error(
        "--out {} exists and is not a directory; fix: choose another --out",
        shown(out)
    )]
    NotADirectory {
        /// The output directory.
        out: PathBuf,
    },
    /// `--out` holds one of the command's inputs, or lies inside a folder
    /// of them, so its outputs could replace them.
    #[error(
        "--out {} {relation} {} (the {what} this `physfit {command}` reads); its outputs could \
         replace it, with or without --force; fix: choose an --out that neither holds nor lies \
         inside the command's inputs",
        shown(out),
        shown(input)
    )]
    OverInput {
        /// The output directory.
        out: PathBuf,
        /// The command.
        command: String,
        /// "holds", "lies inside".
        relation: &'static str,
        /// The input.
        input: PathBuf,
        /// What the input is ("scene file", "reference frames", …).
        what: &'static str,
    },
    /// A folder physfit would write into is a symbolic link.
    #[error(
        "{} is a symbolic link, and physfit never writes through a link (the files of \
         `physfit {command}` go there); fix: replace the link by a real folder, or choose \
         another --out",
        shown(path)
    )]
    Link {
        /// The link.
        path: PathBuf,
        /// The command.
        command: String,
    },
    /// `--out` holds an earlier run's files and the run was not asked to
    /// replace (or continue) them.
    #[error(
        "--out {} holds the files of an earlier `physfit {command}` ({listing}); fix: {fix}",
        shown(out)
    )]
    Earlier {
        /// The output directory.
        out: PathBuf,
        /// The command.
        command: String,
        /// The files found, as a short listing.
        listing: String,
        /// The flags or choices that fix it.
        fix: String,
    },
    /// Another physfit run holds the directory's lock.
    #[error(
        "--out {} is being written by another physfit run ({holder}); one run writes a \
         directory at a time; fix: wait for that run to end, or choose another --out",
        shown(out)
    )]
    Locked {
        /// The output directory.
        out: PathBuf,
        /// The other run, as its lock file names it.
        holder: String,
    },
    /// A file system operation failed.
    #[error("{doing} {}: {error}{}", shown(path), advice(error))]
    Io {
        /// What was being done ("creating", "removing the earlier", …).
        doing: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

/// The fix for the commonest I/O failures.
fn advice(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            "; fix: make it writable, or choose another --out"
        }
        std::io::ErrorKind::StorageFull => "; fix: free space there, or choose another --out",
        _ => "",
    }
}

impl OutputDirError {
    /// An [`OutputDirError::Io`] of `path`.
    pub fn io(
        doing: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |error| Self::Io { doing, path, error }
    }
}
