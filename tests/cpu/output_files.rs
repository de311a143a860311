//! The fit's files (src/output): `drivers.safetensors` round-trips bit for
//! bit, is written atomically (a reader of the old file never sees the new
//! one half written; a failed write leaves no temporary file), is refused with another
//! `.ply` or other settings and when truncated or altered (naming the file
//! and the tensor or field); `fitted.ply` reloads with every splat and the
//! fitted material of followers, anchored and static splats.

use std::path::Path;

use physfit::drive::DriverSet;
use physfit::mpm_rules::config::Transfer;
use physfit::mpm_rules::AnchorRule;
use physfit::output::fitted_ply::{write_fitted_ply, SplatMaterial};
use physfit::output::{youngs_world, DriversFileError, FittedDrivers};
use physfit::scene::ply::load_gaussians;
use physfit::scene::Scene;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

use crate::common::scene_with;

/// 5³ splats in the unit cube: the top layer (z = 1) static, the bottom
/// layer (z = 0) anchored, the rest free; 12 drivers, 4 per splat.
const REGIONS: &str = "[drivers]\ncount = 12\nk = 8\n\n[regions]\n\
    simulated = [{ min = [-0.1, -0.1, -0.1], max = [1.1, 1.1, 0.8] }]\n\
    anchored = [{ min = [-0.1, -0.1, -0.1], max = [1.1, 1.1, 0.1] }]";

fn lattice() -> Vec<[f32; 3]> {
    let mut means = Vec::new();
    for i in 0..5 {
        for j in 0..5 {
            for k in 0..5 {
                means.push([i as f32 * 0.25, j as f32 * 0.25, k as f32 * 0.25]);
            }
        }
    }
    means
}

/// A scene, its drivers and the "fit": log10 E, v0 (world units/s, 0 on
/// anchored drivers) and a standard error of log10 E per driver, all different and with
/// digits that a lossy encoding would change.
struct Fitted {
    dir: tempfile::TempDir,
    scene: Scene,
    drivers: DriverSet,
    log10: Vec<f64>,
    velocity: Vec<f64>,
    log10_std: Vec<f64>,
}

fn fitted() -> Fitted {
    let (dir, scene) = scene_with(&lattice(), REGIONS);
    let scene = scene.unwrap();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let n = drivers.len();
    assert_eq!(n, 12);
    assert!(drivers.anchored.iter().any(|a| *a) && drivers.anchored.iter().any(|a| !*a));
    let log10 = (0..n).map(|d| 3.0 + d as f64 / 7.0 + 1e-13).collect();
    let velocity = (0..3 * n)
        .map(|i| {
            if drivers.anchored[i / 3] {
                0.0
            } else {
                (i as f64 * 0.37).sin() / 3.0
            }
        })
        .collect();
    let log10_std = (0..n).map(|d| 0.1 * d as f64 + 1.0 / 3.0).collect();
    Fitted {
        dir,
        scene,
        drivers,
        log10,
        velocity,
        log10_std,
    }
}

