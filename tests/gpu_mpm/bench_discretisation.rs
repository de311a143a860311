//! `physfit bench discretisation` end to end on fit_cli.rs's small block
//! twin (a soft top on a stiffer base, frames made by `physfit synth` at
//! its finer default discretisation): every row scans both regions, the
//! changes reach the scene (drivers per cell, substeps, grid), the
//! optimum is the scan's own parabola vertex, and the shifts are against
//! the default row. No timing is asserted.

use serde_json::Value;

use super::fit_cli::{scene_toml, twin_with, TRUTH_BOXES};
use crate::common::cli::{ok, physfit, refused};

/// The truth's box as the stiffness field's region.
const REGIONS: &str = r#"
[fit.stiffness.regions]
top = [{ min = [-1.0, -1.0, 0.2], max = [1.0, 1.0, 1.0] }]
"#;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn bench_discretisation_scans_every_region_under_each_change() {
    let dir = twin_with(&scene_toml("regions", REGIONS), TRUTH_BOXES, &[]);
    let d = dir.path();
    let run = physfit(
        d,
        &[
            "bench",
            "discretisation",
            "--scene",
            "scene.toml",
            "--truth",
            "truth.toml",
            "--changes",
            "default,drivers-per-cell=2,substeps=x2,grid=x1.5,anchoring=nearest",
            "--points",
            "5",
            "--span",
            "0.4",
        ],
    );
    ok(&run);
    let json: Value = serde_json::from_slice(&run.stdout).expect("JSON on stdout");
    let bench = &json["discretisation"];
    let rows = bench["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["change"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "default",
            "drivers-per-cell=2",
            "substeps=x2",
            "grid=x1.5",
            "anchoring=nearest"
        ]
    );
    let default = &rows[0];
    let cells = f(&default["drivers"]) / f(&default["drivers_per_cell"]);
    // The changes reach the scene the problem is built from.
    assert_eq!(f(&rows[1]["drivers"]), (2.0 * cells).round());
    assert_eq!(
        f(&rows[2]["substeps"]),
        2.0 * f(&rows[2]["min_substeps"]),
        "{:?}",
        rows[2]
    );
    assert_eq!(f(&rows[3]["grid_res"]), 18.0);
    // The anchoring rule alone changes.
    assert_eq!(default["anchoring"], "splats");
    assert_eq!(rows[4]["anchoring"], "nearest");
    for key in ["drivers", "grid_res", "substeps"] {
        assert_eq!(rows[4][key], default[key], "{key}");
    }
    assert!(f(&rows[3]["substeps"]) >= f(&rows[3]["min_substeps"]));
    // A grid change keeps the drivers per occupied cell, up to the cap at
    // the block's 8³ splats.
    let kept =
        f(&default["drivers_per_cell"]) * f(&rows[3]["drivers"]) / f(&rows[3]["drivers_per_cell"]);
    assert_eq!(
        f(&rows[3]["drivers"]),
        kept.round().min(512.0),
        "{:?}",
        rows[3]
    );
    for row in rows {
        let regions = row["regions"].as_array().unwrap();
        let names: Vec<&str> = regions
            .iter()
            .map(|r| r["region"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{row}");
        assert!(names.contains(&"top"), "{names:?}");
        for (r, scan) in regions.iter().enumerate() {
            let xs: Vec<f64> = scan["log10_youngs"]
                .as_array()
                .unwrap()
                .iter()
                .map(f)
                .collect();
            let loss: Vec<f64> = scan["loss"].as_array().unwrap().iter().map(f).collect();
            assert_eq!(xs.len(), loss.len());
            assert!(
                xs.len() >= 3 && xs.windows(2).all(|w| w[1] > w[0]),
                "{xs:?}"
            );
            assert!(loss.iter().all(|l| l.is_finite() && *l > 0.0), "{loss:?}");
            let truth = f(&scan["truth"]);
            let expected = if names[r] == "top" { 3.5 } else { 4.0 };
            assert!((truth - expected).abs() < 1e-9, "{scan}");
            // The optimum lies between the scan's ends, next to its lowest
            // point.
            let optimum = f(&scan["optimum"]);
            let lowest = (0..xs.len())
                .min_by(|&a, &b| loss[a].total_cmp(&loss[b]))
                .unwrap();
            let step = xs[1] - xs[0];
            assert!((optimum - xs[lowest]).abs() <= step + 1e-9, "{scan}");
            assert!((f(&scan["bias"]) - (optimum - truth)).abs() < 1e-12);
            match row["shift_from_default"].as_array() {
                None => assert_eq!(row["change"], "default"),
                Some(shifts) => {
                    let base = &default["regions"][r];
                    assert_eq!(base["region"], scan["region"]);
                    let shift = f(&shifts[r]);
                    assert!((shift - (optimum - f(&base["optimum"]))).abs() < 1e-12);
                }
            }
        }
        assert!(f(&row["evaluation_s"]) > 0.0);
    }
    // On its own frames the default discretisation places the top near its
    // truth: the scan brackets a minimum rather than running to an end.
    let top = default["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["region"] == "top")
        .unwrap();
    assert_eq!(top["at_edge"], false, "{top}");

    let bad = physfit(
        d,
        &[
            "bench",
            "discretisation",
            "--scene",
            "scene.toml",
            "--truth",
            "truth.toml",
            "--changes",
            "grid=fine",
        ],
    );
    assert!(refused(&bad).contains("unknown change 'grid=fine'"));
}
