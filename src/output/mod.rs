//! The files a fit writes: `drivers.safetensors`
//! ([`FittedDrivers`]: everything a re-simulation needs, refused with
//! another `.ply` or other settings), `fitted.ply` ([`fitted_ply`]: every
//! splat with its fitted material as extra properties), the `.ply`'s
//! SHA-256 ([`ply_sha256`]), E in world units ([`youngs_world`]) and the
//! one stiffness colouring of splats ([`stiffness`]), with the colouring
//! of their error bars beside it in `stiffness.png`
//! ([`error_bar_colouring`]).
//! Safetensors archives are read with the crate through [`tensor_archive`].

pub mod drivers_file;
pub mod drivers_file_error;
pub mod error_bar_colouring;
pub mod fitted_ply;
pub mod metadata_fields;
pub mod ply_hash;
pub mod simulation_record;
pub mod stiffness;
pub mod tensor_archive;
pub mod units;

pub use drivers_file::FittedDrivers;
#[cfg(feature = "reference")]
pub use drivers_file_error::DriversFileError;
pub use ply_hash::{ply_sha256, PlyHashError};
pub use simulation_record::SimulationRecord;
pub use units::youngs_world;