impl Fitted {
    fn file(&self) -> FittedDrivers {
        FittedDrivers::new(
            &self.scene,
            &self.drivers,
            &self.log10,
            &self.velocity,
            Some(&self.log10_std),
        )
        .unwrap()
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

#[test]
fn drivers_file_round_trips_bit_for_bit_and_matches_its_scene() {
    let f = fitted();
    let file = f.file();
    let path = f.path("drivers.safetensors");
    file.save(&path).unwrap();
    let back = FittedDrivers::load(&path).unwrap();
    assert_eq!(back, file);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back.log10_youngs), bits(&f.log10));
    assert_eq!(bits(back.velocity.as_flattened()), bits(&f.velocity));
    assert_eq!(
        bits(&back.settings.sim_box.min),
        bits(&f.scene.simulation.sim_box.min)
    );
    assert_eq!(
        back.settings.sim_box.side.to_bits(),
        f.scene.simulation.sim_box.side.to_bits()
    );
    assert_eq!(back.rest, f.drivers.rest);
    assert_eq!(back.neighbours, f.drivers.neighbours);
    assert_eq!(back.graph, f.drivers.graph);
    assert_eq!(back.ply_path, "splats.ply");
    assert_eq!(back.mpm_config(), f.scene.mpm_config());
    back.check_against(&f.scene).unwrap();
    // World E: normalised · side².
    let side = f.scene.simulation.sim_box.side;
    let e = back.youngs_world();
    assert!((e[5] / (10f64.powf(f.log10[5]) * side * side) - 1.0).abs() < 1e-12);
    // Without standard errors the tensor is absent and reads back as None.
    let bare = FittedDrivers::new(&f.scene, &f.drivers, &f.log10, &f.velocity, None).unwrap();
    bare.save(&path).unwrap();
    assert_eq!(FittedDrivers::load(&path).unwrap().youngs_log10_std, None);
    // Another E and error bar on the same drivers (the material's answer
    // that fitted.ply carries), checked like the constructor's.
    let n = f.log10.len();
    let answer = bare
        .clone()
        .with_youngs(vec![3.5; n], Some(vec![0.05; n]))
        .unwrap();
    assert_eq!(
        (
            answer.log10_youngs[0],
            answer.youngs_log10_std.as_ref().unwrap()[0]
        ),
        (3.5, 0.05)
    );
    assert_eq!(answer.velocity, bare.velocity);
    for (log10, std) in [
        (vec![3.5; n - 1], None),
        (vec![3.5; n], Some(vec![0.05; n + 1])),
        (vec![f64::NAN; n], None),
        (vec![3.5; n], Some(vec![f64::INFINITY; n])),
    ] {
        let refused = bare.clone().with_youngs(log10, std);
        assert!(
            matches!(refused, Err(DriversFileError::Inputs(_))),
            "{refused:?}"
        );
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The new file is a new inode renamed over the old name: a reader that
/// opened the old file before the save still reads the old bytes whole
/// (a plain write truncates and rewrites that same file under it), and a
/// reader that opens the name afterwards reads the complete new file.
#[test]
fn drivers_file_is_written_atomically() {
    use std::io::Read;
    let f = fitted();
    let path = f.path("drivers.safetensors");
    let old = vec![0xAB; 1 << 16];
    std::fs::write(&path, &old).unwrap();
    let mut reader = std::fs::File::open(&path).unwrap();
    f.file().save(&path).unwrap();
    let mut seen = Vec::new();
    reader.read_to_end(&mut seen).unwrap();
    assert!(seen == old, "the open old file changed under its reader");
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len < 1 << 16, "{len} bytes: the old file was not replaced");
    assert_eq!(FittedDrivers::load(&path).unwrap(), f.file());
    assert_eq!(
        names_in(f.dir.path()),
        ["drivers.safetensors", "scene.toml", "splats.ply"]
    );
}

/// A write that fails at its last step (the rename: the destination is a
/// non-empty directory) reports the error, leaves the destination as it
/// was and removes its temporary file.
#[test]
fn a_failed_atomic_write_leaves_the_destination_and_no_temporary_file() {
    use physfit::io::atomic_write::write_atomic;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("kept"), b"old").unwrap();
    write_atomic(&target, b"new bytes").unwrap_err();
    assert!(target.is_dir());
    assert_eq!(std::fs::read(target.join("kept")).unwrap(), b"old");
    assert_eq!(names_in(dir.path()), ["out"], "a temporary file was left");
    // And one that succeeds leaves only its destination.
    let file = dir.path().join("file.bin");
    write_atomic(&file, b"new bytes").unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"new bytes");
    assert_eq!(names_in(dir.path()), ["file.bin", "out"]);
}

#[test]
fn a_changed_ply_is_refused_naming_both_files() {
    let f = fitted();
    let file = f.file();
    let ply = f.path("splats.ply");
    let mut bytes = std::fs::read(&ply).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&ply, bytes).unwrap();
    let e = file.check_against(&f.scene).unwrap_err();
    assert!(matches!(e, DriversFileError::PlyChanged { .. }), "{e}");
    let m = e.to_string();
    eprintln!("MSG {m}");
    assert!(
        m.contains("splats.ply") && m.contains("scene.toml") && m.contains("gaussians.path"),
        "{m}"
    );
}

