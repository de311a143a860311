//! The fit's settings in scene.toml: `field` and its regions per
//! stage, `velocity_tv_weight`, `rounds`, `checkpoint_every`, each mistake
//! refused naming its field; and the region assignment of
//! src/fit/field_setting.rs over a scene's K-Means drivers (first region
//! wins, uncovered drivers form one more region, names in file order).

use crate::scene::{expect_err, Fixture, BASE};

use physfit::drive::DriverSet;
use physfit::fit::{ChosenField, RegionAssignment, VelocityField, YoungsField};
use physfit::scene::fit_field::FITTED_POISSON_MAX;
use physfit::scene::region::RegionShape;
use physfit::scene::{FieldSetting, PoissonSetting, Scene, UNCOVERED_REGION};

/// BASE (64 splats on a lattice of spacing 0.5 over [0, 1.5]³) with `fit`
/// appended.
fn load(fx: &Fixture, fit: &str) -> Scene {
    fx.load(&format!("{BASE}\n{fit}")).unwrap()
}

#[test]
fn fit_settings_default_to_per_driver_fields_three_rounds_a_scan_and_checkpoints_every_10() {
    let fx = Fixture::new();
    let fit = load(&fx, "").fit;
    assert_eq!((fit.rounds, fit.checkpoint_every), (3, 10));
    assert_eq!((fit.scan.points, fit.scan.velocity_evaluations), (5, 4));
    assert_eq!(fit.scan.poisson_points, 5);
    for stage in [&fit.velocity, &fit.stiffness] {
        assert_eq!(stage.field, FieldSetting::Drivers);
        assert_eq!(stage.velocity_tv_weight, 0.0);
    }
    let fit = load(
        &fx,
        "[fit]\nrounds = 2\ncheckpoint_every = 3\n[fit.velocity]\nfield = \"rigid\"\n\
         velocity_tv_weight = 0.2\n[fit.stiffness]\nfield = \"global\"\n",
    )
    .fit;
    assert_eq!((fit.rounds, fit.checkpoint_every), (2, 3));
    assert_eq!(fit.velocity.field, FieldSetting::Rigid);
    assert_eq!(fit.velocity.velocity_tv_weight, 0.2);
    assert_eq!(fit.stiffness.field, FieldSetting::Global);
    let fit = load(&fx, "[fit.velocity]\nfield = \"drivers\"\n").fit;
    assert_eq!(fit.velocity.field, FieldSetting::Drivers);
}

/// The names come back in the order written, not toml's sorted order, in
/// every TOML form of a table; each region is the union of its shapes.
#[test]
fn named_regions_keep_the_order_written() {
    let fx = Fixture::new();
    let tables = "[fit.stiffness]\nfield = \"regions\"\n[fit.stiffness.regions]\n\
        zeta = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }]\n\
        alpha = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 2.0] }, \
                 { min = [1.2, 0.0, 0.0], max = [2.0, 1.0, 1.0] }]\n\
        mid = [{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }]\n";
    let inline = "[fit.velocity]\nfield = \"regions\"\nregions = { \
        zeta = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }], \
        alpha = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 2.0] }, \
                 { min = [1.2, 0.0, 0.0], max = [2.0, 1.0, 1.0] }], \
        mid = [{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }] }\n";
    let fit = load(&fx, &format!("{tables}{inline}")).fit;
    for field in [&fit.stiffness.field, &fit.velocity.field] {
        let FieldSetting::Regions(regions) = field else {
            panic!("{field:?}")
        };
        let names: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        let shapes: Vec<usize> = regions.iter().map(|r| r.region.shapes.len()).collect();
        assert_eq!(shapes, [1, 2, 1]);
        assert!(matches!(
            regions[1].region.shapes[1],
            RegionShape::Box {
                min: [1.2, 0.0, 0.0],
                max: [2.0, 1.0, 1.0]
            }
        ));
        assert!(regions[1].region.contains([1.5, 0.5, 0.5]));
        assert!(!regions[0].region.contains([1.5, 0.5, 0.5]));
    }
}

