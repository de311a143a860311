//! The f64 twin's colliders (src/reference/mpm/collider.rs): the contact
//! rules do what src/mpm_rules/collider.rs says, their reverse mode matches
//! central differences in every branch, and the twin's rollout gradients
//! through a drop onto a friction plane and a slip box (∂L/∂E, ∂L/∂v0,
//! ∂L/∂μ) match central differences of the twin itself.

use physfit::mpm::{Collider, ColliderShape, ContactRule};
use physfit::mpm_rules::config::{MpmConfig, WallMode};
use physfit::reference::mpm::collider::{contact, contact_adjoint, contains, outward_normal};
use physfit::reference::mpm::mat3::Vec3;
use physfit::reference::mpm::{
    frame_states, frames_gradient, GradientFlow, MpmSetup64, MpmState64,
};

fn plane(normal: Vec3, contact: ContactRule) -> Collider {
    let n = normal.iter().map(|c| c * c).sum::<f64>().sqrt();
    Collider {
        shape: ColliderShape::Plane {
            point: [0.5, 0.3, 0.5],
            normal: normal.map(|c| c / n),
        },
        contact,
    }
}

fn dot(a: &Vec3, b: &Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[test]
fn contact_rules_do_what_the_config_says() {
    let ground = |rule| plane([0.0, 1.0, 0.0], rule);
    let n = [0.0, 1.0, 0.0];
    // Inside or on: below the plane or on it.
    assert!(contains(&ground(ContactRule::Slip), &[0.1, 0.3, 0.9]));
    assert!(!contains(&ground(ContactRule::Slip), &[0.1, 0.31, 0.9]));
    let falling = [0.4, -1.0, 0.3];
    assert_eq!(
        contact(&ground(ContactRule::Sticky), &n, &falling),
        [0.0; 3]
    );
    assert_eq!(
        contact(&ground(ContactRule::Slip), &n, &falling),
        [0.4, 0.0, 0.3]
    );
    // Leaving the collider: untouched by slip and friction.
    let rising = [0.4, 1.0, 0.3];
    assert_eq!(contact(&ground(ContactRule::Slip), &n, &rising), rising);
    assert_eq!(
        contact(&ground(ContactRule::Friction(0.2)), &n, &rising),
        rising
    );
    // Friction: |v_t| = 0.5 shortened by μ|v_n| = 0.2.
    let v = contact(&ground(ContactRule::Friction(0.2)), &n, &falling);
    assert!((v[0] - 0.4 * 0.3 / 0.5).abs() < 1e-15 && v[1] == 0.0);
    assert!((v[2] - 0.3 * 0.3 / 0.5).abs() < 1e-15);
    // μ|v_n| ≥ |v_t|: stuck.
    assert_eq!(
        contact(&ground(ContactRule::Friction(0.6)), &n, &falling),
        [0.0; 3]
    );
    // A box: its nearest face's normal.
    let block = Collider {
        shape: ColliderShape::Box {
            min: [0.2, 0.2, 0.2],
            max: [0.6, 0.5, 0.8],
        },
        contact: ContactRule::Slip,
    };
    assert!(contains(&block, &[0.2, 0.5, 0.4]) && !contains(&block, &[0.19, 0.4, 0.4]));
    assert_eq!(outward_normal(&block, &[0.25, 0.4, 0.5]), [-1.0, 0.0, 0.0]);
    assert_eq!(outward_normal(&block, &[0.4, 0.48, 0.5]), [0.0, 1.0, 0.0]);
    assert_eq!(outward_normal(&block, &[0.4, 0.35, 0.21]), [0.0, 0.0, -1.0]);
}

/// The reverse mode of each rule against central differences of the rule,
/// in every branch (away from its kinks), for a tilted plane.
#[test]
fn contact_adjoints_match_finite_differences() {
    let normal = [0.3, 1.0, -0.2];
    let cases = [
        ("sticky", ContactRule::Sticky, [0.4, -1.0, 0.3]),
        ("slip, into", ContactRule::Slip, [0.4, -1.0, 0.3]),
        ("slip, out", ContactRule::Slip, [0.4, 1.0, 0.3]),
        (
            "friction, sliding",
            ContactRule::Friction(0.3),
            [0.7, -1.0, 0.5],
        ),
        ("friction, out", ContactRule::Friction(0.3), [0.7, 1.0, 0.5]),
        (
            "friction, stuck",
            ContactRule::Friction(2.0),
            [0.4, -1.0, 0.3],
        ),
    ];
    let g = [0.8, -0.3, 0.55];
    let h = 1e-6;
    for (name, rule, v) in cases {
        let c = plane(normal, rule);
        let n = outward_normal(&c, &[0.5, 0.0, 0.5]);
        let (back, d_mu) = contact_adjoint(&c, &n, &v, &g);
        for a in 0..3 {
            let mut plus = v;
            let mut minus = v;
            plus[a] += h;
            minus[a] -= h;
            let fd =
                (dot(&g, &contact(&c, &n, &plus)) - dot(&g, &contact(&c, &n, &minus))) / (2.0 * h);
            assert!(
                (fd - back[a]).abs() <= 1e-8,
                "{name}: ∂/∂v[{a}] adjoint {} FD {fd}",
                back[a]
            );
        }
        let fd_mu = match rule {
            ContactRule::Friction(mu) => {
                let at = |m: f64| {
                    dot(
                        &g,
                        &contact(&plane(normal, ContactRule::Friction(m)), &n, &v),
                    )
                };
                (at(mu + h) - at(mu - h)) / (2.0 * h)
            }
            _ => 0.0,
        };
        assert!(
            (fd_mu - d_mu).abs() <= 1e-8,
            "{name}: ∂/∂μ adjoint {d_mu} FD {fd_mu}"
        );
        println!("{name}: ∂L/∂v {back:?}, ∂L/∂μ {d_mu:.6}");
    }
}

/// A 4³ block (spacing dx/2) falling onto a friction plane under gravity,
/// sliding along x, with a slip box beside it that its side reaches; 16³
/// grid, 2 frames × 20 substeps.
fn drop_scene(mu: f64) -> (MpmSetup64, MpmState64, Vec<f64>) {
    let grid_res = 16;
    let dx = 1.0 / grid_res as f64;
    let ground = 0.3;
    let config = MpmConfig {
        grid_res,
        fps: 30.0,
        substeps_per_frame: 20,
        gravity: [0.0, -4.0, 0.0],
        damping: 0.0,
        density: 1000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: vec![
            Collider {
                shape: ColliderShape::Plane {
                    point: [0.0, ground, 0.0],
                    normal: [0.0, 1.0, 0.0],
                },
                contact: ContactRule::Friction(mu),
            },
            Collider {
                shape: ColliderShape::Box {
                    min: [0.2, 0.0, 0.0],
                    max: [0.4 - 0.3 * dx, 1.0, 1.0],
                },
                contact: ContactRule::Slip,
            },
        ],
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
    };
    let h = dx / 2.0;
    let mut x = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            for k in 0..4 {
                let jitter = ((i * 7 + j * 13 + k * 5) % 11) as f64 / 11.0 * 0.2 * h;
                x.push([
                    0.42 + (i as f64 + 0.5) * h + jitter,
                    ground + 0.6 * dx + (j as f64 + 0.5) * h + 0.5 * jitter,
                    0.5 + (k as f64 - 1.5) * h - jitter,
                ]);
            }
        }
    }
    let n = x.len();
    let mut state = MpmState64::at_rest(x);
    for v in &mut state.v {
        *v = [-0.5, -1.2, 0.1];
    }
    let youngs = (0..n)
        .map(|p| 3e4 * (1.0 + 0.3 * ((p % 7) as f64 / 7.0)))
        .collect();
    let setup = MpmSetup64 {
        config,
        particle_volume: h * h * h,
        anchored: vec![false; n],
        held_points: Vec::new(),
        poisson: None,
    };
    (setup, state, youngs)
}

