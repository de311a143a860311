//! K-Means driving particles (src/drive): deterministic for a seed, as good
//! as a plain Lloyd run, exact nearest drivers and graph, the driver count
//! (`"auto"` = 8 per occupied cell), the volume and anchored rules, the
//! interior filling, `physfit check`'s drivers-per-cell warning, and
//! `[drivers]` mistakes named (docs/design.md § Drivers and the deformation of
//! Gaussians).

use std::path::Path;
use std::process::Command;

use crate::common::scene_with;
use physfit::drive::kmeans::{
    distance2, kmeans, kmeans_plus_plus, SplitMix64, MAX_ITERATIONS, TOLERANCE,
};
use physfit::drive::{DriverSet, DriverSource};
use physfit::mpm_rules::config::occupied_volume;
use physfit::mpm_rules::voxel;
use physfit::scene::config::DRIVERS_PER_GAUSSIAN;
use physfit::scene::{DriverCount, Gaussians, Scene, SimBox};

/// `n` points in a few anisotropic clumps inside [0.2, 0.8]³.
fn clumps(n: usize, seed: u64) -> Vec<[f64; 3]> {
    let mut rng = SplitMix64::new(seed);
    let centres = [
        [0.3, 0.3, 0.3],
        [0.7, 0.35, 0.5],
        [0.45, 0.7, 0.6],
        [0.6, 0.6, 0.3],
    ];
    let spread = [[0.08, 0.03, 0.05], [0.03, 0.09, 0.04], [0.06, 0.06, 0.02]];
    (0..n)
        .map(|i| {
            let c = centres[i % centres.len()];
            let s = spread[i % spread.len()];
            std::array::from_fn(|a| c[a] + s[a] * (2.0 * rng.next_f64() - 1.0))
        })
        .collect()
}

/// A hand-made source: the points are all Gaussians (splat `i` is point
/// `i`), none anchored unless `anchored` says so.
fn source(points: &[[f64; 3]], anchored: Vec<bool>) -> DriverSource {
    DriverSource {
        sim_box: SimBox {
            min: [0.0; 3],
            side: 1.0,
        },
        grid_res: 32,
        splat_indices: (0..points.len() as u32).collect(),
        points: points.iter().map(|p| p.map(|c| c as f32)).collect(),
        anchored,
    }
}

