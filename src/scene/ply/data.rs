//! The content of a PLY file, kept losslessly: every element's rows as
//! little-endian bytes in the declared property types (ASCII input is
//! converted to that encoding), so values come back bit-identical and the
//! file can be written back unchanged.

use std::path::{Path, PathBuf};

use super::error::PlyError;
use super::header::{parse_header, PlyFormat, PlyHeaderLine, PlyProperty, ScalarType};

/// One element (e.g. `vertex`) with its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct PlyElement {
    /// Element name.
    pub name: String,
    /// Row count.
    pub count: usize,
    /// Properties in declared order.
    pub properties: Vec<PlyProperty>,
    /// Rows back to back, little-endian, each property in its declared type
    /// (a list property as its count followed by its items).
    pub data: Vec<u8>,
}

impl PlyElement {
    /// Index of the property called `name`.
    pub fn property_index(&self, name: &str) -> Option<usize> {
        self.properties.iter().position(|p| p.name == name)
    }

    /// Bytes per row when every property is a scalar, else `None`.
    pub fn row_size(&self) -> Option<usize> {
        self.properties
            .iter()
            .map(|p| {
                if p.list_count.is_some() {
                    None
                } else {
                    Some(p.ty.size())
                }
            })
            .sum()
    }

    /// Byte range `(start, end)` of every row in [`PlyElement::data`]. Rows
    /// are fixed-size unless the element has list properties, whose count
    /// prefix gives each row's length (the data was bounds-checked when
    /// parsed, so the walk stays inside it).
    pub fn row_spans(&self) -> Vec<(usize, usize)> {
        if let Some(row) = self.row_size() {
            return (0..self.count).map(|r| (r * row, (r + 1) * row)).collect();
        }
        let mut spans = Vec::with_capacity(self.count);
        let mut at = 0;
        for _ in 0..self.count {
            let start = at;
            for p in &self.properties {
                at += match p.list_count {
                    None => p.ty.size(),
                    Some(count_ty) => {
                        let n = count_ty.decode(&self.data[at..]) as usize;
                        count_ty.size() + n * p.ty.size()
                    }
                };
            }
            spans.push((start, at));
        }
        spans
    }

    /// Offset of scalar property `index` from the start of the row at `start`.
    fn offset_in_row(&self, start: usize, index: usize) -> usize {
        let mut at = start;
        for p in &self.properties[..index] {
            at += match p.list_count {
                None => p.ty.size(),
                Some(count_ty) => {
                    let n = count_ty.decode(&self.data[at..]) as usize;
                    count_ty.size() + n * p.ty.size()
                }
            };
        }
        at - start
    }

    /// Absolute byte offset of scalar property `name` in every row; `None`
    /// when it is missing or a list.
    fn scalar_offsets(&self, name: &str) -> Option<(Vec<usize>, ScalarType)> {
        let index = self.property_index(name)?;
        let property = &self.properties[index];
        if property.list_count.is_some() {
            return None;
        }
        let offsets = match self.row_size() {
            Some(row) => {
                let offset: usize = self.properties[..index].iter().map(|p| p.ty.size()).sum();
                (0..self.count).map(|r| r * row + offset).collect()
            }
            None => self
                .row_spans()
                .into_iter()
                .map(|(start, _)| start + self.offset_in_row(start, index))
                .collect(),
        };
        Some((offsets, property.ty))
    }

    /// Values of scalar property `name` as f64 (exact for every PLY type);
    /// `None` when the property is missing or is a list.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let (offsets, ty) = self.scalar_offsets(name)?;
        Some(
            offsets
                .iter()
                .map(|&o| ty.decode(&self.data[o..]))
                .collect(),
        )
    }

    /// Values of scalar property `name` converted to f32 (float properties
    /// exactly, doubles rounded); `None` when missing or a list.
    pub fn column_f32(&self, name: &str) -> Option<Vec<f32>> {
        let (offsets, ty) = self.scalar_offsets(name)?;
        let d = &self.data;
        Some(if ty == ScalarType::F32 {
            offsets
                .iter()
                .map(|&o| f32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]))
                .collect()
        } else {
            offsets.iter().map(|&o| ty.decode(&d[o..]) as f32).collect()
        })
    }
}

