//! The levels of the discretisation check (src/fit/discretisation_grid.rs,
//! src/fit/discretisation_carry.rs; docs/design.md § Error bars, "From the
//! discretisation"): each level doubles the grid, at least doubles the
//! substeps (more when the finer grid's stability minimum asks for more),
//! rebuilds the drivers by the scene's `[drivers]` rule on the new grid,
//! and carries the parameters onto them (global and region values as they
//! are, a per-driver field by each new driver's nearest old driver).

use crate::common::scene_with;
use physfit::drive::DriverSet;
use physfit::fit::discretisation_carry::{carry_parameters, CarryError};
use physfit::fit::{level_resolution, level_scene, scene_resolution, Parameters};
use physfit::mpm_rules::voxel;
use physfit::scene::{Scene, AUTO_DRIVERS_PER_CELL, UNCOVERED_REGION};

/// A 50 × 50 plate of splats in a box four times its size: few occupied
/// cells, so the drivers per cell (not the 2500 splats) set the count up
/// to grid 64.
fn plate(extra: &str) -> (tempfile::TempDir, Scene) {
    plate_rows(50, extra)
}

/// The first `rows` rows of [`plate`]'s 50 (the same spacing and box).
fn plate_rows(rows: usize, extra: &str) -> (tempfile::TempDir, Scene) {
    let means: Vec<[f32; 3]> = (0..rows)
        .flat_map(|i| (0..50).map(move |j| [i as f32 / 49.0, j as f32 / 49.0, 0.53]))
        .collect();
    let (dir, scene) = scene_with(
        &means,
        &format!(
            "[simulation]\ngrid_res = 16\nbox = {{ min = [-1.5, -1.5, -1.5], max = [2.5, 2.5, 2.5] }}\n\
             {extra}"
        ),
    );
    (dir, scene.unwrap())
}

/// The simulated splats' occupied cells on a grid of `grid_res`.
fn occupied(scene: &Scene, grid_res: u32) -> usize {
    voxel::count_occupied(&scene.normalised_means(), grid_res)
}

/// The levels of doubled grid (the default keeps the grid).
const GRID: &str = "[fit]\ndiscretisation_refine = \"grid\"\n";

const FIELDS: &str = "[fit.velocity]\nfield = \"drivers\"\n\
    [fit.stiffness]\nfield = \"regions\"\npoisson = \"global\"\n\
    [fit.stiffness.regions]\nnear = [{ min = [-0.1, -0.1, 0.0], max = [0.5, 1.1, 1.0] }]\n\
    rest = [{ min = [-2.0, -2.0, -2.0], max = [3.0, 3.0, 3.0] }]\n";

/// Level by level: the grid doubles, the substeps at least double and
/// never fall under the grid's stability minimum, and `count = "auto"`
/// gives 8 drivers per occupied cell of the level's grid, capped by the
/// splats; the box stays the scene's. Level 0 is the scene itself.
#[test]
fn each_level_doubles_the_grid_and_the_substeps_and_rebuilds_auto_drivers() {
    let (_dir, scene) = plate(&format!("{GRID}{FIELDS}"));
    assert_eq!(level_resolution(&scene, 0), Ok(scene_resolution(&scene)));
    let mut previous = scene_resolution(&scene);
    assert_eq!(
        previous.drivers,
        AUTO_DRIVERS_PER_CELL * occupied(&scene, 16)
    );
    for level in 1..=2u32 {
        let refined = level_scene(&scene, level).unwrap();
        let at = scene_resolution(&refined);
        assert_eq!(at, level_resolution(&scene, level).unwrap());
        assert_eq!(at.grid_res, 16 << level);
        assert!(
            at.substeps >= 2 * previous.substeps,
            "{at} after {previous}"
        );
        assert!(at.substeps >= refined.stability().min_substeps, "{at}");
        let cells = occupied(&scene, at.grid_res);
        assert_eq!(refined.drivers.occupied_cells, cells);
        assert_eq!(
            at.drivers,
            (AUTO_DRIVERS_PER_CELL * cells).min(2500),
            "{at}"
        );
        assert!(at.drivers > previous.drivers, "{at} after {previous}");
        assert_eq!(refined.simulation.sim_box, scene.simulation.sim_box);
        assert_eq!(refined.drivers.seed, scene.drivers.seed);
        previous = at;
    }
}

/// `fit.discretisation_refine = "fixed_grid"`: every level keeps the
/// scene's grid and box, doubles the substeps and doubles the drivers (an
/// explicit count or `"auto"`'s, same seed), capped by the splats.
#[test]
fn a_fixed_grid_level_doubles_the_substeps_and_the_drivers_on_the_scenes_grid() {
    let refine = "[fit]\ndiscretisation_refine = \"fixed_grid\"\n";
    let (_dir, scene) = plate(&format!("{refine}{FIELDS}"));
    let own = scene_resolution(&scene);
    let mut previous = own;
    for level in 1..=2u32 {
        let refined = level_scene(&scene, level).unwrap();
        let at = scene_resolution(&refined);
        assert_eq!(at.grid_res, own.grid_res, "the grid stays: {at}");
        assert_eq!(at.substeps, 2 * previous.substeps, "{at} after {previous}");
        assert_eq!(at.drivers, (own.drivers << level).min(2500), "{at}");
        assert_eq!(refined.simulation.sim_box, scene.simulation.sim_box);
        assert_eq!(refined.drivers.seed, scene.drivers.seed);
        assert_eq!(
            DriverSet::from_scene(&refined).unwrap().len(),
            at.drivers,
            "K-Means makes that many"
        );
        previous = at;
    }
    let (_dir, many) = plate(&format!("{refine}{FIELDS}\n[drivers]\ncount = 2000\n"));
    assert_eq!(
        level_scene(&many, 1).unwrap().drivers.count,
        2500,
        "capped by the splats"
    );
    // `"grid"` refines the grid.
    let (_dir, grid) = plate(&format!("{GRID}{FIELDS}"));
    assert_eq!(level_resolution(&grid, 1).unwrap().grid_res, 32);
}