#[test]
fn each_wrong_fit_setting_is_refused_naming_its_field() {
    let fx = Fixture::new();
    let refused = |fit: &str, field: &str| {
        let e = expect_err(fx.load(&format!("{BASE}\n{fit}")), field);
        eprintln!("{e}");
        e.to_string()
    };
    // Fields: the stiffness has no rigid field; both list the allowed values.
    let msg = refused(
        "[fit.stiffness]\nfield = \"rigid\"\n",
        "fit.stiffness.field",
    );
    for word in ["\"drivers\"", "\"global\"", "\"regions\""] {
        assert!(msg.contains(word), "{msg}");
    }
    let msg = refused("[fit.velocity]\nfield = \"smooth\"\n", "fit.velocity.field");
    for word in [
        "\"smooth\"",
        "\"drivers\"",
        "\"global\"",
        "\"rigid\"",
        "\"regions\"",
    ] {
        assert!(msg.contains(word), "{msg}");
    }
    // Regions: required and non-empty with "regions", refused otherwise.
    refused(
        "[fit.stiffness]\nfield = \"regions\"\n",
        "fit.stiffness.regions",
    );
    refused(
        "[fit.velocity]\nfield = \"regions\"\n[fit.velocity.regions]\n",
        "fit.velocity.regions",
    );
    let box_region = "tail = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }]\n";
    let msg = refused(
        &format!("[fit.stiffness.regions]\n{box_region}"),
        "fit.stiffness.regions",
    );
    assert!(msg.contains("field = \"regions\""), "{msg}");
    refused(
        &format!("[fit.velocity]\nfield = \"global\"\n[fit.velocity.regions]\n{box_region}"),
        "fit.velocity.regions",
    );
    let with = |regions: &str| {
        format!("[fit.stiffness]\nfield = \"regions\"\n[fit.stiffness.regions]\n{regions}")
    };
    refused(&with("tail = []\n"), "fit.stiffness.regions.tail");
    refused(
        &with("tail = [{ min = [0.0, 0.0, 0.0] }]\n"),
        "fit.stiffness.regions.tail[0]",
    );
    refused(
        &with("tail = [{ min = [1.0, 0.0, 0.0], max = [0.0, 1.0, 1.0] }]\n"),
        "fit.stiffness.regions.tail[0]",
    );
    refused(
        &with("tail = [{ points = \"missing.ply\", radius = 0.1 }]\n"),
        "fit.stiffness.regions.tail[0].points",
    );
    refused(
        &with(&format!(
            "\"{UNCOVERED_REGION}\" = [{{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }}]\n"
        )),
        &format!("fit.stiffness.regions.{UNCOVERED_REGION}"),
    );
    // The velocity smoothness weight: ≥ 0, and stage 1 only.
    refused(
        "[fit.velocity]\nvelocity_tv_weight = -0.1\n",
        "fit.velocity.velocity_tv_weight",
    );
    let msg = refused(
        "[fit.stiffness]\nvelocity_tv_weight = 0.1\n",
        "fit.stiffness.velocity_tv_weight",
    );
    assert!(msg.contains("[fit.velocity]"), "{msg}");
    // Rounds and the checkpoint interval: integers ≥ 1.
    refused("[fit]\nrounds = 0\n", "fit.rounds");
    refused("[fit]\nrounds = -2\n", "fit.rounds");
    refused("[fit]\ncheckpoint_every = 0\n", "fit.checkpoint_every");
}

