//! From a PLY table to [`Gaussians`] (3DGS layout, module doc of
//! `scene::ply`), applying the odd-value policy, and back.

use std::fmt;
use std::path::Path;

use super::data::{PlyData, PlyElement};
use super::error::PlyError;
use super::header::{PlyFormat, PlyHeaderLine, PlyProperty, ScalarType};
use super::write::ExtraProperty;
use crate::scene::Gaussians;

/// Opacity logits of ±∞ are clamped to ±this (sigmoid(−20) ≈ 2e-9).
pub const OPACITY_LOGIT_LIMIT: f32 = 20.0;
/// Smallest log scale kept; zero-size splats (−∞) become this (scale ≈ 1e-13).
pub const LOG_SCALE_MIN: f32 = -30.0;

/// SH band-0 constant `1/(2√π)`, used to turn 8-bit colours into a DC term.
const SH_C0: f64 = 0.282_094_791_773_878_14;

/// How many splats each rule of the odd-value policy touched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SanitizeReport {
    /// Dropped: a non-finite position.
    pub dropped_nonfinite_position: usize,
    /// Dropped: a NaN opacity logit.
    pub dropped_nan_opacity: usize,
    /// Dropped: a NaN or +∞ log scale.
    pub dropped_bad_scale: usize,
    /// Clamped: ±∞ opacity logit → ±[`OPACITY_LOGIT_LIMIT`].
    pub clamped_infinite_opacity: usize,
    /// Clamped: zero-size (log scale −∞ or < [`LOG_SCALE_MIN`]) scale axes.
    pub clamped_zero_scale: usize,
    /// Reset to identity: quaternion with non-finite components or ~zero norm.
    pub reset_degenerate_rotation: usize,
    /// Normalised: quaternions whose norm differed from 1 by more than 1e-3
    /// (routine: 3DGS stores unnormalised quaternions).
    pub normalised_rotation: usize,
    /// Zeroed: non-finite SH coefficients (counted per splat).
    pub zeroed_nonfinite_sh: usize,
}

impl SanitizeReport {
    /// Splats dropped in total.
    pub fn dropped(&self) -> usize {
        self.dropped_nonfinite_position + self.dropped_nan_opacity + self.dropped_bad_scale
    }

    /// `(count, description)` of the kinds that are warnings.
    fn warnings(&self) -> [(usize, &'static str); 7] {
        [
            (
                self.dropped_nonfinite_position,
                "dropped: non-finite position",
            ),
            (self.dropped_nan_opacity, "dropped: NaN opacity logit"),
            (self.dropped_bad_scale, "dropped: NaN or infinite log scale"),
            (
                self.clamped_infinite_opacity,
                "infinite opacity logit clamped to ±20",
            ),
            (
                self.clamped_zero_scale,
                "zero-size scale clamped to log scale −30",
            ),
            (
                self.reset_degenerate_rotation,
                "non-finite or zero quaternion set to identity",
            ),
            (
                self.zeroed_nonfinite_sh,
                "non-finite SH coefficients set to 0",
            ),
        ]
    }

    /// True when no warning-kind rule fired.
    pub fn is_clean(&self) -> bool {
        self.warnings().iter().all(|(n, _)| *n == 0)
    }

    /// Logged at debug level only: `physfit check` shows the counts once
    /// ("odd values"), so that every other command loading the same file
    /// does not repeat them.
    fn log(&self, path: &Path) {
        for (n, what) in self.warnings() {
            if n > 0 {
                log::debug!("{}: {n} splats {what}", crate::io::shown::shown(path));
            }
        }
        if self.normalised_rotation > 0 {
            log::debug!(
                "{}: {} quaternions normalised",
                crate::io::shown::shown(path),
                self.normalised_rotation
            );
        }
    }
}

impl fmt::Display for SanitizeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .warnings()
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if parts.is_empty() {
            write!(f, "no odd values")
        } else {
            write!(f, "{}", parts.join("; "))
        }
    }
}

/// Splats loaded from a `.ply`, with the file kept for lossless write-back.
#[derive(Clone, Debug)]
pub struct LoadedSplats {
    /// The usable splats (sanitised).
    pub gaussians: Gaussians,
    /// The file as read.
    pub ply: PlyData,
    /// `ply_rows[i]` is the `vertex` row of splat `i` (rows of dropped splats
    /// are absent).
    pub ply_rows: Vec<usize>,
    /// What the odd-value policy did.
    pub report: SanitizeReport,
}

