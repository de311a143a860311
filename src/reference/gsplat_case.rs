//! The gsplat reference renders in `tests/fixtures/gsplat_reference/` (see its
//! README): splats, the camera they were rendered with, and gsplat's image,
//! so CPU and GPU rasterizer tests can compare against an independent
//! implementation.

use std::path::Path;

use glam::{Mat3, Vec3};

use super::safetensors::{read_f32_tensors, SafetensorsError};
use crate::scene::{Camera, Gaussians};

/// Image width of every reference case.
pub const WIDTH: u32 = 123;
/// Image height of every reference case.
pub const HEIGHT: u32 = 82;

/// One gsplat reference case.
#[derive(Clone, Debug)]
pub struct GsplatCase {
    /// The splats (quaternions as stored: unnormalised, w first).
    pub gaussians: Gaussians,
    /// The camera of the README: centre (0.123, 0.456, −8), identity
    /// rotation, fx = fy = W/2, principal point (W/2, H/2), near 0.01.
    pub camera: Camera,
    /// Background colour (black).
    pub background: [f32; 3],
    /// gsplat's render, RGBA per pixel, row-major (`y * WIDTH + x`).
    pub image: Vec<[f32; 4]>,
}

/// Why a reference case could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum GsplatCaseError {
    /// The archive could not be read.
    #[error(transparent)]
    Safetensors(#[from] SafetensorsError),
    /// A tensor is missing or has the wrong shape.
    #[error("{path}: tensor '{name}' {problem}")]
    Tensor {
        /// The file.
        path: String,
        /// Tensor name.
        name: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// The camera every reference case was rendered with (README).
pub fn reference_camera() -> Camera {
    let position = Vec3::new(0.123, 0.456, -8.0);
    Camera {
        width: WIDTH,
        height: HEIGHT,
        fx: WIDTH as f32 / 2.0,
        fy: WIDTH as f32 / 2.0,
        cx: WIDTH as f32 / 2.0,
        cy: HEIGHT as f32 / 2.0,
        rotation: Mat3::IDENTITY,
        translation: -position,
        near: 0.01,
    }
}

/// Load a case, e.g. `tests/fixtures/gsplat_reference/tiny_case.safetensors`.
pub fn load_gsplat_case(path: impl AsRef<Path>) -> Result<GsplatCase, GsplatCaseError> {
    let path = path.as_ref();
    let mut tensors = read_f32_tensors(path)?;
    let shown = crate::io::shown::shown(path).to_string();
    let mut take =
        |name: &'static str, tail: &[usize]| -> Result<(usize, Vec<f32>), GsplatCaseError> {
            let (shape, data) = tensors
                .remove(name)
                .ok_or_else(|| GsplatCaseError::Tensor {
                    path: shown.clone(),
                    name,
                    problem: "is missing".into(),
                })?;
            if shape.len() != tail.len() + 1 || shape[1..] != *tail {
                return Err(GsplatCaseError::Tensor {
                    path: shown.clone(),
                    name,
                    problem: format!("has shape {shape:?}, expected [N, {tail:?}]"),
                });
            }
            Ok((shape[0], data))
        };
    let (n, means) = take("means", &[3])?;
    let (n_scales, scales) = take("scales", &[3])?;
    let (n_quats, quats) = take("quats", &[4])?;
    let (n_opac, opacities) = take("opacities", &[])?;
    let (n_coeffs, coeffs) = take("coeffs", &[16, 3])?;
    let (rows, img) = take("out_img", &[WIDTH as usize, 4])?;
    for (name, m) in [
        ("scales", n_scales),
        ("quats", n_quats),
        ("opacities", n_opac),
        ("coeffs", n_coeffs),
    ] {
        if m != n {
            return Err(GsplatCaseError::Tensor {
                path: shown.clone(),
                name: "means",
                problem: format!("has {n} rows but '{name}' has {m}"),
            });
        }
    }
    if rows != HEIGHT as usize {
        return Err(GsplatCaseError::Tensor {
            path: shown,
            name: "out_img",
            problem: format!("has {rows} rows, expected {HEIGHT}"),
        });
    }
    let gaussians = Gaussians {
        means: means.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        rotations: quats
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect(),
        log_scales: scales.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        opacity_logits: opacities,
        sh_degree: 3,
        sh: coeffs.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
    };
    Ok(GsplatCase {
        gaussians,
        camera: reference_camera(),
        background: [0.0; 3],
        image: img
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect(),
    })
}