/// Over the lattice's 64 drivers (one per splat: as many drivers as
/// splats), regions written "low" (z ≤ 0.6: 32 drivers) then "left"
/// (x ≤ 0.25: 16, 8 of them also low): a driver in both belongs to the
/// first written, the 24 in neither to one more region; E and v0 get the
/// same assignment, and the other fields map as named.
#[test]
fn drivers_belong_to_the_first_region_holding_them_and_the_rest_to_one_more() {
    let fx = Fixture::new();
    let scene = load(
        &fx,
        "[fit.stiffness]\nfield = \"regions\"\n[fit.stiffness.regions]\n\
         low = [{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 0.6] }]\n\
         left = [{ min = [-1.0, -1.0, -1.0], max = [0.25, 2.0, 2.0] }]\n\
         [fit.velocity]\nfield = \"regions\"\n[fit.velocity.regions]\n\
         low = [{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 0.6] }]\n\
         left = [{ min = [-1.0, -1.0, -1.0], max = [0.25, 2.0, 2.0] }]\n",
    );
    let drivers = DriverSet::from_scene(&scene).unwrap();
    assert_eq!(drivers.len(), 64);
    let FieldSetting::Regions(regions) = &scene.fit.stiffness.field else {
        panic!()
    };
    let a = RegionAssignment::new(regions, &drivers);
    assert_eq!(a.names, ["low", "left", UNCOVERED_REGION]);
    assert_eq!(a.drivers, [32, 8, 24]);
    for (d, &r) in a.region.iter().enumerate() {
        let p = drivers.sim_box.to_world(drivers.rest[d]);
        let want = if p[2] <= 0.6 {
            0
        } else if p[0] <= 0.25 {
            1
        } else {
            2
        };
        assert_eq!(r, want, "driver {d} at {p:?}");
    }
    let youngs = ChosenField::youngs(&scene.fit.stiffness.field, &drivers).unwrap();
    assert_eq!(
        youngs.field,
        YoungsField::Regions {
            region: a.region.clone(),
            count: 3
        }
    );
    assert_eq!(youngs.regions, a.names);
    let velocity = ChosenField::velocity(&scene.fit.velocity.field, &drivers);
    assert_eq!(
        velocity.field,
        VelocityField::Regions {
            region: a.region.clone(),
            count: 3
        }
    );
    assert_eq!(velocity.regions, a.names);
    // Regions covering every driver add no extra region.
    let all = RegionAssignment::new(&regions[..1], &drivers);
    assert_eq!(all.names, ["low", UNCOVERED_REGION]);
    let everything = load(
        &fx,
        "[fit.stiffness]\nfield = \"regions\"\n[fit.stiffness.regions]\n\
         all = [{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 2.0] }]\n",
    );
    let FieldSetting::Regions(regions) = &everything.fit.stiffness.field else {
        panic!()
    };
    let a = RegionAssignment::new(regions, &drivers);
    assert_eq!(
        (a.names.as_slice(), a.drivers.as_slice()),
        (&["all".to_string()][..], &[64][..])
    );
    // The other settings.
    let plain = |s: &FieldSetting| ChosenField::youngs(s, &drivers).unwrap();
    assert_eq!(plain(&FieldSetting::Drivers).field, YoungsField::PerDriver);
    assert_eq!(plain(&FieldSetting::Global).field, YoungsField::Global);
    assert!(plain(&FieldSetting::Global).regions.is_empty());
    assert!(ChosenField::youngs(&FieldSetting::Rigid, &drivers).is_err());
    let v = |s: &FieldSetting| ChosenField::velocity(s, &drivers).field;
    assert_eq!(v(&FieldSetting::Drivers), VelocityField::PerDriver);
    assert_eq!(v(&FieldSetting::Global), VelocityField::Global);
    assert_eq!(v(&FieldSetting::Rigid), VelocityField::Rigid);
}