fn weights(n: usize, seed: u64) -> MpmState64 {
    let w = random_weights(n * 24, seed);
    let mut s = MpmState64::zeros(n);
    for p in 0..n {
        for a in 0..3 {
            s.x[p][a] = w[p * 24 + a];
            s.v[p][a] = w[p * 24 + 3 + a];
            for b in 0..3 {
                s.c[p][a][b] = w[p * 24 + 6 + 3 * a + b];
                s.f[p][a][b] = w[p * 24 + 15 + 3 * a + b];
            }
        }
    }
    s
}

/// Deterministic weights in [−1, 1).
fn random_weights(count: usize, seed: u64) -> Vec<f64> {
    crate::common::pseudo_random(count, seed)
        .into_iter()
        .map(f64::from)
        .collect()
}

fn loss(
    setup: &MpmSetup64,
    start: &MpmState64,
    youngs: &[f64],
    seeds: &[(usize, MpmState64)],
) -> f64 {
    let frames = frame_states(setup, start, youngs, seeds.len());
    seeds.iter().map(|(k, w)| frames[*k].dot(w)).sum()
}

#[test]
fn twin_gradients_through_colliders_match_finite_differences() {
    let mu = 0.3;
    let (setup, start, youngs) = drop_scene(mu);
    let n = start.len();
    let seeds: Vec<(usize, MpmState64)> = (1..=2).map(|k| (k, weights(n, 50 + k as u64))).collect();
    let g = frames_gradient(&setup, &start, &youngs, 2, &seeds, GradientFlow::Full);
    // The drop touches both colliders: the block ends in contact with the
    // ground, and the friction gradient is not zero.
    let end = &frame_states(&setup, &start, &youngs, 2)[2];
    let lowest = end.x.iter().map(|x| x[1]).fold(f64::INFINITY, f64::min);
    assert!(
        lowest < 0.3 + 1.0 / 16.0,
        "the block did not land: lowest {lowest}"
    );
    assert!(
        g.d_friction[0] != 0.0 && g.d_friction[1] == 0.0,
        "{:?}",
        g.d_friction
    );
    let h = 1e-5;
    let central = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    let dir_e: Vec<f64> = random_weights(n, 3)
        .iter()
        .zip(&youngs)
        .map(|(r, e)| r * e)
        .collect();
    let fd_e = central(&|t| {
        let e: Vec<f64> = youngs.iter().zip(&dir_e).map(|(e, d)| e + t * d).collect();
        loss(&setup, &start, &e, &seeds)
    });
    let an_e: f64 = g.d_youngs.iter().zip(&dir_e).map(|(a, b)| a * b).sum();
    let dir_v = random_weights(3 * n, 4);
    let fd_v = central(&|t| {
        let mut s = start.clone();
        for p in 0..n {
            for a in 0..3 {
                s.v[p][a] += t * dir_v[3 * p + a];
            }
        }
        loss(&setup, &s, &youngs, &seeds)
    });
    let an_v: f64 = (0..n)
        .flat_map(|p| (0..3).map(move |a| (p, a)))
        .map(|(p, a)| g.d_initial.v[p][a] * dir_v[3 * p + a])
        .sum();
    let fd_mu = central(&|t| {
        let (s, _, _) = drop_scene(mu + t);
        loss(&s, &start, &youngs, &seeds)
    });
    for (what, an, fd) in [
        ("E", an_e, fd_e),
        ("v0", an_v, fd_v),
        ("μ", g.d_friction[0], fd_mu),
    ] {
        let rel = (an - fd).abs() / fd.abs();
        println!("twin drop: dL/d{what}: adjoint {an:.10e}, FD {fd:.10e}, rel {rel:.2e}");
        assert!(rel <= 1e-5, "dL/d{what}: adjoint {an} vs FD {fd}");
    }
}
