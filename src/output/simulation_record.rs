//! The settings a re-simulation of fitted drivers depends on, as
//! `drivers.safetensors` records them: the box, the
//! grid, the time step, the material constants, the walls and forces, and
//! the `[drivers]` settings that made the drivers. Each is named by its
//! scene.toml field, so that a difference from a scene names what to fix.

use crate::mpm_rules::config::Transfer;
use crate::mpm_rules::{AnchorRule, MpmConfig, WallMode};
use crate::scene::{Scene, SimBox};

use super::metadata_fields::{MetadataError, MetadataReader, MetadataWriter};

/// What [`crate::output::FittedDrivers`] records of its scene's settings.
/// Lengths, the box and gravity in world units; material values in the
/// simulator's normalised units (docs/design.md § Units and frames).
#[derive(Clone, Debug, PartialEq)]
pub struct SimulationRecord {
    /// The simulation cube (world units).
    pub sim_box: SimBox,
    /// Grid nodes per box side.
    pub grid_res: u32,
    /// Substeps per frame.
    pub substeps: u32,
    /// Frames per second.
    pub fps: f64,
    /// Density ρ (normalised units).
    pub density: f64,
    /// Poisson's ratio.
    pub poisson_ratio: f64,
    /// Wall condition.
    pub walls: WallMode,
    /// Which nodes an anchored particle holds (files written before the
    /// setting existed read as [`AnchorRule::Stencil`], the only rule then).
    pub anchoring: AnchorRule,
    /// How G2P sets the particle velocity (files written before the
    /// setting existed read as [`Transfer::Apic`], the only one then).
    pub transfer: Transfer,
    /// Gravity, world units / s².
    pub gravity_world: [f64; 3],
    /// Grid-velocity damping rate, 1/s.
    pub damping: f64,
    /// The fit's clamp of log10 E (normalised units); its top set the
    /// stability bound the substeps were chosen for.
    pub log10_youngs_range: [f64; 2],
    /// Drivers (`drivers.count`, resolved).
    pub driver_count: usize,
    /// Nearest drivers per Gaussian (`drivers.k`).
    pub k: usize,
    /// K-Means seed (`drivers.seed`).
    pub seed: u64,
    /// Interior filling (`drivers.fill`).
    pub fill: bool,
}

/// Fields that do not change a re-simulation and are not compared: the
/// range only clamps a fit (the substeps it implies are compared).
const NOT_COMPARED: [&str; 1] = ["material.log10_youngs_range"];

/// `simulation.pic_time` as recorded: τ under FLIP, `none` under APIC.
fn pic_time_text(transfer: Transfer) -> String {
    transfer
        .pic_time()
        .map_or_else(|| "none".to_string(), |tau| tau.to_string())
}

fn walls_text(walls: WallMode) -> &'static str {
    match walls {
        WallMode::Sticky => "sticky",
        WallMode::Slip => "slip",
    }
}

impl SimulationRecord {
    /// The settings of `scene`.
    pub fn from_scene(scene: &Scene) -> Self {
        let s = &scene.simulation;
        let m = &scene.material;
        Self {
            sim_box: s.sim_box,
            grid_res: s.grid_res,
            substeps: s.substeps,
            fps: scene.fps,
            density: m.density,
            poisson_ratio: m.poisson_ratio,
            walls: s.walls,
            anchoring: s.anchoring,
            transfer: s.transfer,
            gravity_world: s.gravity_world,
            damping: s.damping,
            log10_youngs_range: m.log10_youngs_range,
            driver_count: scene.drivers.count,
            k: scene.drivers.k,
            seed: scene.drivers.seed,
            fill: scene.drivers.fill,
        }
    }