/// Plain Lloyd, O(n·k) per iteration, brute-force assignment: the oracle
/// the k-d tree version must match. Same stopping rule, empty clusters keep
/// their centre.
fn reference_lloyd(points: &[[f64; 3]], mut centres: Vec<[f64; 3]>) -> f64 {
    let mut previous = f64::INFINITY;
    for _ in 0..MAX_ITERATIONS {
        let mut sums = vec![[0.0; 3]; centres.len()];
        let mut counts = vec![0usize; centres.len()];
        let mut inertia = 0.0;
        for p in points {
            let (best, d) = centres
                .iter()
                .enumerate()
                .map(|(j, c)| (j, distance2(p, c)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            inertia += d;
            counts[best] += 1;
            for a in 0..3 {
                sums[best][a] += p[a];
            }
        }
        if previous.is_finite() && previous - inertia <= TOLERANCE * previous {
            return inertia;
        }
        previous = inertia;
        for ((c, s), &m) in centres.iter_mut().zip(&sums).zip(&counts) {
            if m > 0 {
                *c = s.map(|x| x / m as f64);
            }
        }
    }
    previous
}

#[test]
fn kmeans_matches_a_plain_lloyd_run_within_two_percent() {
    let points = clumps(3000, 11);
    for (k, seed) in [(60, 0), (150, 5)] {
        let seeds = kmeans_plus_plus(&points, k, seed).unwrap();
        let reference = reference_lloyd(&points, seeds.clone());
        let km = kmeans(&points, k, seed).unwrap();
        assert!(km.converged, "k = {k}: {} iterations", km.iterations);
        let rel = (km.inertia - reference).abs() / reference;
        assert!(
            rel < 0.02,
            "k = {k}: inertia {} against plain Lloyd {reference} ({rel:.4})",
            km.inertia
        );
        // Lloyd lowered the inertia of its seeding, and the assignment is
        // every point's nearest centre (k-d tree against brute force).
        assert!(km.inertia < physfit::drive::kmeans::inertia(&points, &seeds));
        let brute = physfit::drive::kmeans::inertia(&points, &km.centres);
        assert!(
            (brute - km.inertia).abs() <= 1e-9 * brute,
            "{brute} {}",
            km.inertia
        );
        for (p, &c) in points.iter().zip(&km.assignment) {
            let d = distance2(p, &km.centres[c as usize]);
            assert!(km.centres.iter().all(|q| d <= distance2(p, q)));
        }
    }
}

#[test]
fn drivers_are_deterministic_for_a_seed() {
    let points = clumps(2000, 3);
    let src = source(&points, vec![false; points.len()]);
    let a = DriverSet::build(&src, 80, 8, 42).unwrap();
    let b = DriverSet::build(&src, 80, 8, 42).unwrap();
    assert_eq!(a.rest, b.rest);
    assert_eq!(a.neighbours, b.neighbours);
    assert_eq!(a.graph, b.graph);
    assert_eq!(a.cluster, b.cluster);
    assert_eq!(a.inertia, b.inertia);
    let c = DriverSet::build(&src, 80, 8, 43).unwrap();
    assert_ne!(a.rest, c.rest, "another seed gives other drivers");
}

#[test]
fn every_free_gaussian_gets_its_k_nearest_drivers() {
    let points = clumps(600, 9);
    // Every third Gaussian anchored: those stay at rest and follow nothing.
    let anchored: Vec<bool> = (0..points.len()).map(|i| i % 3 == 0).collect();
    let src = source(&points, anchored.clone());
    let k = 8;
    let set = DriverSet::build(&src, 40, k, 1).unwrap();
    let free: Vec<u32> = (0..points.len() as u32)
        .filter(|&i| !anchored[i as usize])
        .collect();
    assert_eq!(set.followers, free);
    assert_eq!(set.neighbours.len(), free.len() * k);
    let rest: Vec<[f64; 3]> = set.rest.iter().map(|p| p.map(f64::from)).collect();
    for (g, &splat) in set.followers.iter().enumerate() {
        assert_eq!(set.follower_rest[g], src.points[splat as usize]);
        let q = src.points[splat as usize].map(f64::from);
        let nb = set.neighbours_of(g);
        let mut distinct = nb.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), k, "{nb:?}");
        let d: Vec<f64> = nb
            .iter()
            .map(|&j| distance2(&q, &rest[j as usize]))
            .collect();
        assert!(d.windows(2).all(|w| w[0] <= w[1]), "not sorted: {d:?}");
        let mut brute: Vec<(f64, u32)> = rest
            .iter()
            .enumerate()
            .map(|(j, r)| (distance2(&q, r), j as u32))
            .collect();
        brute.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let want: Vec<u32> = brute[..k].iter().map(|x| x.1).collect();
        assert_eq!(nb, &want[..], "follower {g}");
    }
}

#[test]
fn the_driver_graph_is_the_symmetric_knn_graph() {
    let points = clumps(1500, 4);
    let src = source(&points, vec![false; points.len()]);
    let k = 6;
    let set = DriverSet::build(&src, 70, k, 2).unwrap();
    let n = set.len();
    assert!(set.graph.iter().all(|&(a, b)| a < b && (b as usize) < n));
    assert!(
        set.graph.windows(2).all(|w| w[0] < w[1]),
        "sorted, no duplicate"
    );
    let rest: Vec<[f64; 3]> = set.rest.iter().map(|p| p.map(f64::from)).collect();
    let mut want = Vec::new();
    for a in 0..n {
        let mut others: Vec<(f64, usize)> = (0..n)
            .filter(|&b| b != a)
            .map(|b| (distance2(&rest[a], &rest[b]), b))
            .collect();
        others.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        for &(_, b) in &others[..k] {
            want.push((a.min(b) as u32, a.max(b) as u32));
        }
    }
    want.sort_unstable();
    want.dedup();
    assert_eq!(set.graph, want);
    // Every driver has at least k neighbours in the graph.
    let mut degree = vec![0usize; n];
    for &(a, b) in &set.graph {
        degree[a as usize] += 1;
        degree[b as usize] += 1;
    }
    assert!(degree.iter().all(|&d| d >= k));
}