/// `poisson` of `[fit.stiffness]`: "fixed" by default (ν held at
/// `material.poisson_ratio`, the substeps those of that ν), "global" and
/// "regions" fit it, and the automatic substeps then hold at the top of a
/// fitted ν (0.49); each mistake is refused naming the field and the fix.
#[test]
fn poisson_is_fixed_by_default_fitted_globally_or_per_region_and_mistakes_are_refused() {
    let fx = Fixture::new();
    let fixed = load(&fx, "");
    assert_eq!(fixed.fit.stiffness.poisson, PoissonSetting::Fixed);
    assert_eq!(fixed.fit.velocity.poisson, PoissonSetting::Fixed);
    assert_eq!(fixed.stability().poisson_max, fixed.material.poisson_ratio);
    let written = load(&fx, "[fit.stiffness]\npoisson = \"fixed\"\n");
    assert_eq!(written.simulation.substeps, fixed.simulation.substeps);
    let global = load(
        &fx,
        "[fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n",
    );
    assert_eq!(global.fit.stiffness.poisson, PoissonSetting::Global);
    assert_eq!(global.stability().poisson_max, FITTED_POISSON_MAX);
    assert!(
        global.simulation.substeps > fixed.simulation.substeps,
        "{} substeps at ν 0.49, {} at ν {}",
        global.simulation.substeps,
        fixed.simulation.substeps,
        fixed.material.poisson_ratio
    );
    assert!(global.stability().min_substeps <= global.simulation.substeps);
    let regions = load(
        &fx,
        "[fit.stiffness]\nfield = \"regions\"\npoisson = \"regions\"\n\
         [fit.stiffness.regions]\ntail = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }]\n",
    );
    assert_eq!(regions.fit.stiffness.poisson, PoissonSetting::Regions);

    let refused = |fit: &str, field: &str| {
        let e = expect_err(fx.load(&format!("{BASE}\n{fit}")), field);
        eprintln!("{e}");
        e.to_string()
    };
    let msg = refused(
        "[fit.stiffness]\nfield = \"global\"\npoisson = \"regions\"\n",
        "fit.stiffness.poisson",
    );
    assert!(msg.contains("[fit.stiffness.regions]"), "{msg}");
    let msg = refused(
        "[fit.stiffness]\npoisson = \"free\"\n",
        "fit.stiffness.poisson",
    );
    for word in ["\"free\"", "\"fixed\"", "\"global\"", "\"regions\""] {
        assert!(msg.contains(word), "{msg}");
    }
    let msg = refused(
        "[fit.velocity]\npoisson = \"global\"\n",
        "fit.velocity.poisson",
    );
    assert!(msg.contains("[fit.stiffness]"), "{msg}");
    // Explicit substeps too few for ν = 0.49 are refused when ν is fitted.
    let substeps = fixed.simulation.substeps;
    let e = fx
        .load(&format!(
            "{BASE}\n[simulation]\nsubsteps = {substeps}\n\
             [fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n"
        ))
        .expect_err("too few substeps for a fitted ν");
    assert!(e.to_string().contains("substeps"), "{e}");
}

/// `poisson = "regions"` maps ν by E's partition (the fit's options carry
/// E's region field for it), and fit.json names each fitted ν as E's
/// region (`object` for one ν), its value `0.49·sigmoid(z)`.
#[test]
fn fitted_poissons_ratios_are_named_by_es_regions() {
    let range = physfit::scene::PoissonRange::default();
    let (poisson_of, z_of) = (|z| range.poisson_of(z), |nu| range.z_of(nu));
    use physfit::fit::summary_build::poisson_parameters;
    use physfit::fit::{FitProblemOptions, FitState, Parameters};
    let fx = Fixture::new();
    let scene = load(
        &fx,
        "[fit.stiffness]\nfield = \"regions\"\npoisson = \"regions\"\n\
         [fit.stiffness.regions]\n\
         low = [{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 0.6] }]\n\
         left = [{ min = [-1.0, -1.0, -1.0], max = [0.25, 2.0, 2.0] }]\n",
    );
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let options = FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.stiffness).unwrap();
    assert_eq!(options.poisson.as_ref(), Some(&options.youngs));
    let z = vec![z_of(0.1), z_of(0.2), z_of(0.45)];
    let state = FitState::start(
        Parameters {
            log10_youngs: vec![4.0; 3],
            velocity: vec![0.0; 3],
            poisson: z.clone(),
        },
        &[],
    );
    let named = poisson_parameters(&scene, &drivers, &state);
    let names: Vec<&str> = named.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["low", "left", UNCOVERED_REGION]);
    for (p, &z) in named.iter().zip(&z) {
        assert_eq!(p.poisson_ratio, poisson_of(z));
    }
    let global = load(&fx, "[fit.stiffness]\npoisson = \"global\"\n");
    let options = FitProblemOptions::from_scene(&global, &drivers, &global.fit.stiffness).unwrap();
    assert_eq!(options.poisson, Some(YoungsField::Global));
    let one = FitState {
        poisson: vec![z_of(0.3)],
        ..state
    };
    let named = poisson_parameters(&global, &drivers, &one);
    assert_eq!(named.len(), 1);
    assert_eq!(named[0].name, "object");
    assert!((named[0].poisson_ratio - 0.3).abs() < 1e-12);
    let fixed = load(&fx, "");
    let options = FitProblemOptions::from_scene(&fixed, &drivers, &fixed.fit.stiffness).unwrap();
    assert_eq!(options.poisson, None);
}

