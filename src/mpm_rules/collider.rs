//! Colliders of the grid update (docs/design.md § MPM, Colliders): static
//! planes and boxes in the simulator's normalised units, each with a
//! contact rule, applied to every grid node inside or on them after
//! gravity and damping and before the box walls. Shared by the GPU
//! simulator (their records, shaders/mpm/collider.wgsl, same layout) and
//! the f64 twin (src/reference/mpm/collider.rs), so both apply the same
//! rules, which are fixed here:
//!
//! - a node at `x` is in a [`ColliderShape::Plane`] when
//!   `(x − point)·normal ≤ 0` (`normal` is the unit outward normal), in a
//!   [`ColliderShape::Box`] when `min ≤ x ≤ max` on every axis; the box's
//!   outward normal at a node is that of its nearest face (ties: the first
//!   of −x, +x, −y, +y, −z, +z);
//! - with `v_n = v·n` and `v_t = v − v_n n`: [`ContactRule::Sticky`] sets
//!   `v = 0`; [`ContactRule::Slip`] sets `v = v_t` when `v_n < 0`;
//!   [`ContactRule::Friction`] (Coulomb, μ ≥ 0) sets, when `v_n < 0`,
//!   `v = v_t·(1 + μ v_n/|v_t|)` if `|v_t| + μ v_n > 0`, else `v = 0`.
//!   A node moving out of the collider (`v_n ≥ 0`) keeps its velocity;
//! - colliders act in the order listed, each on the velocity the previous
//!   ones left.
//!
//! Colliders are static: node positions are fixed, so which nodes a
//! collider holds never changes and its rules are piecewise smooth in the
//! velocity alone. A moving collider would add its velocity (the rules on
//! `v − v_collider`) and its pose per substep to the record.

use bytemuck::{Pod, Zeroable};

/// Where a collider is, normalised units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColliderShape {
    /// The half-space behind a plane through `point` with unit outward
    /// `normal` (the ground, a wall, a table top).
    Plane {
        /// A point of the plane.
        point: [f64; 3],
        /// Unit normal pointing out of the collider.
        normal: [f64; 3],
    },
    /// The closed axis-aligned box `[min, max]`.
    Box {
        /// Lower corner.
        min: [f64; 3],
        /// Upper corner.
        max: [f64; 3],
    },
}

/// What a collider does to the velocity of a node inside it (module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContactRule {
    /// The velocity is zeroed.
    Sticky,
    /// The normal component is removed when it points into the collider.
    Slip,
    /// Coulomb friction with coefficient μ ≥ 0: the normal component is
    /// removed when it points into the collider, the tangential one
    /// shortened by μ·|v_n| or zeroed when shorter.
    Friction(f64),
}

/// A static collider: a shape and its contact rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collider {
    /// Where it is.
    pub shape: ColliderShape,
    /// What it does to the nodes inside it.
    pub contact: ContactRule,
}

impl Collider {
    /// The friction coefficient μ of a [`ContactRule::Friction`] collider.
    pub fn friction(&self) -> Option<f64> {
        match self.contact {
            ContactRule::Friction(mu) => Some(mu),
            _ => None,
        }
    }

    /// Why this collider cannot be simulated, if it cannot: non-finite
    /// values, a normal not of unit length, an empty box, a negative or
    /// non-finite μ.
    pub fn problem(&self) -> Option<String> {
        let finite = |v: &[f64; 3]| v.iter().all(|c| c.is_finite());
        match self.shape {
            ColliderShape::Plane { point, normal } => {
                if !finite(&point) || !finite(&normal) {
                    return Some(format!("plane {point:?}, {normal:?} is not finite"));
                }
                let length = normal.iter().map(|c| c * c).sum::<f64>().sqrt();
                if (length - 1.0).abs() > 1e-6 {
                    return Some(format!(
                        "plane normal {normal:?} has length {length}, not 1"
                    ));
                }
            }
            ColliderShape::Box { min, max } => {
                if !finite(&min) || !finite(&max) || (0..3).any(|a| min[a] >= max[a]) {
                    return Some(format!("box {min:?}..{max:?} is not finite and non-empty"));
                }
            }
        }
        match self.contact {
            ContactRule::Friction(mu) if !(mu.is_finite() && mu >= 0.0) => {
                Some(format!("friction coefficient {mu} must be finite and ≥ 0"))
            }
            _ => None,
        }
    }
}

/// `Collider` of shaders/mpm/collider.wgsl (48 bytes, 16-byte aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ColliderRecord {
    /// 0 = plane, 1 = box.
    pub kind: u32,
    /// 0 = sticky, 1 = slip, 2 = friction.
    pub contact: u32,
    /// μ of the friction rule (0 otherwise).
    pub friction: f32,
    /// Padding.
    pub _pad: u32,
    /// Plane: its point; box: its lower corner (xyz, w unused).
    pub a: [f32; 4],
    /// Plane: its unit outward normal; box: its upper corner.
    pub b: [f32; 4],
}

impl ColliderRecord {
    /// The record of `collider`.
    pub fn new(collider: &Collider) -> Self {
        let v4 = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0];
        let (kind, a, b) = match collider.shape {
            ColliderShape::Plane { point, normal } => (0, v4(point), v4(normal)),
            ColliderShape::Box { min, max } => (1, v4(min), v4(max)),
        };
        let (contact, friction) = match collider.contact {
            ContactRule::Sticky => (0, 0.0),
            ContactRule::Slip => (1, 0.0),
            ContactRule::Friction(mu) => (2, mu as f32),
        };
        Self {
            kind,
            contact,
            friction,
            _pad: 0,
            a,
            b,
        }
    }
}

/// The records of `colliders`, at least one: wgpu binds no empty buffer, so
/// a simulation without colliders binds one zeroed record that the kernels
/// never read (`collider_count = 0` in the uniforms).
pub fn collider_records(colliders: &[Collider]) -> Vec<ColliderRecord> {
    if colliders.is_empty() {
        return vec![ColliderRecord::zeroed()];
    }
    colliders.iter().map(ColliderRecord::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_48_bytes_and_never_empty() {
        assert_eq!(std::mem::size_of::<ColliderRecord>(), 48);
        assert_eq!(collider_records(&[]).len(), 1);
        let ground = Collider {
            shape: ColliderShape::Plane {
                point: [0.0, 0.25, 0.0],
                normal: [0.0, 1.0, 0.0],
            },
            contact: ContactRule::Friction(0.5),
        };
        let r = collider_records(&[ground]);
        assert_eq!((r[0].kind, r[0].contact, r[0].friction), (0, 2, 0.5));
        assert_eq!(r[0].a[1], 0.25);
        assert_eq!(ground.problem(), None);
    }

    #[test]
    fn bad_colliders_are_named() {
        let tilted = Collider {
            shape: ColliderShape::Plane {
                point: [0.0; 3],
                normal: [0.0, 2.0, 0.0],
            },
            contact: ContactRule::Slip,
        };
        assert!(tilted.problem().unwrap().contains("length 2"));
        let empty = Collider {
            shape: ColliderShape::Box {
                min: [0.5; 3],
                max: [0.5, 0.6, 0.6],
            },
            contact: ContactRule::Sticky,
        };
        assert!(empty.problem().is_some());
        let negative = Collider {
            shape: ColliderShape::Plane {
                point: [0.0; 3],
                normal: [0.0, 1.0, 0.0],
            },
            contact: ContactRule::Friction(-0.1),
        };
        assert!(negative.problem().unwrap().contains("friction"));
    }
}