#[test]
fn every_driver_gets_the_occupied_volume_over_the_count() {
    // 2 points in each of 5×5×5 half-cell voxels (grid 32: voxel 1/64,
    // the block starts on a voxel boundary, 24/64).
    let h = 1.0 / 64.0;
    let mut points = Vec::new();
    for i in 0..5 {
        for j in 0..5 {
            for k in 0..5 {
                for t in [0.25, 0.75] {
                    points.push([
                        0.375 + (i as f64 + t) * h,
                        0.375 + (j as f64 + 0.5) * h,
                        0.375 + (k as f64 + 0.5) * h,
                    ]);
                }
            }
        }
    }
    // Anchored Gaussians count towards the volume like the others.
    let anchored: Vec<bool> = points.iter().map(|p| p[2] < 0.375 + h).collect();
    let src = source(&points, anchored);
    let set = DriverSet::build(&src, 50, 4, 0).unwrap();
    let want = 125.0 * h * h * h;
    assert!((set.occupied_volume - want).abs() < 1e-12 * want);
    assert!((set.volume - want / 50.0).abs() < 1e-12 * want / 50.0);
    assert_eq!(set.setup(vec![1e4; 50], 1e5).particle_volume, set.volume);
    let p64: Vec<[f64; 3]> = src.points.iter().map(|p| p.map(f64::from)).collect();
    assert_eq!(set.occupied_volume, occupied_volume(&p64, 32));
}

#[test]
fn a_driver_is_anchored_when_most_of_its_cluster_is() {
    // Three far-apart blobs of 6 Gaussians: 4, 3 (a tie) and 1 anchored.
    let centres = [[0.2, 0.2, 0.2], [0.5, 0.5, 0.5], [0.8, 0.8, 0.8]];
    let anchored_per_blob = [4, 3, 1];
    let mut points = Vec::new();
    let mut anchored = Vec::new();
    for (c, &na) in centres.iter().zip(&anchored_per_blob) {
        for i in 0..6 {
            points.push([c[0] + 0.001 * i as f64, c[1], c[2]]);
            anchored.push(i < na);
        }
    }
    let src = source(&points, anchored);
    let set = DriverSet::build(&src, 3, 2, 0).unwrap();
    for (b, c) in centres.iter().enumerate() {
        let d = set.cluster[6 * b] as usize;
        assert!(set.cluster[6 * b..6 * b + 6]
            .iter()
            .all(|&x| x as usize == d));
        assert!((set.rest[d][0] as f64 - (c[0] + 0.0025)).abs() < 1e-6);
        assert_eq!(
            set.anchored[d],
            b == 0,
            "blob {b}: majority anchors, a tie does not"
        );
    }
    let start = set.uniform_start([1.0, 2.0, 3.0]).unwrap();
    for (v, &a) in start.v.iter().zip(&set.anchored) {
        assert_eq!(*v, if a { [0.0; 3] } else { [1.0, 2.0, 3.0] });
    }
    assert!(set.fill_only.iter().all(|f| !f));
    // The `splats` anchoring rule holds by every anchored point, whatever
    // its driver: the 4 + 3 + 1 anchored Gaussians, not the one anchored
    // driver.
    assert_eq!(set.held_points.len(), 8);
    for p in &set.held_points {
        let i = points
            .iter()
            .position(|q| q.map(|c| c as f32) == *p)
            .expect("a source point");
        assert!(src.anchored[i]);
    }
    assert_eq!(set.setup(vec![1.0; 3], 1.0).held_points, set.held_points);
}

// --- Scenes ---------------------------------------------------------------

/// `per_axis³` splats filling the unit cube densely (world units).
fn dense_block(per_axis: usize) -> Vec<[f32; 3]> {
    let mut m = Vec::new();
    for i in 0..per_axis {
        for j in 0..per_axis {
            for k in 0..per_axis {
                let f = |x: usize| (x as f32 + 0.5) / per_axis as f32;
                m.push([f(i), f(j), f(k)]);
            }
        }
    }
    m
}