/// `fit.discretisation_levels` defaults to 3 levels of doubled grid and substeps and
/// takes 1 to 8; any other value is refused naming the file, the field and
/// the range with its default.
#[test]
fn discretisation_levels_default_to_three_and_bad_ones_are_refused_with_the_range() {
    let fx = Fixture::new();
    let fit = load(&fx, "").fit;
    assert_eq!(
        (fit.check_discretisation, fit.discretisation_levels),
        (true, 3),
        "every fit checks its discretisation unless told not to"
    );
    assert_eq!(
        fit.discretisation_refine,
        physfit::scene::DiscretisationRefinement::FixedGrid
    );
    let fit = load(
        &fx,
        "[fit]\ncheck_discretisation = true\ndiscretisation_levels = 1\n",
    )
    .fit;
    assert_eq!(
        (fit.check_discretisation, fit.discretisation_levels),
        (true, 1)
    );
    assert_eq!(
        load(&fx, "[fit]\ndiscretisation_levels = 8\n")
            .fit
            .discretisation_levels,
        8
    );
    for bad in ["0", "9", "-1"] {
        let e = expect_err(
            fx.load(&format!("{BASE}\n[fit]\ndiscretisation_levels = {bad}\n")),
            "fit.discretisation_levels",
        );
        let msg = e.to_string();
        assert!(msg.contains("from 1 to 8"), "{msg}");
        assert!(msg.contains("default 3"), "{msg}");
    }
}

/// `fit.discretisation_seconds`: `"auto"` by default (as long as the
/// stages took, so at most half the fit), `"none"` for no limit, a positive number of seconds; any
/// other number or word is refused naming the file, the field and the
/// words it takes.
#[test]
fn the_discretisation_budget_is_auto_none_or_positive_seconds() {
    use physfit::scene::{BudgetRule, DiscretisationBudget};
    let fx = Fixture::new();
    let auto = load(&fx, "").fit.discretisation_seconds;
    assert_eq!(auto, DiscretisationBudget::Rule(BudgetRule::Auto));
    assert_eq!(auto.seconds(300.0), Some(300.0), "the stages' time");
    let budget = |text: &str| {
        load(&fx, &format!("[fit]\ndiscretisation_seconds = {text}\n"))
            .fit
            .discretisation_seconds
    };
    assert_eq!(budget("600.0"), DiscretisationBudget::Seconds(600.0));
    assert_eq!(budget("600"), DiscretisationBudget::Seconds(600.0));
    assert_eq!(budget("600").seconds(10.0), Some(600.0));
    assert_eq!(budget("\"auto\""), auto);
    assert_eq!(budget("\"none\"").seconds(300.0), None);
    for bad in ["0.0", "-5.0", "nan"] {
        let e = expect_err(
            fx.load(&format!("{BASE}\n[fit]\ndiscretisation_seconds = {bad}\n")),
            "fit.discretisation_seconds",
        );
        assert!(e.to_string().contains("> 0"), "{e}");
    }
    let e = expect_err(
        fx.load(&format!(
            "{BASE}\n[fit]\ndiscretisation_seconds = \"forever\"\n"
        )),
        "fit.discretisation_seconds",
    );
    let msg = e.to_string();
    assert!(
        msg.contains("\"auto\"") && msg.contains("\"none\""),
        "{msg}"
    );
}

