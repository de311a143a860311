//! Typed errors of PLY reading and writing; each names the file and where in
//! it the problem is.

use std::path::PathBuf;

/// Why a `.ply` file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PlyError {
    /// The file could not be opened, read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// The file does not start with the `ply` magic line.
    #[error("{path}: not a PLY file (the first line is not `ply`)")]
    NotPly {
        /// The file.
        path: PathBuf,
    },
    /// The header has no `end_header` line, or a line that is not PLY.
    #[error("{path}: header line {line}: {message}")]
    MalformedHeader {
        /// The file.
        path: PathBuf,
        /// 1-based header line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The `format` line names an encoding physfit does not read.
    #[error(
        "{path}: header line {line}: unsupported format `{format}`; physfit reads \
         `ascii 1.0` and `binary_little_endian 1.0` (convert big-endian files, \
         e.g. by re-exporting from the trainer)"
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// 1-based header line number.
        line: usize,
        /// The format text found.
        format: String,
    },
    /// A property has a type name that is not a PLY scalar type.
    #[error(
        "{path}: header line {line}: unknown property type `{type_name}` (expected one of \
         char uchar short ushort int uint float double int8 uint8 int16 uint16 int32 \
         uint32 float32 float64)"
    )]
    UnknownType {
        /// The file.
        path: PathBuf,
        /// 1-based header line number.
        line: usize,
        /// The type name found.
        type_name: String,
    },
    /// A property of the splat (`vertex`) element is a list; splat attributes
    /// are scalars.
    #[error(
        "{path}: property `{property}` of element `vertex` is a list; 3DGS splat \
         attributes must be scalar properties (`property float {property}`)"
    )]
    ListProperty {
        /// The file.
        path: PathBuf,
        /// The property name.
        property: String,
    },
    /// A property name appears twice in one element.
    #[error("{path}: element `{element}` declares property `{property}` twice")]
    DuplicateProperty {
        /// The file.
        path: PathBuf,
        /// The element.
        element: String,
        /// The repeated property.
        property: String,
    },
    /// The file has no `vertex` element.
    #[error("{path}: no `vertex` element; a splat file stores one splat per vertex")]
    MissingVertexElement {
        /// The file.
        path: PathBuf,
    },
    /// A required property is missing.
    #[error("{path}: element `vertex` has no property `{property}`; {hint}")]
    MissingProperty {
        /// The file.
        path: PathBuf,
        /// The missing property.
        property: String,
        /// What the property is for.
        hint: &'static str,
    },
    /// The count of `f_rest_*` properties is not that of an SH degree 0–3.
    #[error(
        "{path}: {count} `f_rest_*` properties; 3DGS files have 0, 9, 24 or 45 \
         (SH degree 0, 1, 2, 3)"
    )]
    ShCount {
        /// The file.
        path: PathBuf,
        /// The count found.
        count: usize,
    },
    /// The `f_rest_*` indices are not `0..count`.
    #[error("{path}: `f_rest_*` properties must be numbered 0..{count} without gaps; `{missing}` is missing")]
    ShGap {
        /// The file.
        path: PathBuf,
        /// The count of `f_rest_*` properties.
        count: usize,
        /// The first missing name.
        missing: String,
    },
    /// The data section ends before all declared rows.
    #[error(
        "{path}: truncated: element `{element}` row {row} (of {count}) needs bytes up to \
         offset {needed} but the file ends at {file_len}"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The element being read.
        element: String,
        /// 0-based row index where the data ran out.
        row: usize,
        /// Declared row count.
        count: usize,
        /// Byte offset the row would need.
        needed: u64,
        /// File length in bytes.
        file_len: u64,
    },
    /// An ASCII value could not be parsed or does not fit its type.
    #[error(
        "{path}: line {line}: row {row}, property `{property}`: `{token}` is not a valid {type_name}"
    )]
    BadAsciiValue {
        /// The file.
        path: PathBuf,
        /// 1-based line number in the file.
        line: usize,
        /// 0-based row.
        row: usize,
        /// The property.
        property: String,
        /// The text found (`<end of file>` when missing).
        token: String,
        /// The PLY type expected.
        type_name: &'static str,
    },
    /// An extra property to append has the wrong length or a taken name.
    #[error("{path}: cannot append property `{name}`: {message}")]
    BadExtra {
        /// The file being written.
        path: PathBuf,
        /// The property name.
        name: String,
        /// What is wrong.
        message: String,
    },
}
