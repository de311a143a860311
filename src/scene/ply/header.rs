//! PLY header: format line, comments, elements and their properties, kept in
//! file order so a file can be written back exactly.

use std::path::Path;

use super::error::PlyError;

/// Encoding of the data section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlyFormat {
    /// `format ascii 1.0`: whitespace-separated text.
    Ascii,
    /// `format binary_little_endian 1.0`.
    BinaryLittleEndian,
}

/// A PLY scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarType {
    /// `char` / `int8`.
    I8,
    /// `uchar` / `uint8`.
    U8,
    /// `short` / `int16`.
    I16,
    /// `ushort` / `uint16`.
    U16,
    /// `int` / `int32`.
    I32,
    /// `uint` / `uint32`.
    U32,
    /// `float` / `float32`.
    F32,
    /// `double` / `float64`.
    F64,
}

impl ScalarType {
    /// Parses a PLY type name, including the sized aliases.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        Some(match name {
            "char" | "int8" => ScalarType::I8,
            "uchar" | "uint8" => ScalarType::U8,
            "short" | "int16" => ScalarType::I16,
            "ushort" | "uint16" => ScalarType::U16,
            "int" | "int32" => ScalarType::I32,
            "uint" | "uint32" => ScalarType::U32,
            "float" | "float32" => ScalarType::F32,
            "double" | "float64" => ScalarType::F64,
            _ => return None,
        })
    }

    /// Canonical PLY name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::I8 => "char",
            ScalarType::U8 => "uchar",
            ScalarType::I16 => "short",
            ScalarType::U16 => "ushort",
            ScalarType::I32 => "int",
            ScalarType::U32 => "uint",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
        }
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::F64 => 8,
        }
    }

    /// Decodes one little-endian value; `bytes` holds at least `size()` bytes.
    pub fn decode(self, bytes: &[u8]) -> f64 {
        let b4 = || [bytes[0], bytes[1], bytes[2], bytes[3]];
        match self {
            ScalarType::I8 => bytes[0] as i8 as f64,
            ScalarType::U8 => bytes[0] as f64,
            ScalarType::I16 => i16::from_le_bytes([bytes[0], bytes[1]]) as f64,
            ScalarType::U16 => u16::from_le_bytes([bytes[0], bytes[1]]) as f64,
            ScalarType::I32 => i32::from_le_bytes(b4()) as f64,
            ScalarType::U32 => u32::from_le_bytes(b4()) as f64,
            ScalarType::F32 => f32::from_le_bytes(b4()) as f64,
            ScalarType::F64 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&bytes[..8]);
                f64::from_le_bytes(b)
            }
        }
    }

    /// True for `float` and `double`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }
}

/// One `property` line.
#[derive(Clone, Debug, PartialEq)]
pub struct PlyProperty {
    /// Property name.
    pub name: String,
    /// Value type (the item type for a list).
    pub ty: ScalarType,
    /// For `property list COUNT ITEM name`: the count type.
    pub list_count: Option<ScalarType>,
    /// The type text as written in the header (`float`, `float32`,
    /// `list uchar int`), reproduced on write.
    pub type_text: String,
}

/// Header lines other than `ply`, `format` and `end_header`, in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum PlyHeaderLine {
    /// A `comment` or `obj_info` line, verbatim.
    Text(String),
    /// An `element` line (index into the element list) with its properties.
    Element(usize),
}

/// A parsed header.
pub(crate) struct Header {
    pub format: PlyFormat,
    pub lines: Vec<PlyHeaderLine>,
    pub elements: Vec<(String, usize, Vec<PlyProperty>)>,
    /// Offset of the first data byte.
    pub data_start: usize,
}