/// A whole PLY file.
#[derive(Clone, Debug, PartialEq)]
pub struct PlyData {
    /// Where it was read from (used in error messages).
    pub path: PathBuf,
    /// Encoding of the source file (writing always uses binary little-endian).
    pub source_format: PlyFormat,
    /// `comment`/`obj_info` lines and elements in header order.
    pub header_lines: Vec<PlyHeaderLine>,
    /// Elements in file order.
    pub elements: Vec<PlyElement>,
}

impl PlyData {
    /// Reads and parses a file.
    pub fn read(path: &Path) -> Result<PlyData, PlyError> {
        let bytes = std::fs::read(path).map_err(|error| PlyError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        PlyData::parse(&bytes, path)
    }

    /// Parses the bytes of a PLY file; `path` is only used in errors.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<PlyData, PlyError> {
        let header = parse_header(bytes, path)?;
        let mut elements = Vec::with_capacity(header.elements.len());
        let body = &bytes[header.data_start..];
        match header.format {
            PlyFormat::BinaryLittleEndian => {
                let mut pos = 0usize;
                for (name, count, properties) in header.elements {
                    let ctx = BinaryContext {
                        path,
                        file_len: bytes.len() as u64,
                        base: header.data_start as u64,
                        name: &name,
                        count,
                    };
                    let data = read_binary_element(body, &mut pos, &properties, &ctx)?;
                    elements.push(PlyElement {
                        name,
                        count,
                        properties,
                        data,
                    });
                }
                if pos < body.len() {
                    log::warn!(
                        "{}: {} bytes after the last element ignored",
                        crate::io::shown::shown(path),
                        body.len() - pos
                    );
                }
            }
            PlyFormat::Ascii => {
                let header_newlines = bytes[..header.data_start]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                let mut tokens = AsciiTokens {
                    bytes: body,
                    pos: 0,
                    line: header_newlines + 1,
                };
                for (name, count, properties) in header.elements {
                    let data = read_ascii_element(&mut tokens, count, &properties, path)?;
                    elements.push(PlyElement {
                        name,
                        count,
                        properties,
                        data,
                    });
                }
            }
        }
        Ok(PlyData {
            path: path.to_path_buf(),
            source_format: header.format,
            header_lines: header.lines,
            elements,
        })
    }

    /// The element called `name`.
    pub fn element(&self, name: &str) -> Option<&PlyElement> {
        self.elements.iter().find(|e| e.name == name)
    }

    /// The `vertex` element (one row per splat or point).
    pub fn vertex(&self) -> Result<&PlyElement, PlyError> {
        self.element("vertex")
            .ok_or_else(|| PlyError::MissingVertexElement {
                path: self.path.clone(),
            })
    }
}

struct BinaryContext<'a> {
    path: &'a Path,
    file_len: u64,
    base: u64,
    name: &'a str,
    count: usize,
}

impl BinaryContext<'_> {
    fn truncated(&self, row: usize, needed_in_body: usize) -> PlyError {
        PlyError::Truncated {
            path: self.path.to_path_buf(),
            element: self.name.to_string(),
            row,
            count: self.count,
            needed: self.base + needed_in_body as u64,
            file_len: self.file_len,
        }
    }
}

fn read_binary_element(
    body: &[u8],
    pos: &mut usize,
    properties: &[PlyProperty],
    ctx: &BinaryContext,
) -> Result<Vec<u8>, PlyError> {
    let start = *pos;
    let remaining = body.len() - start;
    let scalar_row: Option<usize> = properties
        .iter()
        .map(|p| {
            if p.list_count.is_some() {
                None
            } else {
                Some(p.ty.size())
            }
        })
        .sum();
    if let Some(row) = scalar_row {
        let total = row.checked_mul(ctx.count);
        match total {
            Some(total) if total <= remaining => {
                *pos += total;
                Ok(body[start..start + total].to_vec())
            }
            _ => {
                let full_rows = remaining.checked_div(row).unwrap_or(0);
                Err(ctx.truncated(full_rows, start + (full_rows + 1) * row))
            }
        }
    } else {
        let mut p = start;
        for row in 0..ctx.count {
            for prop in properties {
                let n = match prop.list_count {
                    None => 1,
                    Some(count_ty) => {
                        let end = p + count_ty.size();
                        if end > body.len() {
                            return Err(ctx.truncated(row, end));
                        }
                        let n = count_ty.decode(&body[p..]);
                        p = end;
                        if !(n >= 0.0 && n.fract() == 0.0 && n <= body.len() as f64) {
                            return Err(ctx.truncated(row, body.len() + 1));
                        }
                        n as usize
                    }
                };
                let end = p + n * prop.ty.size();
                if end > body.len() {
                    return Err(ctx.truncated(row, end));
                }
                p = end;
            }
        }
        *pos = p;
        Ok(body[start..p].to_vec())
    }
}