    /// Every field as `(scene.toml name, metadata text)`; the text reads
    /// back bit for bit ([`super::metadata_fields`]), so equal texts are
    /// equal values.
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut w = MetadataWriter::default();
        w.list("simulation.box.min", &self.sim_box.min)
            .value("simulation.box.side", self.sim_box.side)
            .value("simulation.grid_res", self.grid_res)
            .value("simulation.substeps", self.substeps)
            .list("simulation.gravity", &self.gravity_world)
            .value("simulation.damping", self.damping)
            .value("simulation.walls", walls_text(self.walls))
            .value("simulation.anchoring", self.anchoring.word())
            .value("simulation.transfer", self.transfer.word())
            .value("simulation.pic_time", pic_time_text(self.transfer))
            .value("reference.fps", self.fps)
            .value("material.density", self.density)
            .value("material.poisson_ratio", self.poisson_ratio)
            .list("material.log10_youngs_range", &self.log10_youngs_range)
            .value("drivers.count", self.driver_count)
            .value("drivers.k", self.k)
            .value("drivers.seed", self.seed)
            .value("drivers.fill", self.fill);
        w.into_entries()
    }

    /// Adds every field to `w`.
    pub fn write(&self, w: &mut MetadataWriter) {
        for (field, text) in self.fields() {
            w.value(&field, text);
        }
    }

    /// Reads every field back.
    pub fn read(r: &MetadataReader) -> Result<Self, MetadataError> {
        let walls = match r.text("simulation.walls")? {
            "sticky" => WallMode::Sticky,
            "slip" => WallMode::Slip,
            other => {
                return Err(r.invalid(
                    "simulation.walls",
                    format!("is \"{other}\", expected \"sticky\" or \"slip\""),
                ))
            }
        };
        let anchoring = match r.text("simulation.anchoring") {
            // Written before the setting existed: the one rule there was.
            Err(_) => AnchorRule::Stencil,
            Ok(word) => match AnchorRule::from_word(word) {
                Some(rule) => rule,
                None => {
                    return Err(r.invalid(
                        "simulation.anchoring",
                        format!("is \"{word}\", expected \"stencil\", \"nearest\" or \"splats\""),
                    ))
                }
            },
        };
        let transfer = match r.text("simulation.transfer") {
            // Written before the setting existed: the one transfer there was.
            Err(_) => Transfer::Apic,
            Ok("apic") => Transfer::Apic,
            Ok("flip") => Transfer::Flip {
                pic_time: r.parsed("simulation.pic_time")?,
            },
            Ok(other) => {
                return Err(r.invalid(
                    "simulation.transfer",
                    format!("is \"{other}\", expected \"apic\" or \"flip\""),
                ))
            }
        };
        Ok(Self {
            sim_box: SimBox {
                min: r.list("simulation.box.min")?,
                side: r.parsed("simulation.box.side")?,
            },
            grid_res: r.parsed("simulation.grid_res")?,
            substeps: r.parsed("simulation.substeps")?,
            fps: r.parsed("reference.fps")?,
            density: r.parsed("material.density")?,
            poisson_ratio: r.parsed("material.poisson_ratio")?,
            walls,
            anchoring,
            transfer,
            gravity_world: r.list("simulation.gravity")?,
            damping: r.parsed("simulation.damping")?,
            log10_youngs_range: r.list("material.log10_youngs_range")?,
            driver_count: r.parsed("drivers.count")?,
            k: r.parsed("drivers.k")?,
            seed: r.parsed("drivers.seed")?,
            fill: r.parsed("drivers.fill")?,
        })
    }

    /// The fields a re-simulation depends on that differ between `self`
    /// (the fit) and `now` (a scene): `field: fitted → now` per line.
    pub fn differences(&self, now: &Self) -> Vec<String> {
        self.fields()
            .into_iter()
            .zip(now.fields())
            .filter(|((field, a), (_, b))| a != b && !NOT_COMPARED.contains(&field.as_str()))
            .map(|((field, a), (_, b))| format!("`{field}`: {a} in the fit, {b} now"))
            .collect()
    }

    /// The simulator's settings (normalised units: gravity over the side).
    pub fn mpm_config(&self) -> MpmConfig {
        MpmConfig {
            grid_res: self.grid_res,
            fps: self.fps,
            substeps_per_frame: self.substeps,
            gravity: self.sim_box.vector_to_normalised(self.gravity_world),
            damping: self.damping,
            density: self.density,
            poisson: self.poisson_ratio,
            walls: self.walls,
            colliders: Vec::new(),
            anchoring: self.anchoring,
            transfer: self.transfer,
        }
    }
}
