//! CPU twins in f64 of each GPU stage (DESIGN.md § Verification 1): simple,
//! obviously right, used only as test oracles.
pub mod mpm;