/// The scene of `f` with `extra` (`[table]\nkey = value`) added, beside
/// the first: into the table when the scene has it, else appended.
fn variant(f: &Fitted, extra: &str) -> Scene {
    let text = std::fs::read_to_string(f.path("scene.toml")).unwrap();
    let (header, body) = extra.split_once('\n').unwrap();
    let text = match text.contains(&format!("{header}\n")) {
        true => text.replacen(&format!("{header}\n"), &format!("{extra}\n"), 1),
        false => format!("{text}\n{header}\n{body}\n"),
    };
    let path = f.path("variant.toml");
    std::fs::write(&path, text).unwrap();
    Scene::load(&path).unwrap()
}

#[test]
fn changed_settings_are_refused_naming_the_field() {
    let f = fitted();
    let file = f.file();
    for (extra, field) in [
        (
            "[simulation]\ngrid_res = 24",
            "`simulation.grid_res`: 32 in the fit, 24 now",
        ),
        ("[simulation]\nsubsteps = 400", "`simulation.substeps`"),
        (
            "[simulation]\nwalls = \"slip\"",
            "`simulation.walls`: sticky in the fit, slip now",
        ),
        (
            "[simulation]\nanchoring = \"nearest\"",
            "`simulation.anchoring`: splats in the fit, nearest now",
        ),
        (
            "[simulation]\ntransfer = \"flip\"",
            "`simulation.transfer`: apic in the fit, flip now",
        ),
        (
            "[reference]\nfps = 24.0",
            "`reference.fps`: 30 in the fit, 24 now",
        ),
        (
            "[material]\npoisson_ratio = 0.25",
            "`material.poisson_ratio`",
        ),
    ] {
        let scene = variant(&f, extra);
        let e = file.check_against(&scene).unwrap_err();
        assert!(
            matches!(e, DriversFileError::SettingsChanged { .. }),
            "{extra}: {e}"
        );
        let m = e.to_string();
        eprintln!("MSG {m}");
        assert!(
            m.contains(field) && m.contains("variant.toml"),
            "{extra}: {m}"
        );
    }
    // Other free splats: named as the regions.
    let text = std::fs::read_to_string(f.path("scene.toml")).unwrap();
    let path = f.path("variant.toml");
    std::fs::write(
        &path,
        text.replace("max = [1.1, 1.1, 0.1]", "max = [1.1, 1.1, 0.3]"),
    )
    .unwrap();
    let m = file
        .check_against(&Scene::load(&path).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("`regions.simulated` / `regions.anchored`"),
        "{m}"
    );
    // A change a re-simulation does not depend on is accepted.
    let scene = variant(&f, "[fit]\ntv_weight = 0.5");
    file.check_against(&scene).unwrap();
}

/// Rewrites the archive at `path` with `edit` applied to its tensors
/// (name, dtype, shape, bytes) and metadata.
fn rewrite(
    path: &Path,
    edit: impl FnOnce(
        &mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>,
        &mut std::collections::HashMap<String, String>,
    ),
) {
    let bytes = std::fs::read(path).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let mut meta = meta.metadata().clone().unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    edit(&mut tensors, &mut meta);
    let views: Vec<_> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    std::fs::write(path, safetensors::serialize(views, Some(meta)).unwrap()).unwrap();
}

