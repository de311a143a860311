//! CPU twins in f64 of each GPU stage (docs/design.md § Verification 1): simple,
//! obviously right, used only as test oracles.

pub mod chain;
pub mod deform;
pub mod gsplat_case;
pub mod loss;
pub mod mpm;
pub mod safetensors;
pub mod splat;