impl LoadedSplats {
    /// Spreads one value per splat onto the file's rows; rows of dropped
    /// splats get `fill`. Panics if `per_splat.len()` is not the splat count
    /// (a programming error, not user input).
    pub fn per_row(&self, per_splat: &[f32], fill: f32) -> Vec<f32> {
        assert_eq!(per_splat.len(), self.ply_rows.len(), "one value per splat");
        let rows = self.ply.vertex().map(|v| v.count).unwrap_or(0);
        let mut out = vec![fill; rows];
        for (value, &row) in per_splat.iter().zip(&self.ply_rows) {
            out[row] = *value;
        }
        out
    }

    /// Writes the source file back to `path` (atomically) with one `float`
    /// property per `(name, per-splat values)` appended; rows of dropped
    /// splats get `fill`.
    pub fn write_with_extras(
        &self,
        path: &Path,
        extras: &[(&str, &[f32])],
        fill: f32,
    ) -> Result<(), PlyError> {
        let extras: Vec<ExtraProperty> = extras
            .iter()
            .map(|(name, values)| {
                if values.len() != self.ply_rows.len() {
                    return Err(PlyError::BadExtra {
                        path: path.to_path_buf(),
                        name: name.to_string(),
                        message: format!(
                            "{} values given for {} splats",
                            values.len(),
                            self.ply_rows.len()
                        ),
                    });
                }
                Ok(ExtraProperty {
                    name: name.to_string(),
                    values: self.per_row(values, fill),
                })
            })
            .collect::<Result<_, _>>()?;
        self.ply.write(path, &extras)
    }
}

fn require(
    vertex: &PlyElement,
    path: &Path,
    name: &str,
    hint: &'static str,
) -> Result<Vec<f32>, PlyError> {
    vertex
        .column_f32(name)
        .ok_or_else(|| PlyError::MissingProperty {
            path: path.to_path_buf(),
            property: name.to_string(),
            hint,
        })
}

fn scalar_vertex(ply: &PlyData) -> Result<&PlyElement, PlyError> {
    let vertex = ply.vertex()?;
    // List properties physfit does not read (e.g. a per-vertex index list)
    // are tolerated and kept for write-back; a 3DGS property stored as a list
    // is an error.
    let is_splat_property = |name: &str| {
        matches!(
            name,
            "x" | "y" | "z" | "nx" | "ny" | "nz" | "opacity" | "red" | "green" | "blue"
        ) || ["f_dc_", "f_rest_", "scale_", "rot_"]
            .iter()
            .any(|p| name.starts_with(p))
    };
    if let Some(list) = vertex
        .properties
        .iter()
        .find(|p| p.list_count.is_some() && is_splat_property(&p.name))
    {
        return Err(PlyError::ListProperty {
            path: ply.path.clone(),
            property: list.name.clone(),
        });
    }
    Ok(vertex)
}

/// The DC colour term: `f_dc_*`, else 8/16-bit or float `red green blue`.
fn dc_columns(vertex: &PlyElement, path: &Path) -> Result<[Vec<f32>; 3], PlyError> {
    const HINT: &str = "3DGS files store the DC colour as f_dc_0..2 (or red/green/blue)";
    if vertex.property_index("f_dc_0").is_some() || vertex.property_index("red").is_none() {
        return Ok([
            require(vertex, path, "f_dc_0", HINT)?,
            require(vertex, path, "f_dc_1", HINT)?,
            require(vertex, path, "f_dc_2", HINT)?,
        ]);
    }
    let colour = |name: &str| -> Result<Vec<f32>, PlyError> {
        let index = vertex
            .property_index(name)
            .ok_or_else(|| PlyError::MissingProperty {
                path: path.to_path_buf(),
                property: name.to_string(),
                hint: HINT,
            })?;
        let full = match vertex.properties[index].ty {
            ScalarType::U8 => 255.0,
            ScalarType::U16 => 65535.0,
            _ => 1.0,
        };
        Ok(vertex
            .column(name)
            .unwrap_or_default()
            .iter()
            .map(|c| ((c / full - 0.5) / SH_C0) as f32)
            .collect())
    };
    Ok([colour("red")?, colour("green")?, colour("blue")?])
}