/// Parses the header at the start of `bytes`.
pub(crate) fn parse_header(bytes: &[u8], path: &Path) -> Result<Header, PlyError> {
    let malformed = |line: usize, message: String| PlyError::MalformedHeader {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut pos = 0usize;
    let mut line_no = 0usize;
    let mut format = None;
    let mut lines = Vec::new();
    let mut elements: Vec<(String, usize, Vec<PlyProperty>)> = Vec::new();
    // (element index, property name) of every property so far.
    let mut seen = std::collections::HashSet::new();
    loop {
        let Some(len) = bytes[pos..].iter().position(|&b| b == b'\n') else {
            if line_no == 0 {
                return Err(PlyError::NotPly {
                    path: path.to_path_buf(),
                });
            }
            return Err(malformed(
                line_no + 1,
                "the header has no `end_header` line".into(),
            ));
        };
        let raw = &bytes[pos..pos + len];
        pos += len + 1;
        line_no += 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(text) = std::str::from_utf8(raw) else {
            if line_no == 1 {
                return Err(PlyError::NotPly {
                    path: path.to_path_buf(),
                });
            }
            return Err(malformed(line_no, "header line is not text".into()));
        };
        if line_no == 1 {
            if text.trim() != "ply" {
                return Err(PlyError::NotPly {
                    path: path.to_path_buf(),
                });
            }
            continue;
        }
        let mut words = text.split_whitespace();
        let keyword = words.next().unwrap_or("");
        match keyword {
            "format" => {
                let rest: Vec<&str> = words.collect();
                format = Some(match rest.as_slice() {
                    ["ascii", "1.0"] => PlyFormat::Ascii,
                    ["binary_little_endian", "1.0"] => PlyFormat::BinaryLittleEndian,
                    _ => {
                        return Err(PlyError::UnsupportedFormat {
                            path: path.to_path_buf(),
                            line: line_no,
                            format: rest.join(" "),
                        })
                    }
                });
            }
            "comment" | "obj_info" => lines.push(PlyHeaderLine::Text(text.to_string())),
            "element" => {
                let (Some(name), Some(count), None) = (words.next(), words.next(), words.next())
                else {
                    return Err(malformed(line_no, "expected `element NAME COUNT`".into()));
                };
                let count: usize = count.parse().map_err(|_| {
                    malformed(line_no, format!("element count `{count}` is not a count"))
                })?;
                lines.push(PlyHeaderLine::Element(elements.len()));
                elements.push((name.to_string(), count, Vec::new()));
            }
            "property" => {
                let elements_len = elements.len();
                let Some((element_name, _, props)) = elements.last_mut() else {
                    return Err(malformed(line_no, "`property` before any `element`".into()));
                };
                let rest: Vec<&str> = words.collect();
                let scalar = |name: &str| {
                    ScalarType::from_name(name).ok_or_else(|| PlyError::UnknownType {
                        path: path.to_path_buf(),
                        line: line_no,
                        type_name: name.to_string(),
                    })
                };
                let prop = match rest.as_slice() {
                    ["list", count, item, name] => PlyProperty {
                        name: name.to_string(),
                        ty: scalar(item)?,
                        list_count: Some(scalar(count)?),
                        type_text: format!("list {count} {item}"),
                    },
                    [ty, name] if *ty != "list" => PlyProperty {
                        name: name.to_string(),
                        ty: scalar(ty)?,
                        list_count: None,
                        type_text: ty.to_string(),
                    },
                    _ => {
                        return Err(malformed(
                            line_no,
                            "expected `property TYPE NAME` or `property list COUNT_TYPE ITEM_TYPE NAME`"
                                .into(),
                        ))
                    }
                };
                // A set, not a scan of the properties so far: a header of
                // 100k properties is refused in milliseconds, not minutes.
                if !seen.insert((elements_len, prop.name.clone())) {
                    return Err(PlyError::DuplicateProperty {
                        path: path.to_path_buf(),
                        element: element_name.clone(),
                        property: prop.name,
                    });
                }
                props.push(prop);
            }
            "end_header" => break,
            "" => return Err(malformed(line_no, "empty header line".into())),
            other => {
                return Err(malformed(
                    line_no,
                    format!("unknown header keyword `{other}`"),
                ));
            }
        }
    }
    let format = format.ok_or_else(|| malformed(2, "no `format` line".into()))?;
    Ok(Header {
        format,
        lines,
        elements,
        data_start: pos,
    })
}