#[test]
fn damaged_drivers_files_are_refused_naming_the_tensor_or_field() {
    let f = fitted();
    let path = f.path("drivers.safetensors");
    let message = |path: &Path| FittedDrivers::load(path).unwrap_err().to_string();
    // Truncated: the last tensor (U8 tensors come last) is cut off.
    f.file().save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let m = message(&path);
    eprintln!("MSG {m}");
    assert!(
        m.contains("drivers.safetensors") && m.contains("truncated") && m.contains("`fill_only`"),
        "{m}"
    );
    // Cut inside the header.
    std::fs::write(&path, &bytes[..40]).unwrap();
    let m = message(&path);
    eprintln!("MSG {m}");
    assert!(m.contains("truncated"), "{m}");

    type Edit = fn(
        &mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>,
        &mut std::collections::HashMap<String, String>,
    );
    let cases: [(Edit, &[&str]); 6] = [
        (
            |t, _| {
                let e = t.iter_mut().find(|e| e.0 == "log10_youngs").unwrap();
                let f64s: Vec<f64> =
                    e.3.chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                e.1 = Dtype::F32;
                e.3 = f64s
                    .iter()
                    .flat_map(|v| (*v as f32).to_le_bytes())
                    .collect();
            },
            &["`log10_youngs`", "F32", "F64"],
        ),
        (
            |t, _| {
                let e = t.iter_mut().find(|e| e.0 == "neighbours").unwrap();
                e.2 = vec![e.2[0] * 2, e.2[1] / 2];
            },
            &["`neighbours`", "shape"],
        ),
        (|t, _| t.retain(|e| e.0 != "graph"), &["`graph`", "missing"]),
        (
            |t, _| {
                let e = t.iter_mut().find(|e| e.0 == "graph").unwrap();
                e.3[0..4].copy_from_slice(&99u32.to_le_bytes());
            },
            &["`graph`", "driver 99", "12 drivers"],
        ),
        (
            |_, m| {
                m.remove("simulation.grid_res");
            },
            &["`simulation.grid_res` is missing"],
        ),
        (
            |_, m| {
                m.insert("format_version".into(), "7".into());
            },
            &["`format_version`", "\"7\""],
        ),
    ];
    for (edit, needles) in cases {
        f.file().save(&path).unwrap();
        rewrite(&path, edit);
        let m = message(&path);
        eprintln!("MSG {m}");
        assert!(m.contains("drivers.safetensors"), "{m}");
        for needle in needles {
            assert!(m.contains(needle), "lacks {needle}: {m}");
        }
    }
}

/// A drivers file written before `simulation.anchoring` existed holds no
/// such field: it reads as the one rule there was (`stencil`), so a scene
/// on today's default (`splats`) is refused naming the field and both
/// rules, and one that sets `stencil` matches; an unknown rule is refused
/// naming the field.
#[test]
fn a_drivers_file_without_the_anchoring_field_reads_as_the_stencil_rule() {
    let f = fitted();
    let path = f.path("drivers.safetensors");
    f.file().save(&path).unwrap();
    rewrite(&path, |_, m| {
        assert_eq!(m.remove("simulation.anchoring").as_deref(), Some("splats"));
    });
    let file = FittedDrivers::load(&path).unwrap();
    assert_eq!(file.mpm_config().anchoring, AnchorRule::Stencil);
    let m = file.check_against(&f.scene).unwrap_err().to_string();
    assert!(
        m.contains("`simulation.anchoring`: stencil in the fit, splats now"),
        "{m}"
    );
    file.check_against(&variant(&f, "[simulation]\nanchoring = \"stencil\""))
        .unwrap();
    rewrite(&path, |_, m| {
        m.insert("simulation.anchoring".into(), "everywhere".into());
    });
    let m = FittedDrivers::load(&path).unwrap_err().to_string();
    assert!(
        m.contains("`simulation.anchoring`") && m.contains("\"everywhere\""),
        "{m}"
    );
}

/// A drivers file written before `simulation.transfer` existed holds no
/// such field: it reads as APIC, the one transfer there was, and matches
/// its scene; a FLIP record reads back with its PIC time (`inf`: pure
/// FLIP) and is refused against an APIC scene, naming the field.
#[test]
fn a_drivers_file_records_its_transfer_and_without_one_reads_as_apic() {
    let f = fitted();
    let path = f.path("drivers.safetensors");
    f.file().save(&path).unwrap();
    rewrite(&path, |_, m| {
        assert_eq!(m.remove("simulation.transfer").as_deref(), Some("apic"));
        assert_eq!(m.remove("simulation.pic_time").as_deref(), Some("none"));
    });
    let file = FittedDrivers::load(&path).unwrap();
    assert_eq!(file.mpm_config().transfer, Transfer::Apic);
    file.check_against(&f.scene).unwrap();
    rewrite(&path, |_, m| {
        m.insert("simulation.transfer".into(), "flip".into());
        m.insert("simulation.pic_time".into(), "inf".into());
    });
    let file = FittedDrivers::load(&path).unwrap();
    assert_eq!(
        file.mpm_config().transfer,
        Transfer::Flip {
            pic_time: f64::INFINITY
        }
    );
    let m = file.check_against(&f.scene).unwrap_err().to_string();
    assert!(
        m.contains("`simulation.transfer`: flip in the fit, apic now"),
        "{m}"
    );
}