/// SH degree from the `f_rest_*` properties, checking they are `0..n`.
fn sh_degree(vertex: &PlyElement, path: &Path) -> Result<u32, PlyError> {
    let count = vertex
        .properties
        .iter()
        .filter(|p| p.name.starts_with("f_rest_"))
        .count();
    let degree = match count {
        0 => 0,
        9 => 1,
        24 => 2,
        45 => 3,
        _ => {
            return Err(PlyError::ShCount {
                path: path.to_path_buf(),
                count,
            })
        }
    };
    if let Some(missing) = (0..count)
        .map(|i| format!("f_rest_{i}"))
        .find(|n| vertex.property_index(n).is_none())
    {
        return Err(PlyError::ShGap {
            path: path.to_path_buf(),
            count,
            missing,
        });
    }
    Ok(degree)
}

/// Reads a 3DGS `.ply` into [`Gaussians`], applying the odd-value policy
/// (module doc) and logging what it changed.
pub fn load_gaussians(path: &Path) -> Result<LoadedSplats, PlyError> {
    let ply = PlyData::read(path)?;
    let splats = gaussians_from_ply(ply)?;
    splats.report.log(path);
    Ok(splats)
}

/// [`load_gaussians`] on an already parsed file (no logging).
pub fn gaussians_from_ply(ply: PlyData) -> Result<LoadedSplats, PlyError> {
    let path = ply.path.clone();
    let path = path.as_path();
    let vertex = scalar_vertex(&ply)?;
    const POS: &str = "splat centres are x, y, z";
    let [x, y, z] = [
        require(vertex, path, "x", POS)?,
        require(vertex, path, "y", POS)?,
        require(vertex, path, "z", POS)?,
    ];
    const OPA: &str = "3DGS files store the opacity logit as `opacity`";
    let opacity = require(vertex, path, "opacity", OPA)?;
    const SCALE: &str = "3DGS files store log scales as scale_0..2";
    let scales = [
        require(vertex, path, "scale_0", SCALE)?,
        require(vertex, path, "scale_1", SCALE)?,
        require(vertex, path, "scale_2", SCALE)?,
    ];
    const ROT: &str = "3DGS files store the rotation quaternion (w, x, y, z) as rot_0..3";
    let rots = [
        require(vertex, path, "rot_0", ROT)?,
        require(vertex, path, "rot_1", ROT)?,
        require(vertex, path, "rot_2", ROT)?,
        require(vertex, path, "rot_3", ROT)?,
    ];
    let dc = dc_columns(vertex, path)?;
    let sh_degree = sh_degree(vertex, path)?;
    let k = ((sh_degree + 1) * (sh_degree + 1)) as usize;
    let rest: Vec<Vec<f32>> = (0..3 * (k - 1))
        .map(|i| {
            vertex
                .column_f32(&format!("f_rest_{i}"))
                .unwrap_or_default()
        })
        .collect();

    let n = vertex.count;
    let mut report = SanitizeReport::default();
    let mut g = Gaussians {
        sh_degree,
        ..Default::default()
    };
    let mut ply_rows = Vec::with_capacity(n);
    for row in 0..n {
        let mean = [x[row], y[row], z[row]];
        if !mean.iter().all(|v| v.is_finite()) {
            report.dropped_nonfinite_position += 1;
            continue;
        }
        let mut logit = opacity[row];
        if logit.is_nan() {
            report.dropped_nan_opacity += 1;
            continue;
        }
        if logit.is_infinite() {
            report.clamped_infinite_opacity += 1;
            logit = logit.clamp(-OPACITY_LOGIT_LIMIT, OPACITY_LOGIT_LIMIT);
        }
        let mut log_scale = [scales[0][row], scales[1][row], scales[2][row]];
        if log_scale.iter().any(|s| s.is_nan() || *s == f32::INFINITY) {
            report.dropped_bad_scale += 1;
            continue;
        }
        if log_scale.iter().any(|s| *s < LOG_SCALE_MIN) {
            report.clamped_zero_scale += 1;
            for s in &mut log_scale {
                *s = s.max(LOG_SCALE_MIN);
            }
        }
        let q = [rots[0][row], rots[1][row], rots[2][row], rots[3][row]];
        let norm = q.iter().map(|c| (*c as f64).powi(2)).sum::<f64>().sqrt();
        let rotation = if !norm.is_finite() || norm < 1e-12 {
            report.reset_degenerate_rotation += 1;
            [1.0, 0.0, 0.0, 0.0]
        } else {
            if (norm - 1.0).abs() > 1e-3 {
                report.normalised_rotation += 1;
            }
            q.map(|c| (c as f64 / norm) as f32)
        };
        let start = g.sh.len();
        g.sh.push([dc[0][row], dc[1][row], dc[2][row]]);
        for j in 0..k - 1 {
            g.sh.push([
                rest[j][row],
                rest[(k - 1) + j][row],
                rest[2 * (k - 1) + j][row],
            ]);
        }
        let mut zeroed = false;
        for c in g.sh[start..].iter_mut().flatten() {
            if !c.is_finite() {
                *c = 0.0;
                zeroed = true;
            }
        }
        report.zeroed_nonfinite_sh += zeroed as usize;
        g.means.push(mean);
        g.rotations.push(rotation);
        g.log_scales.push(log_scale);
        g.opacity_logits.push(logit);
        ply_rows.push(row);
    }
    Ok(LoadedSplats {
        gaussians: g,
        ply,
        ply_rows,
        report,
    })
}

