//! Minimal reader for safetensors archives holding f32 tensors (the format of
//! the gsplat reference renders in `tests/fixtures/gsplat_reference/`): an 8-byte
//! little-endian header length `n`, `n` bytes of JSON header mapping each
//! tensor name to `{dtype, shape, data_offsets: [begin, end]}` (offsets
//! relative to the byte after the header; an optional `__metadata__` entry is
//! ignored), then the raw little-endian data.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A tensor: its shape and its values in row-major order.
pub type F32Tensor = (Vec<usize>, Vec<f32>);

/// Why a safetensors archive could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SafetensorsError {
    /// The file could not be read.
    #[error("cannot read safetensors file {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is shorter than its declared header.
    #[error("{path}: truncated safetensors file ({len} bytes; header needs {needed}); re-export or re-download it")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// File length in bytes.
        len: usize,
        /// Bytes the header length field requires.
        needed: usize,
    },
    /// The JSON header does not parse or lacks a field.
    #[error("{path}: malformed safetensors header: {reason}")]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A tensor is stored in a type other than F32.
    #[error("{path}: tensor '{name}' has dtype {dtype}; only F32 is supported (convert it with e.g. `tensor.float()` before saving)")]
    UnsupportedDtype {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// Its dtype.
        dtype: String,
    },
    /// A tensor's byte range disagrees with its shape or the file length.
    #[error("{path}: tensor '{name}' has data_offsets [{begin}, {end}] but shape {shape:?} needs {expected} bytes within {available} data bytes")]
    BadOffsets {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// Start offset.
        begin: usize,
        /// End offset.
        end: usize,
        /// Declared shape.
        shape: Vec<usize>,
        /// Bytes the shape requires.
        expected: usize,
        /// Bytes in the data section.
        available: usize,
    },
}

#[derive(serde::Deserialize)]
struct TensorHeader {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// Read every tensor of a safetensors file whose tensors are all F32.
pub fn read_f32_tensors(
    path: impl AsRef<Path>,
) -> Result<HashMap<String, F32Tensor>, SafetensorsError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| SafetensorsError::Io {
        path: path.to_owned(),
        error,
    })?;
    parse_f32_tensors(&bytes, path)
}

/// Parse an in-memory safetensors archive (`path` only names it in errors).
pub fn parse_f32_tensors(
    bytes: &[u8],
    path: &Path,
) -> Result<HashMap<String, F32Tensor>, SafetensorsError> {
    let truncated = |needed: usize| SafetensorsError::Truncated {
        path: path.to_owned(),
        len: bytes.len(),
        needed,
    };
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| truncated(8))?;
    let header_len = usize::try_from(u64::from_le_bytes(len_bytes)).unwrap_or(usize::MAX);
    let data_start = header_len
        .checked_add(8)
        .ok_or_else(|| truncated(usize::MAX))?;
    let header = bytes
        .get(8..data_start)
        .ok_or_else(|| truncated(data_start))?;
    let data = &bytes[data_start..];
    let header_err = |reason: String| SafetensorsError::Header {
        path: path.to_owned(),
        reason,
    };
    let entries: HashMap<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| header_err(e.to_string()))?;

    let mut out = HashMap::new();
    for (name, value) in entries {
        if name == "__metadata__" {
            continue;
        }
        let info: TensorHeader = serde_json::from_value(value)
            .map_err(|e| header_err(format!("tensor '{name}': {e}")))?;
        if info.dtype != "F32" {
            return Err(SafetensorsError::UnsupportedDtype {
                path: path.to_owned(),
                name,
                dtype: info.dtype,
            });
        }
        let [begin, end] = info.data_offsets;
        let count = info
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let expected = count.and_then(|c| c.checked_mul(4));
        let slice = data.get(begin..end).filter(|s| Some(s.len()) == expected);
        let Some(slice) = slice else {
            return Err(SafetensorsError::BadOffsets {
                path: path.to_owned(),
                name,
                begin,
                end,
                shape: info.shape,
                expected: expected.unwrap_or(usize::MAX),
                available: data.len(),
            });
        };
        let values = slice
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.insert(name, (info.shape, values));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn reads_f32_tensors_and_skips_metadata() {
        let data: Vec<u8> = [1.0f32, -2.5, 3.0, 0.25, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let header = r#"{"__metadata__":{"a":"b"},"x":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"y":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}}"#;
        let t = parse_f32_tensors(&archive(header, &data), Path::new("mem")).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t["x"], (vec![2, 2], vec![1.0, -2.5, 3.0, 0.25]));
        assert_eq!(t["y"], (vec![1], vec![7.0]));
    }

    #[test]
    fn rejects_bad_input_with_typed_errors() {
        let p = Path::new("mem");
        assert!(matches!(
            parse_f32_tensors(&[1, 2, 3], p),
            Err(SafetensorsError::Truncated { .. })
        ));
        let header = r#"{"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#;
        assert!(matches!(
            parse_f32_tensors(&archive(header, &[0; 4]), p),
            Err(SafetensorsError::UnsupportedDtype { .. })
        ));
        let header = r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#;
        assert!(matches!(
            parse_f32_tensors(&archive(header, &[0; 4]), p),
            Err(SafetensorsError::BadOffsets { .. })
        ));
        assert!(matches!(
            parse_f32_tensors(&archive("{nope", &[]), p),
            Err(SafetensorsError::Header { .. })
        ));
    }
}