#[test]
fn fitted_ply_reloads_with_every_splat_and_its_material() {
    let f = fitted();
    let material = SplatMaterial::new(
        &f.scene,
        &f.drivers,
        &f.log10,
        &f.velocity,
        Some(&f.log10_std),
    )
    .unwrap();
    let path = f.path("fitted.ply");
    write_fitted_ply(&path, &f.scene, &material).unwrap();
    let back = load_gaussians(&path).unwrap();
    assert_eq!(back.gaussians.means, f.scene.gaussians().means);
    assert_eq!(back.gaussians.sh, f.scene.gaussians().sh);
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()[..400]).into_owned();
    assert!(
        text.contains(
            "comment physfit fitted.ply: youngs_modulus is Young's modulus in world units"
        ),
        "{text}"
    );
    let vertex = back.ply.vertex().unwrap();
    let column = |name: &str| {
        vertex
            .column_f32(name)
            .unwrap_or_else(|| panic!("no `{name}`"))
    };
    let (e, sim, anch) = (
        column("youngs_modulus"),
        column("simulated"),
        column("anchored"),
    );
    let v = [column("vx"), column("vy"), column("vz")];
    let std = column("youngs_log10_std");
    let side = f.scene.simulation.sim_box.side;
    let close = |a: f32, b: f64| ((a as f64) - b).abs() <= 1e-6 * b.abs().max(1e-30);

    // A follower: the means over its k drivers (log10 E, then to world units).
    let g = f.drivers.followers.len() / 2;
    let s = f.drivers.followers[g] as usize;
    let near = f.drivers.neighbours_of(g);
    assert_eq!(near.len(), f.scene.drivers.k);
    let mean = |x: &dyn Fn(usize) -> f64| {
        near.iter().map(|&d| x(d as usize)).sum::<f64>() / near.len() as f64
    };
    let log10 = mean(&|d| f.log10[d]);
    assert!(
        close(e[s], 10f64.powf(log10) * side * side),
        "{} vs {}",
        e[s],
        youngs_world(10f64.powf(log10), side)
    );
    for (a, va) in v.iter().enumerate() {
        assert!(close(va[s], mean(&|d| f.velocity[3 * d + a])), "v{a}");
    }
    assert!(close(std[s], mean(&|d| f.log10_std[d])));
    assert_eq!((sim[s], anch[s]), (1.0, 0.0));
    let varied = near
        .iter()
        .any(|&d| f.log10[d as usize] != f.log10[near[0] as usize]);
    assert!(varied, "the test wants a follower whose drivers differ");

    // An anchored splat (z = 0): its cluster driver's E and standard error, at rest.
    let simulated = f.scene.simulated_indices();
    let j = simulated
        .iter()
        .position(|&i| f.scene.anchored[i as usize])
        .unwrap();
    let s = simulated[j] as usize;
    let d = f.drivers.cluster[j] as usize;
    assert!(close(e[s], 10f64.powf(f.log10[d]) * side * side));
    assert!(close(std[s], f.log10_std[d]));
    assert_eq!(
        (sim[s], anch[s], v[0][s], v[1][s], v[2][s]),
        (1.0, 1.0, 0.0, 0.0, 0.0)
    );

    // A static splat (z = 1): zeros.
    let s = (0..f.scene.simulated.len())
        .find(|&i| !f.scene.simulated[i])
        .unwrap();
    assert_eq!(f.scene.gaussians().means[s][2], 1.0);
    assert_eq!(
        (e[s], sim[s], anch[s], v[0][s], std[s]),
        (0.0, 0.0, 0.0, 0.0, 0.0)
    );
    let counts = |c: &[f32]| c.iter().filter(|x| **x == 1.0).count();
    assert_eq!((counts(&sim), counts(&anch)), (100, 25));

    // A mismatched fit is refused.
    let short = SplatMaterial::new(&f.scene, &f.drivers, &f.log10[1..], &f.velocity, None);
    assert!(short
        .unwrap_err()
        .to_string()
        .contains("11 log10 E values for 12 drivers"));
}

