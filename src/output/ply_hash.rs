//! The identity of a scene's `.ply`: the SHA-256 of its bytes, so that a
//! `drivers.safetensors` fitted to one set of splats is refused with
//! another. The file is streamed through the hash in
//! blocks, never held in memory.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Why a `.ply` could not be hashed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path} to compute its SHA-256: {error}")]
pub struct PlyHashError {
    /// The file.
    pub path: PathBuf,
    /// The I/O error.
    pub error: std::io::Error,
}

/// The SHA-256 of the file at `path`, as 64 lowercase hex digits.
pub fn ply_sha256(path: &Path) -> Result<String, PlyHashError> {
    let fail = |error| PlyHashError {
        path: path.to_path_buf(),
        error,
    };
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => hasher.update(&block[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_known_vectors_across_block_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.ply");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(
            ply_sha256(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // One million 'a's (FIPS 180-2 test vector): spans many blocks.
        std::fs::write(&path, vec![b'a'; 1_000_000]).unwrap();
        assert_eq!(
            ply_sha256(&path).unwrap(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
        let missing = dir.path().join("missing.ply");
        let e = ply_sha256(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.ply"), "{e}");
    }
}