/// Splats on the sphere of `radius` around (0.5, 0.5, 0.5), a Fibonacci
/// lattice of `n` points (a closed shell).
fn sphere_shell(n: usize, radius: f32) -> Vec<[f32; 3]> {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
            let r = (1.0 - z * z).sqrt();
            let t = golden * i as f32;
            [
                0.5 + radius * r * t.cos(),
                0.5 + radius * r * t.sin(),
                0.5 + radius * z,
            ]
        })
        .collect()
}

#[test]
fn auto_count_is_eight_per_occupied_cell_capped_at_the_gaussians() {
    // Dense: 28³ splats on grid 16, about 30 per occupied cell.
    let means = dense_block(28);
    let grid = "[simulation]\ngrid_res = 16";
    let (_d, scene) = scene_with(&means, grid);
    let scene = scene.unwrap();
    let d = &scene.drivers;
    assert_eq!(d.rule, DriverCount::Auto);
    let normalised: Vec<[f32; 3]> = scene.normalised_means();
    let cells = voxel::count(&voxel::occupied_cells(&normalised, 16));
    assert_eq!(d.occupied_cells, cells);
    assert!(8 * cells < means.len(), "the case is below the cap");
    assert_eq!(d.count, 8 * cells);
    assert_eq!(d.per_occupied_cell(), 8.0);
    assert!(!d.too_sparse());
    let set = DriverSet::from_scene(&scene).unwrap();
    assert_eq!(set.len(), d.count);

    // Sparse: 5³ splats, one per cell: the count is capped at 125.
    let (_d, scene) = scene_with(&dense_block(5), "");
    let d = scene.unwrap().drivers;
    assert_eq!((d.occupied_cells, d.count), (125, 125));
    assert!(d.too_sparse(), "1 driver per cell");

    // An integer, `"auto"` and `fraction` are accepted.
    let with = |d: &str| scene_with(&means, &format!("{grid}\n[drivers]\n{d}"));
    let (_d, s) = with("count = \"auto\"");
    assert_eq!(s.unwrap().drivers.count, 8 * cells);
    let (_d, s) = with("count = 300");
    assert_eq!(s.unwrap().drivers.rule, DriverCount::Given(300));
    let (_d, s) = with("count = 100000");
    assert_eq!(s.unwrap().drivers.count, means.len(), "capped");
    let (_d, s) = with("fraction = 0.25");
    assert_eq!(s.unwrap().drivers.count, 5488, "a quarter of 28³");
}

