//! Writing a PLY file back: binary little-endian, the header lines, elements
//! and properties of the source in their order with their exact values, plus
//! optional per-splat `float` properties appended to the `vertex` element
//! (e.g. a fitted `youngs_modulus`). The write is atomic.

use std::path::Path;

use super::data::PlyData;
use super::error::PlyError;
use super::header::PlyHeaderLine;
use crate::io::atomic_write::write_atomic;

/// A per-row `float` property to append to the `vertex` element.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraProperty {
    /// Property name (must not clash with an existing one).
    pub name: String,
    /// One value per `vertex` row (see `LoadedSplats::per_row`).
    pub values: Vec<f32>,
}

impl PlyData {
    /// Encodes the file as binary little-endian PLY with `extras` appended to
    /// the `vertex` element. With no extras, a binary little-endian source
    /// written with `\n` line ends comes back byte for byte.
    pub fn to_bytes(&self, extras: &[ExtraProperty], path: &Path) -> Result<Vec<u8>, PlyError> {
        let bad = |name: &str, message: String| PlyError::BadExtra {
            path: path.to_path_buf(),
            name: name.to_string(),
            message,
        };
        let vertex_index = self.elements.iter().position(|e| e.name == "vertex");
        if !extras.is_empty() {
            let vertex = &self.elements[vertex_index
                .ok_or_else(|| bad(&extras[0].name, "the file has no `vertex` element".into()))?];
            for (i, extra) in extras.iter().enumerate() {
                if vertex.property_index(&extra.name).is_some()
                    || extras[..i].iter().any(|e| e.name == extra.name)
                {
                    return Err(bad(
                        &extra.name,
                        "a property of that name exists already".into(),
                    ));
                }
                if extra.name.is_empty() || extra.name.contains(char::is_whitespace) {
                    return Err(bad(
                        &extra.name,
                        "names must be non-empty without spaces".into(),
                    ));
                }
                if extra.values.len() != vertex.count {
                    return Err(bad(
                        &extra.name,
                        format!(
                            "{} values given for {} vertex rows",
                            extra.values.len(),
                            vertex.count
                        ),
                    ));
                }
            }
        }
        let mut header = String::from("ply\nformat binary_little_endian 1.0\n");
        for line in &self.header_lines {
            match line {
                PlyHeaderLine::Text(text) => {
                    header.push_str(text);
                    header.push('\n');
                }
                PlyHeaderLine::Element(i) => {
                    let e = &self.elements[*i];
                    header.push_str(&format!("element {} {}\n", e.name, e.count));
                    for p in &e.properties {
                        header.push_str(&format!("property {} {}\n", p.type_text, p.name));
                    }
                    if Some(*i) == vertex_index {
                        for extra in extras {
                            header.push_str(&format!("property float {}\n", extra.name));
                        }
                    }
                }
            }
        }
        header.push_str("end_header\n");
        let body_len: usize = self.elements.iter().map(|e| e.data.len()).sum::<usize>()
            + extras.iter().map(|e| e.values.len() * 4).sum::<usize>();
        let mut out = Vec::with_capacity(header.len() + body_len);
        out.extend_from_slice(header.as_bytes());
        for (i, e) in self.elements.iter().enumerate() {
            if Some(i) == vertex_index && !extras.is_empty() {
                for (r, (start, end)) in e.row_spans().into_iter().enumerate() {
                    out.extend_from_slice(&e.data[start..end]);
                    for extra in extras {
                        out.extend_from_slice(&extra.values[r].to_le_bytes());
                    }
                }
            } else {
                out.extend_from_slice(&e.data);
            }
        }
        Ok(out)
    }

    /// Writes the file to `path` atomically (see [`PlyData::to_bytes`]).
    pub fn write(&self, path: &Path, extras: &[ExtraProperty]) -> Result<(), PlyError> {
        let bytes = self.to_bytes(extras, path)?;
        write_atomic(path, &bytes).map_err(|error| PlyError::Io {
            path: path.to_path_buf(),
            error,
        })
    }
}
