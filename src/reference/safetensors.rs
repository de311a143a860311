//! Reading the gsplat reference renders in `tests/fixtures/gsplat_reference/`
//! (safetensors archives of F32 tensors) with the `safetensors` crate,
//! through [`crate::output::tensor_archive`], which gives the typed errors
//! (a well-kept reader rather than a hand-written one).

use std::collections::HashMap;
use std::path::Path;

pub use crate::output::tensor_archive::SafetensorsError;
use crate::output::tensor_archive::{read_archive_bytes, TensorArchive};

/// A tensor: its shape and its values in row-major order.
pub type F32Tensor = (Vec<usize>, Vec<f32>);

/// Read every tensor of a safetensors file whose tensors are all F32.
pub fn read_f32_tensors(
    path: impl AsRef<Path>,
) -> Result<HashMap<String, F32Tensor>, SafetensorsError> {
    let path = path.as_ref();
    let bytes = read_archive_bytes(path)?;
    parse_f32_tensors(&bytes, path)
}

/// Parse an in-memory safetensors archive (`path` only names it in errors);
/// the `__metadata__` map is ignored.
pub fn parse_f32_tensors(
    bytes: &[u8],
    path: &Path,
) -> Result<HashMap<String, F32Tensor>, SafetensorsError> {
    let archive = TensorArchive::parse(bytes, path)?;
    archive
        .names()
        .into_iter()
        .map(|name| Ok((name.to_string(), archive.tensor::<f32>(name)?)))
        .collect()
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

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_f32_tensors_and_skips_metadata() {
        let data = floats(&[1.0, -2.5, 3.0, 0.25, 7.0]);
        let header = r#"{"__metadata__":{"a":"b"},"x":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"y":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}}"#;
        let t = parse_f32_tensors(&archive(header, &data), Path::new("mem")).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t["x"], (vec![2, 2], vec![1.0, -2.5, 3.0, 0.25]));
        assert_eq!(t["y"], (vec![1], vec![7.0]));
    }

    #[test]
    fn rejects_bad_input_with_typed_errors() {
        let p = Path::new("mem.safetensors");
        let message = |r: Result<_, SafetensorsError>| r.unwrap_err().to_string();
        // Shorter than the length field.
        let e = parse_f32_tensors(&[1, 2, 3], p);
        assert!(matches!(
            e,
            Err(SafetensorsError::Truncated { needed: 8, .. })
        ));
        // A header cut short.
        let full = archive(
            r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            &floats(&[1.0, 2.0]),
        );
        assert!(matches!(
            parse_f32_tensors(&full[..20], p),
            Err(SafetensorsError::Truncated { tensor: None, .. })
        ));
        // Data cut short: names the tensor cut off.
        let header = r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#;
        let cut = archive(header, &floats(&[1.0, 2.0]));
        let m = message(parse_f32_tensors(&cut, p));
        assert!(
            m.contains("mem.safetensors") && m.contains("`y`") && m.contains("truncated"),
            "{m}"
        );
        // Wrong dtype.
        let header = r#"{"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#;
        let m = message(parse_f32_tensors(&archive(header, &[0; 4]), p));
        assert!(
            m.contains("`x`") && m.contains("F16") && m.contains("F32"),
            "{m}"
        );
        // Offsets that disagree with the shape.
        let header = r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#;
        assert!(matches!(
            parse_f32_tensors(&archive(header, &[0; 4]), p),
            Err(SafetensorsError::Header { .. })
        ));
        // Not JSON.
        assert!(matches!(
            parse_f32_tensors(&archive("{nope", &[]), p),
            Err(SafetensorsError::Header { .. })
        ));
    }
}