/// An unknown `fit.discretisation_refine` is refused, naming the field
/// and the words it takes.
#[test]
fn an_unknown_refinement_is_refused_naming_the_field() {
    let means: Vec<[f32; 3]> = (0..4).map(|i| [i as f32 / 3.0, 0.5, 0.5]).collect();
    let (_dir, scene) = scene_with(&means, "[fit]\ndiscretisation_refine = \"time\"\n");
    let Err(error) = scene else {
        panic!("an unknown refinement is refused")
    };
    let error = error.to_string();
    assert!(
        error.contains("discretisation_refine")
            && error.contains("grid")
            && error.contains("fixed_grid"),
        "{error}"
    );
}

/// An explicit `drivers.count` keeps the scene's drivers per occupied cell
/// on the level's grid (the count times the ratio of occupied cells),
/// capped by the splats.
#[test]
fn an_explicit_driver_count_keeps_its_drivers_per_occupied_cell() {
    let (_dir, scene) = plate(&format!("{GRID}{FIELDS}\n[drivers]\ncount = 60\n"));
    assert_eq!(scene.drivers.count, 60);
    let level = level_scene(&scene, 1).unwrap();
    let ratio = occupied(&scene, 32) as f64 / occupied(&scene, 16) as f64;
    assert_eq!(level.drivers.count, (60.0 * ratio).round() as usize);
    assert!(level.drivers.count > 60);
    let (_dir, many) = plate(&format!("{GRID}{FIELDS}\n[drivers]\ncount = 2000\n"));
    assert_eq!(many.drivers.count, 2000);
    let level = level_scene(&many, 1).unwrap();
    assert!(2000.0 * ratio > 2500.0);
    assert_eq!(level.drivers.count, 2500, "capped by the splats");
}

/// The first level's drivers are the scene's rule on its grid (as many as
/// the level's `drivers.count`, K-Means with the same seed), and the
/// parameters carry onto them: the region E and a global ν as they are,
/// the per-driver velocity of each new driver that of its nearest old
/// driver at rest.
#[test]
fn a_levels_drivers_are_rebuilt_and_a_per_driver_field_maps_to_the_nearest_old_driver() {
    let (_dir, scene) = plate(FIELDS);
    let coarse = DriverSet::from_scene(&scene).unwrap();
    let level = level_scene(&scene, 1).unwrap();
    let fine = DriverSet::from_scene(&level).unwrap();
    assert_eq!(fine.len(), level.drivers.count);
    assert!(fine.len() > coarse.len());
    let velocity: Vec<f64> = (0..coarse.len())
        .flat_map(|d| [d as f64, 0.5 - d as f64, 0.25 * d as f64])
        .collect();
    let params = Parameters {
        log10_youngs: vec![3.5, 4.25],
        velocity,
        poisson: vec![0.125],
    };
    let carried = carry_parameters(&scene, &coarse, &fine, &params).unwrap();
    assert_eq!(carried.log10_youngs, params.log10_youngs);
    assert_eq!(carried.poisson, params.poisson);
    assert_eq!(carried.velocity.len(), 3 * fine.len());
    let distance2 =
        |a: [f32; 3], b: [f32; 3]| -> f32 { (0..3).map(|i| (a[i] - b[i]).powi(2)).sum() };
    for (j, p) in fine.rest.iter().enumerate() {
        // The nearest coarse driver, found by brute force: its values.
        let nearest = (0..coarse.len())
            .min_by(|&a, &b| {
                distance2(coarse.rest[a], *p)
                    .total_cmp(&distance2(coarse.rest[b], *p))
                    .then(a.cmp(&b))
            })
            .unwrap();
        assert_eq!(
            &carried.velocity[3 * j..3 * j + 3],
            &params.velocity[3 * nearest..3 * nearest + 3],
            "fine driver {j}"
        );
    }
}

/// Drivers that add a region parameter cannot take the other drivers'
/// values: drivers outside every named region make "rest of the object" a
/// parameter of its own, so a carry from drivers that all lie in `near`
/// onto drivers that do not is refused naming both lists and the fix.
#[test]
fn a_carry_onto_drivers_with_other_region_parameters_is_refused() {
    let near_only = "[fit.stiffness]\nfield = \"regions\"\n\
        [fit.stiffness.regions]\nnear = [{ min = [-0.1, -0.1, 0.0], max = [0.5, 1.1, 1.0] }]\n";
    // Half the plate, all of it inside `near`.
    let (_d, half_scene) = plate_rows(25, near_only);
    let covered = DriverSet::from_scene(&half_scene).unwrap();
    let (_dir, scene) = plate(near_only);
    let whole = DriverSet::from_scene(&scene).unwrap();
    let params = Parameters {
        log10_youngs: vec![3.5],
        velocity: vec![0.0; 3],
        poisson: Vec::new(),
    };
    let refused = carry_parameters(&scene, &covered, &whole, &params).unwrap_err();
    assert_eq!(
        refused,
        CarryError::Regions {
            stage: "stiffness",
            from: vec!["near".to_string()],
            to: vec!["near".to_string(), UNCOVERED_REGION.to_string()],
        }
    );
    let m = refused.to_string();
    assert!(
        m.contains("fit.stiffness.regions") && m.contains("cover the whole simulated object"),
        "{m}"
    );
}
