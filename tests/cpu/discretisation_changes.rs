//! The changes and the optimum of `physfit bench discretisation`
//! (src/bench/discretisation.rs): names read back to the same change, a
//! change reaches the scene as its file would give it, and the parabola
//! finds the vertex of a quadratic scan.

use physfit::bench::discretisation::{parabola_optimum, Change};
use physfit::mpm_rules::AnchorRule;
use physfit::scene::Scene;

#[test]
fn change_names_read_back() {
    for change in Change::table() {
        assert_eq!(Change::parse(&change.name()), Some(change), "{change:?}");
    }
    assert_eq!(Change::parse("substeps=2"), Some(Change::Substeps(2)));
    assert_eq!(Change::parse("grid=x1.5"), Some(Change::Grid(1.5)));
    assert_eq!(
        Change::parse("anchoring=nearest"),
        Some(Change::Anchoring(AnchorRule::Nearest))
    );
    for bad in [
        "",
        "grid",
        "grid=x0",
        "substeps=x0",
        "drivers-per-cell=0",
        "anchor",
        "anchoring",
        "anchoring=floor",
    ] {
        assert_eq!(Change::parse(bad), None, "{bad}");
    }
}

#[test]
fn parabola_vertex_of_a_quadratic_scan() {
    let xs: Vec<f64> = (0..7).map(|i| 3.0 + 0.2 * i as f64).collect();
    let ys: Vec<f64> = xs.iter().map(|x| 2.0 * (x - 3.53).powi(2) + 0.1).collect();
    let (x, edge) = parabola_optimum(&xs, &ys);
    assert!((x - 3.53).abs() < 1e-9 && !edge, "{x}");
    // Lowest at an end: that end, flagged.
    let ys: Vec<f64> = xs.iter().map(|x| (x - 5.0).powi(2)).collect();
    assert_eq!(parabola_optimum(&xs, &ys), (xs[6], true));
}

#[test]
fn changes_reach_the_demo_scene() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = Scene::load(&repo.join("scenes/fox.toml")).unwrap();
    let cells = scene.drivers.occupied_cells;
    let min = scene.stability().min_substeps;

    let s = Change::DriversPerCell(8).apply(&scene);
    assert_eq!(s.drivers.count, 8 * cells);
    let s = Change::DriverPerSplat.apply(&scene);
    assert_eq!(s.drivers.count, scene.simulated_indices().len());
    let s = Change::Substeps(4).apply(&scene);
    assert_eq!(s.simulation.substeps, 4 * min);

    // A finer grid: more occupied cells at the same drivers per cell, and
    // the substeps its smaller cells need.
    let s = Change::Grid(2.0).apply(&scene);
    assert_eq!(s.simulation.grid_res, 2 * scene.simulation.grid_res);
    assert!(s.drivers.occupied_cells > cells);
    assert!((s.drivers.per_occupied_cell() - scene.drivers.per_occupied_cell()).abs() < 0.01);
    assert_eq!(s.simulation.substeps, s.stability().min_substeps);
    assert!(s.simulation.substeps > scene.simulation.substeps);
    assert_eq!(Change::Default.apply(&scene).drivers, scene.drivers);

    // The anchoring rule alone changes.
    assert_eq!(scene.simulation.anchoring, AnchorRule::Splats);
    let s = Change::Anchoring(AnchorRule::Nearest).apply(&scene);
    assert_eq!(s.simulation.anchoring, AnchorRule::Nearest);
    assert_eq!(
        (
            s.simulation.grid_res,
            s.simulation.substeps,
            s.drivers.count
        ),
        (
            scene.simulation.grid_res,
            scene.simulation.substeps,
            scene.drivers.count
        )
    );
}
