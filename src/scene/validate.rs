//! Small helpers that build [`SceneError`]s naming the scene file, shared by
//! the parts of `Scene::load`.

use std::path::{Path, PathBuf};

use super::error::SceneError;

/// The largest magnitude any scene number may have. The GPU computes in
/// f32 (largest 3.4e38), and a value past 1e30 either overflows to
/// infinity there or does once multiplied by another scene value (a focal
/// length by a coordinate, E by the box side squared); no physical
/// setting comes near it.
pub const LARGEST: f64 = 1e30;

/// Finite and at most [`LARGEST`] in magnitude.
pub fn representable(v: f64) -> bool {
    v.is_finite() && v.abs() <= LARGEST
}

/// The scene file being validated and its directory (the base of relative
/// paths).
pub(crate) struct Validator<'a> {
    pub path: &'a Path,
    pub dir: &'a Path,
}

impl Validator<'_> {
    pub fn invalid(
        &self,
        field: &str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> SceneError {
        SceneError::Invalid {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    pub fn out_of_range(
        &self,
        field: &str,
        value: impl ToString,
        requirement: impl Into<String>,
    ) -> SceneError {
        SceneError::OutOfRange {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            value: value.to_string(),
            requirement: requirement.into(),
        }
    }

    /// Fails unless `value` is finite and `> 0`.
    pub fn positive(&self, field: &str, value: f64) -> Result<f64, SceneError> {
        if representable(value) && value > 0.0 {
            Ok(value)
        } else {
            Err(self.out_of_range(field, value, "must be a finite number > 0 and at most 1e30"))
        }
    }

    /// Fails unless `value` is finite and `≥ 0`.
    pub fn non_negative(&self, field: &str, value: f64) -> Result<f64, SceneError> {
        if representable(value) && value >= 0.0 {
            Ok(value)
        } else {
            Err(self.out_of_range(field, value, "must be a finite number ≥ 0 and at most 1e30"))
        }
    }

    /// Fails unless every component is finite.
    pub fn finite3(&self, field: &str, v: [f64; 3]) -> Result<[f64; 3], SceneError> {
        if v.iter().all(|&c| representable(c)) {
            Ok(v)
        } else {
            Err(self.out_of_range(
                field,
                format!("{v:?}"),
                "every component must be finite and at most 1e30 in magnitude",
            ))
        }
    }

    /// `rel` resolved against the scene directory.
    pub fn join(&self, rel: &Path) -> PathBuf {
        self.dir.join(rel)
    }

    /// `rel` resolved against the scene directory; it must exist.
    pub fn existing(&self, field: &str, rel: &Path) -> Result<PathBuf, SceneError> {
        let file = self.join(rel);
        if file.exists() {
            Ok(file)
        } else {
            Err(SceneError::MissingFile {
                path: self.path.to_path_buf(),
                field: field.to_string(),
                file,
            })
        }
    }

    /// A box `[min, max]` with finite corners and `min < max` on every axis.
    pub fn aabb(
        &self,
        field: &str,
        min: [f64; 3],
        max: [f64; 3],
    ) -> Result<([f64; 3], [f64; 3]), SceneError> {
        self.finite3(&format!("{field}.min"), min)?;
        self.finite3(&format!("{field}.max"), max)?;
        if (0..3).any(|a| min[a] >= max[a]) {
            return Err(SceneError::InvertedBox {
                path: self.path.to_path_buf(),
                field: field.to_string(),
                min,
                max,
            });
        }
        Ok((min, max))
    }
}
