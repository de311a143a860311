//! Reading safetensors archives with the `safetensors` crate (which
//! replaces physfit's hand-written reader), with typed errors that name the
//! file, the tensor and the fix. Used for the fit's `drivers.safetensors`
//! ([`super::drivers_file`]) and for the gsplat reference renders in
//! `tests/fixtures/` (`crate::reference::safetensors`).
//!
//! The format: an 8-byte little-endian header length `n`, `n` bytes of JSON
//! mapping each tensor name to `{dtype, shape, data_offsets}` (plus an
//! optional `__metadata__` string map), then the raw little-endian data,
//! which the tensors must cover exactly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::tensor::Metadata;
use safetensors::{Dtype, SafeTensorError, SafeTensors};

/// Why a safetensors archive, or a tensor of it, could not be read.
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
    /// The file is shorter (or longer) than its header says.
    #[error(
        "{path}: truncated safetensors file ({len} bytes; its header needs {needed}{}); \
         write or download it again",
        .tensor.as_ref().map(|t| format!(", tensor `{t}` is cut off")).unwrap_or_default()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// File length in bytes.
        len: usize,
        /// Bytes the header requires (`usize::MAX` when not even the
        /// header is there to say).
        needed: usize,
        /// The first tensor whose data lies past the end, when the header
        /// could be read.
        tensor: Option<String>,
    },
    /// The JSON header does not parse, or its offsets, shapes and dtypes
    /// disagree.
    #[error("{path}: malformed safetensors header: {reason}; the file is not a safetensors archive or was altered")]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A tensor the reader needs is absent.
    #[error("{path}: tensor `{tensor}` is missing; the file was written by another program or another version")]
    Missing {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
    },
    /// A tensor is stored with another element type.
    #[error("{path}: tensor `{tensor}` has dtype {found}, expected {expected} (convert it to {expected} before saving, e.g. `tensor.float()` for F32 in PyTorch, or write the file again)")]
    Dtype {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Its dtype.
        found: String,
        /// The dtype the reader needs.
        expected: String,
    },
    /// A tensor has another shape.
    #[error("{path}: tensor `{tensor}` has shape {found:?}, expected {expected}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Its shape.
        found: Vec<usize>,
        /// The shape the reader needs (`_` for a free dimension).
        expected: String,
    },
}

/// An element type a tensor can be read as: its safetensors dtype and its
/// little-endian decoding.
pub trait TensorElement: Sized + Copy {
    /// The dtype stored in the archive.
    const DTYPE: Dtype;
    /// Size in bytes.
    const SIZE: usize;
    /// Decodes one little-endian element of `SIZE` bytes.
    fn from_le(bytes: &[u8]) -> Self;
    /// Encodes the elements little-endian (for writing).
    fn to_le_bytes_all(values: &[Self]) -> Vec<u8>;
}

macro_rules! tensor_element {
    ($t:ty, $dtype:expr) => {
        impl TensorElement for $t {
            const DTYPE: Dtype = $dtype;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("SIZE bytes"))
            }
            fn to_le_bytes_all(values: &[Self]) -> Vec<u8> {
                values.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
        }
    };
}

tensor_element!(f32, Dtype::F32);
tensor_element!(f64, Dtype::F64);
tensor_element!(u8, Dtype::U8);
tensor_element!(u32, Dtype::U32);

/// Reads the bytes of a safetensors file.
pub fn read_archive_bytes(path: &Path) -> Result<Vec<u8>, SafetensorsError> {
    std::fs::read(path).map_err(|error| SafetensorsError::Io {
        path: path.to_owned(),
        error,
    })
}

/// A parsed archive borrowing its bytes: the tensors and the metadata map.
pub struct TensorArchive<'a> {
    path: &'a Path,
    tensors: SafeTensors<'a>,
    metadata: HashMap<String, String>,
}

impl<'a> TensorArchive<'a> {
    /// Parses `bytes` (`path` only names the file in errors).
    pub fn parse(bytes: &'a [u8], path: &'a Path) -> Result<Self, SafetensorsError> {
        let metadata = match SafeTensors::read_metadata(bytes) {
            Ok((_, metadata)) => metadata.metadata().clone().unwrap_or_default(),
            Err(e) => return Err(classify(e, bytes, path)),
        };
        let tensors = SafeTensors::deserialize(bytes).map_err(|e| classify(e, bytes, path))?;
        Ok(Self {
            path,
            tensors,
            metadata,
        })
    }