/// Reads the `x y z` of every vertex of a `.ply` (e.g. a point set marking a
/// region); non-finite points are skipped with a warning.
pub fn read_points(path: &Path) -> Result<Vec<[f32; 3]>, PlyError> {
    let ply = PlyData::read(path)?;
    let vertex = scalar_vertex(&ply)?;
    const POS: &str = "points are x, y, z";
    let x = require(vertex, path, "x", POS)?;
    let y = require(vertex, path, "y", POS)?;
    let z = require(vertex, path, "z", POS)?;
    let points: Vec<[f32; 3]> = (0..vertex.count)
        .map(|i| [x[i], y[i], z[i]])
        .filter(|p| p.iter().all(|c| c.is_finite()))
        .collect();
    if points.len() < vertex.count {
        log::warn!(
            "{}: {} points with non-finite coordinates skipped",
            crate::io::shown::shown(path),
            vertex.count - points.len()
        );
    }
    Ok(points)
}

impl PlyData {
    /// A standard 3DGS file (`x y z f_dc_0..2 f_rest_* opacity scale_0..2
    /// rot_0..3`, all `float`) holding `g`; `path` is recorded for errors.
    pub fn from_gaussians(g: &Gaussians, path: &Path) -> PlyData {
        let k = g.coeffs_per_splat();
        let mut names: Vec<String> = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        names.extend((0..3 * (k - 1)).map(|i| format!("f_rest_{i}")));
        names.extend(
            [
                "opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        let properties = names
            .into_iter()
            .map(|name| PlyProperty {
                name,
                ty: ScalarType::F32,
                list_count: None,
                type_text: "float".into(),
            })
            .collect::<Vec<_>>();
        let mut data = Vec::with_capacity(g.len() * properties.len() * 4);
        for i in 0..g.len() {
            let sh = g.sh_of(i);
            let mut row: Vec<f32> = Vec::with_capacity(properties.len());
            row.extend_from_slice(&g.means[i]);
            row.extend_from_slice(&sh[0]);
            for c in 0..3 {
                row.extend(sh[1..].iter().map(|coeff| coeff[c]));
            }
            row.push(g.opacity_logits[i]);
            row.extend_from_slice(&g.log_scales[i]);
            row.extend_from_slice(&g.rotations[i]);
            for v in row {
                data.extend_from_slice(&v.to_le_bytes());
            }
        }
        PlyData {
            path: path.to_path_buf(),
            source_format: PlyFormat::BinaryLittleEndian,
            header_lines: vec![
                PlyHeaderLine::Text("comment Written by physfit".into()),
                PlyHeaderLine::Element(0),
            ],
            elements: vec![PlyElement {
                name: "vertex".into(),
                count: g.len(),
                properties,
                data,
            }],
        }
    }
}