/// Whitespace-separated tokens of an ASCII data section, with line numbers.
struct AsciiTokens<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> AsciiTokens<'a> {
    fn next_token(&mut self) -> Option<&'a [u8]> {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            if self.bytes[self.pos] == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
        if self.pos == self.bytes.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < self.bytes.len() && !self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        Some(&self.bytes[start..self.pos])
    }
}

/// Parses `token` as `ty` and appends its little-endian bytes; `None` when
/// it is not a value of that type.
fn push_ascii_value(out: &mut Vec<u8>, token: &str, ty: ScalarType) -> Option<f64> {
    if ty.is_float() {
        if ty == ScalarType::F32 {
            let v: f32 = token.parse().ok()?;
            out.extend_from_slice(&v.to_le_bytes());
            Some(v as f64)
        } else {
            let v: f64 = token.parse().ok()?;
            out.extend_from_slice(&v.to_le_bytes());
            Some(v)
        }
    } else {
        let v: i64 = token.parse().ok()?;
        match ty {
            ScalarType::I8 => out.extend_from_slice(&i8::try_from(v).ok()?.to_le_bytes()),
            ScalarType::U8 => out.extend_from_slice(&u8::try_from(v).ok()?.to_le_bytes()),
            ScalarType::I16 => out.extend_from_slice(&i16::try_from(v).ok()?.to_le_bytes()),
            ScalarType::U16 => out.extend_from_slice(&u16::try_from(v).ok()?.to_le_bytes()),
            ScalarType::I32 => out.extend_from_slice(&i32::try_from(v).ok()?.to_le_bytes()),
            ScalarType::U32 => out.extend_from_slice(&u32::try_from(v).ok()?.to_le_bytes()),
            ScalarType::F32 | ScalarType::F64 => return None,
        }
        Some(v as f64)
    }
}

fn read_ascii_element(
    tokens: &mut AsciiTokens,
    count: usize,
    properties: &[PlyProperty],
    path: &Path,
) -> Result<Vec<u8>, PlyError> {
    let mut data = Vec::new();
    // Rows without properties hold no tokens: whatever the count, there is
    // nothing to read (and counting to it would take forever).
    if properties.is_empty() {
        return Ok(data);
    }
    for row in 0..count {
        for prop in properties {
            let value = |tokens: &mut AsciiTokens, ty: ScalarType, data: &mut Vec<u8>| {
                let token = tokens.next_token();
                let text = token.and_then(|t| std::str::from_utf8(t).ok());
                text.and_then(|t| push_ascii_value(data, t, ty))
                    .ok_or_else(|| PlyError::BadAsciiValue {
                        path: path.to_path_buf(),
                        line: tokens.line,
                        row,
                        property: prop.name.clone(),
                        token: match token {
                            None => "<end of file>".to_string(),
                            Some(t) => String::from_utf8_lossy(t).into_owned(),
                        },
                        type_name: ty.name(),
                    })
            };
            match prop.list_count {
                None => {
                    value(tokens, prop.ty, &mut data)?;
                }
                Some(count_ty) => {
                    let n = value(tokens, count_ty, &mut data)?;
                    if !(n >= 0.0 && n.fract() == 0.0) {
                        return Err(PlyError::BadAsciiValue {
                            path: path.to_path_buf(),
                            line: tokens.line,
                            row,
                            property: prop.name.clone(),
                            token: n.to_string(),
                            type_name: "list length",
                        });
                    }
                    for _ in 0..n as u64 {
                        value(tokens, prop.ty, &mut data)?;
                    }
                }
            }
        }
    }
    Ok(data)
}
