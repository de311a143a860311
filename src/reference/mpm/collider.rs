//! Colliders of the grid update in f64, and the reverse mode of their
//! contact rules (the rules are fixed in src/mpm_rules/collider.rs; the GPU's are
//! shaders/mpm/collider.wgsl).
//!
//! Reverse of one rule at a node inside the collider, normal `n`, velocity
//! `v` in and `v'` out, given `ḡ = ∂L/∂v'`: sticky passes nothing; where
//! `v_n = v·n ≥ 0` the rule is the identity; else, with `P = I − n nᵀ`,
//! slip gives `Pḡ`, and friction, sliding (`s = |v_t| > −μ v_n`, `t =
//! v_t/s`, `v' = v_t + μ v_n t`), gives
//! `Pḡ + μ n (t·ḡ) + (μ v_n/s)(Pḡ − t (t·ḡ))` and `∂L/∂μ = v_n (t·ḡ)`;
//! stuck (`v' = 0`), nothing. The kinks (`v_n = 0`, `s = −μ v_n`, a node
//! equidistant from two box faces) take the branch the forward took.

use super::mat3::Vec3;
use crate::mpm_rules::collider::{Collider, ColliderShape, ContactRule};

fn dot(a: &Vec3, b: &Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// True when the node at `x` is inside or on `c`.
pub fn contains(c: &Collider, x: &Vec3) -> bool {
    match c.shape {
        ColliderShape::Plane { point, normal } => {
            let d: Vec3 = std::array::from_fn(|a| x[a] - point[a]);
            dot(&d, &normal) <= 0.0
        }
        ColliderShape::Box { min, max } => (0..3).all(|a| min[a] <= x[a] && x[a] <= max[a]),
    }
}

/// Unit outward normal of `c` at a node inside or on it: the plane's, or
/// that of the box's nearest face (ties: the first of −x, +x, −y, +y, −z,
/// +z).
pub fn outward_normal(c: &Collider, x: &Vec3) -> Vec3 {
    match c.shape {
        ColliderShape::Plane { normal, .. } => normal,
        ColliderShape::Box { min, max } => {
            let mut best = (f64::INFINITY, [0.0; 3]);
            for a in 0..3 {
                for (depth, sign) in [(x[a] - min[a], -1.0), (max[a] - x[a], 1.0)] {
                    if depth < best.0 {
                        let mut n = [0.0; 3];
                        n[a] = sign;
                        best = (depth, n);
                    }
                }
            }
            best.1
        }
    }
}

/// The contact rule of `c` on velocity `v` at a node with outward normal `n`.
pub fn contact(c: &Collider, n: &Vec3, v: &Vec3) -> Vec3 {
    if c.contact == ContactRule::Sticky {
        return [0.0; 3];
    }
    let vn = dot(v, n);
    if vn >= 0.0 {
        return *v;
    }
    let vt: Vec3 = std::array::from_fn(|a| v[a] - vn * n[a]);
    let ContactRule::Friction(mu) = c.contact else {
        return vt;
    };
    let s = dot(&vt, &vt).sqrt();
    let slide = s + mu * vn;
    if slide <= 0.0 {
        return [0.0; 3];
    }
    vt.map(|c| c * slide / s)
}

/// Reverse of [`contact`] at the same `(n, v)`: `(∂L/∂v, ∂L/∂μ)` from
/// `g = ∂L/∂v'` (module doc).
pub fn contact_adjoint(c: &Collider, n: &Vec3, v: &Vec3, g: &Vec3) -> (Vec3, f64) {
    if c.contact == ContactRule::Sticky {
        return ([0.0; 3], 0.0);
    }
    let vn = dot(v, n);
    if vn >= 0.0 {
        return (*g, 0.0);
    }
    let gn = dot(g, n);
    let pg: Vec3 = std::array::from_fn(|a| g[a] - gn * n[a]);
    let ContactRule::Friction(mu) = c.contact else {
        return (pg, 0.0);
    };
    let vt: Vec3 = std::array::from_fn(|a| v[a] - vn * n[a]);
    let s = dot(&vt, &vt).sqrt();
    if s + mu * vn <= 0.0 {
        return ([0.0; 3], 0.0);
    }
    let t = vt.map(|c| c / s);
    let tg = dot(&t, g);
    let back =
        std::array::from_fn(|a| pg[a] + mu * tg * n[a] + (mu * vn / s) * (pg[a] - tg * t[a]));
    (back, vn * tg)
}

/// The velocity `v` of a node at `x` after the first `k` of `colliders`,
/// each acting where it holds the node.
pub fn after_colliders(colliders: &[Collider], x: &Vec3, v: &Vec3, k: usize) -> Vec3 {
    let mut v = *v;
    for c in &colliders[..k] {
        if contains(c, x) {
            v = contact(c, &outward_normal(c, x), &v);
        }
    }
    v
}

/// Reverse of [`after_colliders`] over all of `colliders` from the velocity
/// `v` before them: `∂L/∂v` from `g = ∂L/∂(velocity after them)`, adding
/// each collider's `∂L/∂μ` into `d_friction`.
pub fn after_colliders_adjoint(
    colliders: &[Collider],
    x: &Vec3,
    v: &Vec3,
    g: &Vec3,
    d_friction: &mut [f64],
) -> Vec3 {
    let mut g = *g;
    for k in (0..colliders.len()).rev() {
        let c = &colliders[k];
        if contains(c, x) {
            let before = after_colliders(colliders, x, v, k);
            let (back, d_mu) = contact_adjoint(c, &outward_normal(c, x), &before, &g);
            g = back;
            d_friction[k] += d_mu;
        }
    }
    g
}