#[test]
fn the_drivers_file_gives_every_splat_the_material_the_fit_gave_it() {
    // `render --color-by stiffness` derives the splats' material from the
    // drivers file, the fit from its drivers: one derivation, equal values,
    // anchored splats included (their cluster driver's E, never NaN).
    let f = fitted();
    let path = f.path("drivers.safetensors");
    f.file().save(&path).unwrap();
    let file = FittedDrivers::load(&path).unwrap();
    let from_fit = SplatMaterial::new(
        &f.scene,
        &f.drivers,
        &f.log10,
        &f.velocity,
        Some(&f.log10_std),
    )
    .unwrap();
    let from_file = SplatMaterial::from_fitted(&f.scene, &file).unwrap();
    assert_eq!(from_fit, from_file);
    let side = f.drivers.sim_box.side;
    let simulated = f.scene.simulated_indices();
    let mut anchored = 0;
    for (j, &s) in simulated.iter().enumerate() {
        let s = s as usize;
        if f.scene.anchored[s] {
            anchored += 1;
            let d = f.drivers.cluster[j] as usize;
            let expected = youngs_world(10f64.powf(f.log10[d]), side) as f32;
            assert_eq!(from_file.youngs_modulus[s], expected, "anchored splat {s}");
            assert_eq!(from_file.anchored[s], 1.0);
        }
    }
    assert!(anchored > 0, "the scene has anchored splats");
    assert_eq!(file.anchored_splats.len(), anchored);
}

#[test]
fn stiffness_colouring_spans_the_scene_range_in_world_units() {
    use physfit::output::stiffness::{stiffness_range_world, StiffnessColouring};
    use physfit::report::stiffness_colours;
    let f = fitted();
    let material = SplatMaterial::new(&f.scene, &f.drivers, &f.log10, &f.velocity, None).unwrap();
    let side = f.drivers.sim_box.side;
    let range = stiffness_range_world(f.scene.material.log10_youngs_range, side);
    // E_world = E · side², so the range shifts by log10(side²).
    for (w, n) in range.iter().zip(f.scene.material.log10_youngs_range) {
        assert!((w - n - 2.0 * side.log10()).abs() < 1e-12, "{w} vs {n}");
    }
    let colouring = StiffnessColouring::new(&material, range);
    let recoloured = colouring.recoloured(f.scene.gaussians()).unwrap();
    let expected = stiffness_colours(&colouring.values, range[0], range[1]).unwrap();
    let grey = stiffness_colours(&[f64::NAN], range[0], range[1]).unwrap()[0];
    let simulated = f.scene.simulated_indices();
    for (s, (&value, &colour)) in colouring.values.iter().zip(&expected).enumerate() {
        let is_simulated = simulated.contains(&(s as u32));
        assert_eq!(value.is_finite(), is_simulated, "splat {s}");
        if is_simulated {
            let e = f64::from(material.youngs_modulus[s]).log10();
            assert!((value - e).abs() < 1e-12);
        } else {
            assert_eq!(colour, grey, "static splat {s} is grey");
        }
    }
    // The colours are the map's at each splat's value, whatever the fitted
    // extremes: a second fit with all E one decade higher moves them.
    let higher: Vec<f64> = f.log10.iter().map(|l| l + 1.0).collect();
    let stiffer = SplatMaterial::new(&f.scene, &f.drivers, &higher, &f.velocity, None).unwrap();
    let other = StiffnessColouring::new(&stiffer, range)
        .recoloured(f.scene.gaussians())
        .unwrap();
    let moved = (0..f.scene.gaussians().len())
        .filter(|&s| simulated.contains(&(s as u32)) && other.sh_of(s)[0] != recoloured.sh_of(s)[0])
        .count();
    assert!(moved > 0, "colours follow E, not the fitted min–max");
}