#[test]
fn bad_driver_settings_are_refused_naming_the_field() {
    let means = dense_block(6);
    for (toml, field) in [
        ("count = 0", "drivers.count"),
        ("count = -3", "drivers.count"),
        ("count = \"many\"", "drivers.count"),
        ("count = 2.5", "drivers.count"),
        ("count = 10\nfraction = 0.5", "drivers.fraction"),
        ("count = \"auto\"\nfraction = 0.5", "drivers.fraction"),
        ("fraction = 1.5", "drivers.fraction"),
        ("fraction = 0.0", "drivers.fraction"),
        ("k = 0", "drivers.k"),
        ("count = 4\nk = 5", "drivers.k"),
        ("fill = \"yes\"", "fill"),
        ("clusters = 3", "clusters"),
    ] {
        let (_d, s) = scene_with(&means, &format!("[drivers]\n{toml}"));
        let msg = match s {
            Ok(_) => panic!("`{toml}` accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            msg.contains(field),
            "`{toml}`: message lacks `{field}`: {msg}"
        );
        assert!(msg.contains("drivers"), "`{toml}`: {msg}");
        assert!(msg.contains("scene.toml"), "`{toml}`: {msg}");
    }
}

/// The deformation takes exactly 8 nearest drivers per Gaussian, so any
/// other `drivers.k` is refused when the scene loads, naming the field and
/// the value to set, not later inside a fit or a render.
#[test]
fn drivers_k_other_than_the_deformations_is_refused_at_load() {
    let means = dense_block(6);
    for k in [1, 4, 7, 9, 16] {
        let (_d, s) = scene_with(&means, &format!("[drivers]\ncount = 40\nk = {k}"));
        let msg = match s {
            Ok(_) => panic!("`drivers.k = {k}` accepted"),
            Err(e) => e.to_string(),
        };
        assert!(msg.contains("`drivers.k`"), "k = {k}: {msg}");
        assert!(msg.contains("set `drivers.k = 8`"), "k = {k}: {msg}");
    }
    let (_d, s) = scene_with(&means, "[drivers]\ncount = 40\nk = 8");
    assert_eq!(s.unwrap().drivers.k, DRIVERS_PER_GAUSSIAN);
    let (_d, s) = scene_with(&means, "[drivers]\ncount = 5");
    let msg = match s {
        Ok(_) => panic!("5 drivers for k = 8 accepted"),
        Err(e) => e.to_string(),
    };
    assert!(msg.contains("drivers.count"), "{msg}");
    assert!(msg.contains("at least 8"), "{msg}");
}

#[test]
fn fill_samples_the_inside_of_a_closed_shell() {
    let shell = sphere_shell(6000, 0.4);
    let (_d, open) = scene_with(&shell, "");
    let open = open.unwrap();
    assert_eq!(open.drivers.fill_points, 0);
    let (_d, scene) = scene_with(
        &shell,
        "[drivers]\nfill = true\n[regions]\nanchored = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 0.3] }]",
    );
    let scene = scene.unwrap();
    let d = &scene.drivers;
    assert!(d.fill && d.interior_cells > 0);
    // Every voxel of the interior cells, and the inner voxels of the
    // surface cells, at the splats' density.
    assert!(d.fill_points > 8 * d.interior_cells);
    assert_eq!(
        d.occupied_cells,
        open.drivers.occupied_cells + d.interior_cells
    );
    // 8 per occupied cell, capped at the points K-Means runs over.
    assert_eq!(d.count, (8 * d.occupied_cells).min(6000 + d.fill_points));
    let src = DriverSource::from_scene(&scene).unwrap();
    assert_eq!(src.gaussian_count(), 6000);
    assert_eq!(src.fill_count(), d.fill_points);
    // Fill points lie inside the sphere; those in the anchored slab are
    // anchored.
    for (p, &a) in src.points[6000..].iter().zip(&src.anchored[6000..]) {
        let w = scene.simulation.sim_box.to_world(*p);
        let r = ((w[0] - 0.5).powi(2) + (w[1] - 0.5).powi(2) + (w[2] - 0.5).powi(2)).sqrt();
        assert!(r < 0.4, "{w:?}");
        assert_eq!(a, w[2] <= 0.3);
    }
    let set = DriverSet::from_scene(&scene).unwrap();
    assert_eq!(set.len(), d.count);
    // Inner drivers hold only fill points; followers are only Gaussians.
    let inner = set.fill_only.iter().filter(|f| **f).count();
    assert!(inner > 0 && inner < set.len(), "{inner} of {}", set.len());
    assert!(set.followers.iter().all(|&s| (s as usize) < 6000));
    // The volume is now the solid ball's: the occupied voxels of the
    // shell and of the interior.
    let ball = 4.0 / 3.0 * std::f64::consts::PI * (0.4 / scene.simulation.sim_box.side).powi(3);
    assert!(
        (set.occupied_volume - ball).abs() < 0.1 * ball,
        "{} vs ball {ball}",
        set.occupied_volume
    );
}

// --- physfit check ----------------------------------------------------------

fn check(scene: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("check")
        .arg(scene)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

#[test]
fn check_warns_below_two_drivers_per_cell_and_not_for_the_demo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = check(&root.join("scenes/fox.toml"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("8.00 per occupied cell (177 cells)"),
        "{stdout}"
    );
    assert!(!stdout.contains("WARNING"), "{stdout}");

    // The fox on a grid of 32 with 2048 drivers (the old defaults): 1.74 per cell.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("scenes/fox.toml"))
        .unwrap()
        .replace(
            "../assets/fox.ply",
            &root.join("assets/fox.ply").to_string_lossy(),
        )
        .replace(
            "\"fox_frames/",
            &format!("\"{}/", root.join("scenes/fox_frames").to_string_lossy()),
        )
        .replace("count = \"auto\"", "count = 2048")
        .replace("grid_res = 16", "grid_res = 32")
        .replace(
            "log10_youngs_range = [3.0, 5.0]",
            "log10_youngs_range = [3.0, 4.0]",
        );
    let scene = dir.path().join("sparse.toml");
    std::fs::write(&scene, text).unwrap();
    let out = check(&scene);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("1.74 per occupied cell"), "{stdout}");
    assert!(
        stdout.contains("WARNING")
            && stdout.contains("below 2")
            && stdout.contains("drivers.count"),
        "{stdout}"
    );
}

// --- Benchmark ----------------------------------------------------------------

/// K-Means speed on the real fox (target: 50,000 points into 2,000
/// clusters in under 2 s on the 2-core CI machine, release build). Run:
/// `cargo test --release --locked --test cpu kmeans_speed -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn kmeans_speed_on_the_fox() {
    let scene =
        Scene::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fox.toml")).unwrap();
    let all: Vec<[f64; 3]> = scene
        .normalised_means()
        .iter()
        .map(|p| p.map(f64::from))
        .collect();
    assert_eq!(all.len(), 50_000);
    let t = std::time::Instant::now();
    let seeds = kmeans_plus_plus(&all, 2000, 0).unwrap();
    let t_seed = t.elapsed().as_secs_f64();
    let km = physfit::drive::kmeans::lloyd(&all, seeds).unwrap();
    let total = t.elapsed().as_secs_f64();
    println!(
        "fox 50000 points -> 2000 clusters: {total:.3} s (seeding {t_seed:.3} s, {} Lloyd iterations, converged {}, inertia {:.6e})",
        km.iterations, km.converged, km.inertia
    );
    // What the tolerance gives up: Lloyd run to an unchanged assignment.
    let t = std::time::Instant::now();
    let seeds = kmeans_plus_plus(&all, 2000, 0).unwrap();
    let full = physfit::drive::kmeans::lloyd_with(&all, seeds, 10_000, 0.0).unwrap();
    println!(
        "  to full convergence: {:.3} s, {} iterations, inertia {:.6e} ({:+.3}% from the tolerance's)",
        t.elapsed().as_secs_f64(),
        full.iterations,
        full.inertia,
        100.0 * (full.inertia - km.inertia) / km.inertia
    );
    let t = std::time::Instant::now();
    let set = DriverSet::from_scene(&scene).unwrap();
    println!(
        "demo drivers: {} of {} simulated Gaussians ({:.2} per occupied cell): {:.3} s ({} iterations), {} followers, {} graph edges",
        set.len(),
        scene.simulated_indices().len(),
        scene.drivers.per_occupied_cell(),
        t.elapsed().as_secs_f64(),
        set.iterations,
        set.followers.len(),
        set.graph.len()
    );
}