    /// The file, as given.
    #[cfg(feature = "reference")]
pub fn path(&self) -> &Path {
        self.path
    }

    /// The `__metadata__` string map (empty when absent).
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    /// The names of every tensor (in no particular order).
    #[cfg(feature = "reference")]
    pub fn names(&self) -> Vec<&str> {
        self.tensors.names()
    }

    /// True when tensor `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.tensor(name).is_ok()
    }

    /// Tensor `name` as elements of `T` (row-major), with its shape; any
    /// shape.
    pub fn tensor<T: TensorElement>(
        &self,
        name: &str,
    ) -> Result<(Vec<usize>, Vec<T>), SafetensorsError> {
        let view = self
            .tensors
            .tensor(name)
            .map_err(|_| SafetensorsError::Missing {
                path: self.path.to_owned(),
                tensor: name.to_string(),
            })?;
        if view.dtype() != T::DTYPE {
            return Err(SafetensorsError::Dtype {
                path: self.path.to_owned(),
                tensor: name.to_string(),
                found: view.dtype().to_string(),
                expected: T::DTYPE.to_string(),
            });
        }
        let values = view.data().chunks_exact(T::SIZE).map(T::from_le).collect();
        Ok((view.shape().to_vec(), values))
    }

    /// Tensor `name` with a shape matching `expected` (`None` = any size
    /// along that axis), as elements of `T`, with its shape.
    pub fn shaped<T: TensorElement>(
        &self,
        name: &str,
        expected: &[Option<usize>],
    ) -> Result<(Vec<usize>, Vec<T>), SafetensorsError> {
        let (shape, values) = self.tensor::<T>(name)?;
        let fits = shape.len() == expected.len()
            && shape
                .iter()
                .zip(expected)
                .all(|(s, e)| e.is_none_or(|e| e == *s));
        if !fits {
            let dims: Vec<String> = expected
                .iter()
                .map(|e| e.map_or("_".to_string(), |d| d.to_string()))
                .collect();
            return Err(SafetensorsError::Shape {
                path: self.path.to_owned(),
                tensor: name.to_string(),
                found: shape,
                expected: format!("[{}]", dims.join(", ")),
            });
        }
        Ok((shape, values))
    }
}

/// The crate's error as a typed one. A file whose tensors run past its end
/// is reported as truncated, naming the first tensor cut off (the header
/// is read again with the crate's [`Metadata`] to find it).
fn classify(error: SafeTensorError, bytes: &[u8], path: &Path) -> SafetensorsError {
    let header_len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .and_then(|n| usize::try_from(n).ok());
    let truncated = |needed: usize, tensor: Option<String>| SafetensorsError::Truncated {
        path: path.to_owned(),
        len: bytes.len(),
        needed,
        tensor,
    };
    match error {
        SafeTensorError::HeaderTooSmall => truncated(8, None),
        SafeTensorError::InvalidHeaderLength => truncated(
            header_len
                .and_then(|n| n.checked_add(8))
                .unwrap_or(usize::MAX),
            None,
        ),
        SafeTensorError::MetadataIncompleteBuffer => {
            let start = header_len.map(|n| n + 8).unwrap_or(8);
            let metadata: Option<Metadata> = bytes
                .get(8..start)
                .and_then(|h| serde_json::from_slice(h).ok());
            let Some(metadata) = metadata else {
                return truncated(usize::MAX, None);
            };
            let data_len = bytes.len() - start;
            let needed = start + metadata.data_len();
            if needed < bytes.len() {
                return SafetensorsError::Header {
                    path: path.to_owned(),
                    reason: format!(
                        "{} bytes follow the last tensor's data",
                        bytes.len() - needed
                    ),
                };
            }
            let cut = metadata.offset_keys().into_iter().find(|name| {
                metadata
                    .info(name)
                    .is_some_and(|info| info.data_offsets.1 > data_len)
            });
            truncated(needed, cut)
        }
        other => SafetensorsError::Header {
            path: path.to_owned(),
            reason: other.to_string(),
        },
    }
}
