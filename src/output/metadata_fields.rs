//! Numbers and lists as safetensors metadata text (the format's
//! `__metadata__` is a string → string map): written so that every value
//! reads back bit for bit, and read back with typed errors naming the file
//! and the field.
//!
//! A number is Rust's shortest round-trip decimal (`{}` of `f64`, which
//! `str::parse` reads back exactly; JSON parsers do not all promise that);
//! a list is `[a, b, c]` of such numbers.

use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A metadata field that is missing or does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{path}: metadata field `{field}` {problem}; the file was written by another program or altered: write it again with `physfit fit`")]
pub struct MetadataError {
    /// The file.
    pub path: PathBuf,
    /// The field.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// Builds a metadata map, keeping the order fields were written in.
#[derive(Clone, Debug, Default)]
pub struct MetadataWriter {
    entries: Vec<(String, String)>,
}

impl MetadataWriter {
    /// A value written with its `Display` (numbers: shortest round-trip).
    pub fn value(&mut self, field: &str, value: impl Display) -> &mut Self {
        self.entries.retain(|(f, _)| f != field);
        self.entries.push((field.to_string(), value.to_string()));
        self
    }

    /// A list of numbers, `[a, b, c]`.
    pub fn list(&mut self, field: &str, values: &[f64]) -> &mut Self {
        let items: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        self.value(field, format!("[{}]", items.join(", ")))
    }

    /// The fields in the order written.
    pub fn into_entries(self) -> Vec<(String, String)> {
        self.entries
    }

    /// The map.
    pub fn finish(self) -> HashMap<String, String> {
        self.entries.into_iter().collect()
    }
}

/// Reads fields of a metadata map, naming `path` in errors.
pub struct MetadataReader<'a> {
    path: &'a Path,
    map: &'a HashMap<String, String>,
}

impl<'a> MetadataReader<'a> {
    /// A reader of `map`, the metadata of `path`.
    pub fn new(path: &'a Path, map: &'a HashMap<String, String>) -> Self {
        Self { path, map }
    }

    /// The file the map came from.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// An error about `field` of this file.
    pub fn invalid(&self, field: &str, problem: String) -> MetadataError {
        MetadataError {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            problem,
        }
    }

    /// The text of `field`.
    pub fn text(&self, field: &str) -> Result<&'a str, MetadataError> {
        self.map
            .get(field)
            .map(String::as_str)
            .ok_or_else(|| self.invalid(field, "is missing".into()))
    }

    /// `field` parsed as a `T` (a number, a bool).
    pub fn parsed<T: FromStr>(&self, field: &str) -> Result<T, MetadataError>
    where
        T::Err: Display,
    {
        let text = self.text(field)?;
        text.parse()
            .map_err(|e| self.invalid(field, format!("is \"{text}\", which does not parse: {e}")))
    }

    /// `field` as a list of exactly `N` numbers.
    pub fn list<const N: usize>(&self, field: &str) -> Result<[f64; N], MetadataError> {
        let text = self.text(field)?;
        let bad = |why: String| self.invalid(field, format!("is \"{text}\": {why}"));
        let inner = text
            .trim()
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .ok_or_else(|| bad("expected a list `[a, b, ...]`".into()))?;
        let values = inner
            .split(',')
            .map(|item| item.trim().parse::<f64>())
            .collect::<Result<Vec<f64>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        values
            .try_into()
            .map_err(|v: Vec<f64>| bad(format!("{} numbers, expected {N}", v.len())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_lists_round_trip_bit_for_bit() {
        let hard = [0.1 + 0.2, 1e-300, -2.5e17, f64::MIN_POSITIVE, 1.0 / 3.0];
        let mut w = MetadataWriter::default();
        w.list("l", &hard).value("x", hard[0]).value("n", 42u32);
        let map = w.finish();
        let r = MetadataReader::new(Path::new("f.safetensors"), &map);
        let back: [f64; 5] = r.list("l").unwrap();
        assert!(back
            .iter()
            .zip(&hard)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(r.parsed::<f64>("x").unwrap().to_bits(), hard[0].to_bits());
        assert_eq!(r.parsed::<u32>("n").unwrap(), 42);
        let e = r.list::<3>("l").unwrap_err().to_string();
        assert!(e.contains("`l`") && e.contains("f.safetensors"), "{e}");
        let e = r.parsed::<u32>("missing").unwrap_err().to_string();
        assert!(e.contains("`missing` is missing"), "{e}");
    }
}