/// The deformation's setup from a driver set: one deformed Gaussian per
/// follower, its 8 nearest drivers, its rest centre and its splat's
/// rotation; a driver set with another k is refused naming the field.
#[test]
fn the_deformation_setup_comes_from_the_drivers() {
    use physfit::deform::{DeformError, DeformSetup};
    let points = clumps(300, 4);
    let anchored: Vec<bool> = (0..points.len()).map(|i| i % 5 == 0).collect();
    let src = source(&points, anchored);
    let mut gaussians = Gaussians::default();
    for (i, p) in src.points.iter().enumerate() {
        gaussians.means.push(*p);
        let t = i as f32 * 0.01;
        gaussians.rotations.push([t.cos(), t.sin(), 0.0, 0.0]);
        gaussians.log_scales.push([-4.0; 3]);
        gaussians.opacity_logits.push(0.0);
        gaussians.sh.push([0.0; 3]);
    }
    let set = DriverSet::build(&src, 30, 8, 2).unwrap();
    let setup = DeformSetup::from_drivers(&set, &gaussians).unwrap();
    assert_eq!(setup.splat_index, set.followers);
    assert_eq!(setup.rest_drivers, set.rest);
    for (g, &splat) in set.followers.iter().enumerate() {
        assert_eq!(&setup.drivers[g][..], set.neighbours_of(g));
        assert_eq!(setup.rest_centres[g], set.follower_rest[g]);
        assert_eq!(setup.rest_rotations[g], gaussians.rotations[splat as usize]);
    }
    let four = DriverSet::build(&src, 30, 4, 2).unwrap();
    match DeformSetup::from_drivers(&four, &gaussians) {
        Err(e @ DeformError::Invalid(_)) => assert!(e.to_string().contains("drivers.k"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}