/// `[fit.stiffness] poisson_range = [low, high]`: the default `[0, 0.49]`;
/// a narrower range maps ν onto itself and takes the substeps at its top
/// (fewer than at 0.49); fit.json's stage settings and its fitted ν use it;
/// every mistake (a top above 0.49, a bottom below 0, the two crossed, a
/// start outside, the range with ν fixed or in the velocity stage) is
/// refused naming the file, the field and the fix.
#[test]
fn poissons_range_is_set_by_the_scene_and_mistakes_are_refused() {
    use physfit::fit::summary_build::poisson_parameters;
    use physfit::fit::{FitState, Parameters};
    use physfit::scene::PoissonRange;
    let fx = Fixture::new();
    let fitted = "[fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n";
    let wide = load(&fx, fitted);
    assert_eq!(wide.fit.stiffness.poisson_range, PoissonRange::default());
    assert_eq!(
        PoissonRange::default(),
        PoissonRange {
            low: 0.0,
            high: FITTED_POISSON_MAX
        }
    );
    let narrow = load(&fx, &format!("{fitted}poisson_range = [0.1, 0.4]\n"));
    let range = narrow.fit.stiffness.poisson_range;
    assert_eq!(
        range,
        PoissonRange {
            low: 0.1,
            high: 0.4
        }
    );
    assert_eq!(narrow.stability().poisson_max, 0.4);
    assert!(
        narrow.simulation.substeps < wide.simulation.substeps,
        "{} substeps at ν ≤ 0.4, {} at ν ≤ 0.49",
        narrow.simulation.substeps,
        wide.simulation.substeps
    );
    // fit.json's fitted ν is the range's map of z.
    let drivers = DriverSet::from_scene(&narrow).unwrap();
    let state = FitState::start(
        Parameters {
            log10_youngs: vec![4.0],
            velocity: vec![0.0; 3 * drivers.len()],
            poisson: vec![range.z_of(0.35)],
        },
        &[],
    );
    let named = poisson_parameters(&narrow, &drivers, &state);
    assert!((named[0].poisson_ratio - 0.35).abs() < 1e-12);

    let refused = |fit: &str, field: &str, words: &[&str]| {
        let e = expect_err(fx.load(&format!("{BASE}\n{fit}")), field).to_string();
        eprintln!("{e}");
        assert!(e.contains("scene.toml"), "{e}");
        for w in words {
            assert!(e.contains(w), "{w}: {e}");
        }
    };
    let range_field = "fit.stiffness.poisson_range";
    refused(
        &format!("{fitted}poisson_range = [0.1, 0.5]\n"),
        range_field,
        &["0.5", "0.49", "poisson_range = [low, high]"],
    );
    refused(
        &format!("{fitted}poisson_range = [-0.2, 0.4]\n"),
        range_field,
        &["-0.2", "below 0"],
    );
    refused(
        &format!("{fitted}poisson_range = [0.4, 0.2]\n"),
        range_field,
        &["not below the top"],
    );
    refused(
        &format!("{fitted}poisson_range = [0.3, 0.3]\n"),
        range_field,
        &["not below the top"],
    );
    // The start, material.poisson_ratio (0.3 here), must lie inside.
    refused(
        &format!("{fitted}poisson_range = [0.05, 0.25]\n"),
        "material.poisson_ratio",
        &["(0.05, 0.25)", "poisson_range"],
    );
    refused(
        "[fit.stiffness]\npoisson_range = [0.1, 0.4]\n",
        range_field,
        &["not fitted", "poisson = \"global\""],
    );
    refused(
        "[fit.velocity]\npoisson_range = [0.1, 0.4]\n",
        "fit.velocity.poisson_range",
        &["[fit.stiffness]"],
    );
}