/// Values no fit writes are refused at load, naming the file and the
/// tensor: an E outside the range the fit ran with (not later as an
/// impossible substep count), a rest position outside the box (not later
/// as a particle that left it, with no file named).
#[test]
fn drivers_files_with_values_no_fit_writes_are_refused_naming_the_file() {
    let f = fitted();
    let path = f.path("drivers.safetensors");
    let mut file = f.file();
    file.log10_youngs[0] = 300.0;
    file.save(&path).unwrap();
    let text = FittedDrivers::load(&path).unwrap_err().to_string();
    assert!(
        text.contains("drivers.safetensors")
            && text.contains("`log10_youngs`")
            && text.contains("outside the range [3, 5]")
            && !text.contains("substeps"),
        "{text}"
    );
    let mut file = f.file();
    file.rest[0] = [1e30; 3];
    file.save(&path).unwrap();
    let text = FittedDrivers::load(&path).unwrap_err().to_string();
    assert!(
        text.contains("drivers.safetensors")
            && text.contains("`rest`")
            && text.contains("outside the simulation box"),
        "{text}"
    );
}

/// A `.ply` without a usable splat is refused naming `gaussians.path` and
/// the file, not later as "no splat lies in the simulated region".
#[test]
fn a_ply_without_splats_is_refused_naming_the_file() {
    let (_dir, scene) = scene_with(&[], "");
    let text = scene.expect_err("refused").to_string();
    assert!(
        text.contains("`gaussians.path`")
            && text.contains("splats.ply holds no usable splat")
            && !text.contains("simulated region"),
        "{text}"
    );
}

/// A fitted Poisson's ratio per driver: `drivers.safetensors` round-trips
/// it bit for bit (a file without it reads back ν = the material's
/// everywhere), a ν outside [0, 0.5) or of the wrong length is refused, and
/// `fitted.ply` carries it per splat (a follower: the mean of its drivers';
/// an anchored splat: its cluster driver's; a static splat: 0).
#[test]
fn poissons_ratio_round_trips_through_the_drivers_file_and_the_fitted_ply() {
    let f = fitted();
    let n = f.drivers.len();
    let nu: Vec<f64> = (0..n).map(|d| 0.1 + d as f64 / 41.0 + 1e-14).collect();
    let bare = f.file();
    assert_eq!(bare.poisson(), vec![f.scene.material.poisson_ratio; n]);
    let path = f.path("drivers.safetensors");
    bare.save(&path).unwrap();
    let old = FittedDrivers::load(&path).unwrap();
    assert_eq!(old.poisson_ratio, None);
    assert_eq!(old.poisson(), vec![f.scene.material.poisson_ratio; n]);

    let file = f.file().with_poisson(nu.clone()).unwrap();
    file.save(&path).unwrap();
    let back = FittedDrivers::load(&path).unwrap();
    assert_eq!(back, file);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back.poisson()), bits(&nu));
    assert!(f.file().with_poisson(vec![0.2; n - 1]).is_err());
    let mut high = nu.clone();
    high[3] = 0.5;
    let e = f.file().with_poisson(high).unwrap_err().to_string();
    assert!(e.contains("0.5"), "{e}");

    let material = SplatMaterial::from_fitted(&f.scene, &back).unwrap();
    let ply = f.path("fitted.ply");
    write_fitted_ply(&ply, &f.scene, &material).unwrap();
    let loaded = load_gaussians(&ply).unwrap();
    let column = loaded
        .ply
        .vertex()
        .unwrap()
        .column_f32("poisson_ratio")
        .expect("a poisson_ratio property");
    let g = f.drivers.followers.len() / 2;
    let s = f.drivers.followers[g] as usize;
    let near = f.drivers.neighbours_of(g);
    let mean = near.iter().map(|&d| nu[d as usize]).sum::<f64>() / near.len() as f64;
    assert!(
        (f64::from(column[s]) - mean).abs() < 1e-6,
        "{} vs {mean}",
        column[s]
    );
    let anchored = back.anchored_splats[0];
    assert_eq!(
        column[anchored[0] as usize],
        nu[anchored[1] as usize] as f32
    );
    let still = (0..f.scene.gaussians().len())
        .find(|&i| !f.scene.simulated[i])
        .expect("a static splat");
    assert_eq!(column[still], 0.0);
}

