//! A loaded, validated scene: the [`Scene`] type and its accessors.
//! [`Scene::load`] (in `load`) builds it; the settings the simulator
//! derives from it are in `derived_settings`.

use std::path::PathBuf;

use super::config::SceneConfig;
use super::drivers::Drivers;
use super::fit_settings::FitSettings;
use super::material::Material;
use super::ply::LoadedSplats;
use super::region::Region;
use super::simulation::Simulation;
use super::view::View;
use super::Gaussians;

/// A loaded, validated scene.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The scene file.
    pub path: PathBuf,
    /// The file as parsed (paths as written).
    pub config: SceneConfig,
    /// The splats and their source `.ply` (for write-back).
    pub splats: LoadedSplats,
    /// Path of the `.ply`.
    pub gaussians_path: PathBuf,
    /// Cameras and reference frames.
    pub views: Vec<View>,
    /// Reference frames per second.
    pub fps: f64,
    /// Background colour, linear RGB.
    pub background: [f32; 3],
    /// Simulation settings.
    pub simulation: Simulation,
    /// Material settings.
    pub material: Material,
    /// Per splat: simulated.
    pub simulated: Vec<bool>,
    /// Per splat: anchored (always a subset of `simulated`).
    pub anchored: Vec<bool>,
    /// The anchored region (world units), for points that are not splats
    /// (the fill points of `drivers.fill`).
    pub anchored_region: Region,
    /// Driving particles.
    pub drivers: Drivers,
    /// Optimiser settings.
    pub fit: FitSettings,
    /// Output directory (resolved; may not exist yet).
    pub output_dir: PathBuf,
}

impl Scene {
    /// The splats.
    pub fn gaussians(&self) -> &Gaussians {
        &self.splats.gaussians
    }

    /// Reference frames per view (`None` when no view has frames; the counts
    /// agree across views with frames).
    pub fn frame_count(&self) -> Option<usize> {
        frame_count(&self.views)
    }
    /// Every splat centre in normalised box coordinates.
    pub fn normalised_means(&self) -> Vec<[f32; 3]> {
        self.gaussians()
            .means
            .iter()
            .map(|p| self.simulation.sim_box.to_normalised(*p))
            .collect()
    }

    /// Indices of the simulated splats, ascending.
    pub fn simulated_indices(&self) -> Vec<u32> {
        (0..self.simulated.len() as u32)
            .filter(|&i| self.simulated[i as usize])
            .collect()
    }

    /// Indices of the anchored splats, ascending.
    pub fn anchored_indices(&self) -> Vec<u32> {
        (0..self.anchored.len() as u32)
            .filter(|&i| self.anchored[i as usize])
            .collect()
    }
}

/// Reference frames per view: those of the first view with frames (`None`
/// when no view has any); `resolve_views` (in `load`) makes the counts agree.
pub(crate) fn frame_count(views: &[View]) -> Option<usize> {
    views
        .iter()
        .find_map(|v| v.frames.as_ref().map(|f| f.len()))
}