/// `render --params` simulates with the drivers file's ν
/// (`ForwardSetup::from_fitted`): a file without ν keeps the scene's, one
/// with ν carries it to the simulator, and the time-step bound is checked
/// at its largest value (a ν the scene's substeps cannot hold is refused
/// before anything runs).
#[test]
fn a_forward_run_from_a_drivers_file_uses_its_poissons_ratio_and_checks_its_bound() {
    use physfit::forward::{ForwardError, ForwardSetup};
    use physfit::interact::Interactions;
    use physfit::mpm::MpmError;
    let f = fitted();
    let n = f.drivers.len();
    let none = Interactions::default();
    let plain = ForwardSetup::from_fitted(&f.scene, &f.file(), "d", &none).unwrap();
    assert_eq!(plain.poisson, None);
    assert_eq!(plain.poisson_max(), f.scene.material.poisson_ratio);
    let nu: Vec<f64> = (0..n).map(|d| 0.15 + 0.01 * d as f64).collect();
    let file = f.file().with_poisson(nu.clone()).unwrap();
    let setup = ForwardSetup::from_fitted(&f.scene, &file, "d", &none).unwrap();
    assert_eq!(setup.poisson.as_deref(), Some(nu.as_slice()));
    let stiff = f.file().with_poisson(vec![0.49; n]).unwrap();
    let e = ForwardSetup::from_fitted(&f.scene, &stiff, "d", &none).unwrap_err();
    assert!(
        matches!(
            e,
            ForwardError::Mpm(MpmError::TooFewSubsteps { poisson, .. }) if poisson == 0.49
        ),
        "{e}"
    );
}

/// The initial affine velocity `C0` (a rigid field's `[ω]×`) round-trips
/// through `drivers.safetensors` bit for bit, a file without it loads with
/// none, and `render --params` (`ForwardSetup::from_fitted`) starts APIC's
/// `C` at it on the free drivers, at 0 on the held ones and everywhere when
/// the run starts from rest; wrong counts and non-finite values are
/// refused.
#[test]
fn the_initial_affine_velocity_round_trips_and_starts_a_forward_run() {
    use physfit::forward::ForwardSetup;
    use physfit::interact::Interactions;
    let f = fitted();
    let n = f.drivers.len();
    let w = [0.3, -1.7, 2.0 / 3.0];
    let spin: [f64; 9] = [0.0, -w[2], w[1], w[2], 0.0, -w[0], -w[1], w[0], 0.0];
    let gradient: Vec<f64> = (0..n)
        .flat_map(|d| match f.drivers.anchored[d] {
            true => [0.0; 9],
            false => spin,
        })
        .collect();
    let path = f.path("drivers.safetensors");
    f.file().save(&path).unwrap();
    assert_eq!(FittedDrivers::load(&path).unwrap().velocity_gradient, None);
    let file = f.file().with_velocity_gradient(&gradient).unwrap();
    file.save(&path).unwrap();
    let back = FittedDrivers::load(&path).unwrap();
    assert_eq!(back, file);
    let stored = back.velocity_gradient.as_ref().unwrap();
    let flat: Vec<u64> = stored
        .iter()
        .flatten()
        .flatten()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(
        flat,
        gradient.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert!(f.file().with_velocity_gradient(&gradient[9..]).is_err());
    let mut bad = gradient.clone();
    bad[4] = f64::NAN;
    assert!(f.file().with_velocity_gradient(&bad).is_err());

    let setup = ForwardSetup::from_fitted(&f.scene, &back, "d", &Interactions::default()).unwrap();
    for d in 0..n {
        let want: [[f32; 3]; 3] = match f.drivers.anchored[d] {
            true => [[0.0; 3]; 3],
            false => std::array::from_fn(|a| std::array::from_fn(|b| spin[3 * a + b] as f32)),
        };
        assert_eq!(setup.initial.c[d], want, "driver {d}");
    }
    let rest =
        Interactions::parse("[[interactions]]\nkind = \"start\"\nfrom = \"rest\"\n", "i").unwrap();
    let from_rest = ForwardSetup::from_fitted(&f.scene, &back, "d", &rest).unwrap();
    assert!(from_rest.initial.c.iter().all(|c| *c == [[0.0; 3]; 3]));
    let plain =
        ForwardSetup::from_fitted(&f.scene, &f.file(), "d", &Interactions::default()).unwrap();
    assert!(plain.initial.c.iter().all(|c| *c == [[0.0; 3]; 3]));
}
