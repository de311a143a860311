//! `[[simulation.colliders]]` resolved (docs/scene.md § Colliders): each
//! entry's shape and contact rule checked and turned into a
//! [`Collider`] in world units, and the check that no simulated splat
//! starts inside one. [`to_normalised`] maps one into the simulator's
//! units (docs/design.md § Units and frames). An interactions file's
//! `[[colliders]]` are the same tables, read by the same code
//! ([`parse_colliders`], [`start_inside`]), so that both refuse the same
//! things in the same words.

use std::path::Path;

use super::config::ColliderConfig;
use super::error::SceneError;
use super::sim_box::SimBox;
use super::validate::Validator;
use crate::mpm_rules::{Collider, ColliderShape, ContactRule};

/// The scene's colliders: `simulation.colliders`.
const SCENE_COLLIDERS: &str = "simulation.colliders";

/// `simulation.colliders[i]`, the field prefix of entry `i`.
fn field(i: usize) -> String {
    format!("{SCENE_COLLIDERS}[{i}]")
}

/// Every `[[simulation.colliders]]` entry, in order (world units).
pub(crate) fn resolve_colliders(
    v: &Validator,
    configs: &[ColliderConfig],
) -> Result<Vec<Collider>, SceneError> {
    resolve_colliders_at(v, SCENE_COLLIDERS, configs)
}

/// Every entry of the list `list` (its field name: `simulation.colliders`,
/// or `colliders` in an interactions file), in order (world units).
fn resolve_colliders_at(
    v: &Validator,
    list: &str,
    configs: &[ColliderConfig],
) -> Result<Vec<Collider>, SceneError> {
    configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let f = format!("{list}[{i}]");
            Ok(Collider {
                shape: resolve_shape(v, &f, c)?,
                contact: resolve_contact(v, &f, c)?,
            })
        })
        .collect()
}

/// The collider tables `configs` of the file `origin` (an interactions
/// file), listed there as `list`: checked as `[[simulation.colliders]]`
/// are, with the same messages, naming `origin` and `list[i]`.
pub fn parse_colliders(
    origin: &Path,
    list: &str,
    configs: &[ColliderConfig],
) -> Result<Vec<Collider>, SceneError> {
    let v = Validator {
        path: origin,
        dir: origin.parent().unwrap_or(Path::new(".")),
    };
    resolve_colliders_at(&v, list, configs)
}

fn resolve_shape(v: &Validator, f: &str, c: &ColliderConfig) -> Result<ColliderShape, SceneError> {
    let unused = |name: &str, given: bool, kind: &str| {
        if given {
            Err(v.invalid(
                &format!("{f}.{name}"),
                format!("is not read for kind = \"{kind}\""),
                format!(
                    "remove `{name}`, or set the kind that uses it (docs/scene.md § Colliders)"
                ),
            ))
        } else {
            Ok(())
        }
    };
    let required = |name: &str, value: Option<[f64; 3]>, kind: &str, example: &str| {
        value.ok_or_else(|| {
            v.invalid(
                &format!("{f}.{name}"),
                format!("is missing: kind = \"{kind}\" needs it"),
                format!("add `{name} = {example}` (world units)"),
            )
        })
    };
    match c.kind.as_deref() {
        Some("plane") => {
            unused("min", c.min.is_some(), "plane")?;
            unused("max", c.max.is_some(), "plane")?;
            let point = required("point", c.point, "plane", "[x, y, z]")?;
            let normal = required("normal", c.normal, "plane", "[0, 1, 0]")?;
            let point = v.finite3(&format!("{f}.point"), point)?;
            let normal = v.finite3(&format!("{f}.normal"), normal)?;
            let length = normal.iter().map(|x| x * x).sum::<f64>().sqrt();
            if !(length > 0.0 && length.is_finite()) {
                return Err(v.invalid(
                    &format!("{f}.normal"),
                    format!("{normal:?} has no direction"),
                    "give the outward normal, pointing out of the collider into the space \
                     the object moves in (e.g. [0, 1, 0] for a ground under a y-up world)",
                ));
            }
            Ok(ColliderShape::Plane {
                point,
                normal: normal.map(|x| x / length),
            })
        }
        Some("box") => {
            unused("point", c.point.is_some(), "box")?;
            unused("normal", c.normal.is_some(), "box")?;
            let min = required("min", c.min, "box", "[x, y, z]")?;
            let max = required("max", c.max, "box", "[x, y, z]")?;
            let (min, max) = v.aabb(f, min, max)?;
            Ok(ColliderShape::Box { min, max })
        }
        Some(other) => Err(v.invalid(
            &format!("{f}.kind"),
            format!("is \"{other}\""),
            "set kind = \"plane\" (with point and normal) or kind = \"box\" (with min and max)",
        )),
        None => Err(v.invalid(
            &format!("{f}.kind"),
            "is missing",
            "add kind = \"plane\" (with point and normal) or kind = \"box\" (with min and max)",
        )),
    }
}

fn resolve_contact(v: &Validator, f: &str, c: &ColliderConfig) -> Result<ContactRule, SceneError> {
    let no_friction = |rule: &str| {
        if c.friction.is_some() {
            Err(v.invalid(
                &format!("{f}.friction"),
                format!("is not read with contact = \"{rule}\""),
                "remove `friction`, or set contact = \"friction\" to use it",
            ))
        } else {
            Ok(())
        }
    };
    match c.contact.as_deref() {
        Some("sticky") => no_friction("sticky").map(|_| ContactRule::Sticky),
        Some("slip") => no_friction("slip").map(|_| ContactRule::Slip),
        Some("friction") => {
            let mu = c.friction.ok_or_else(|| {
                v.invalid(
                    &format!("{f}.friction"),
                    "is missing: contact = \"friction\" needs the Coulomb coefficient μ",
                    "add `friction = 0.5` (any μ ≥ 0; 0 is slip)",
                )
            })?;
            Ok(ContactRule::Friction(
                v.non_negative(&format!("{f}.friction"), mu)?,
            ))
        }
        Some(other) => Err(v.invalid(
            &format!("{f}.contact"),
            format!("is \"{other}\""),
            "set contact = \"sticky\", \"slip\" or \"friction\" (with friction = μ)",
        )),
        None => Err(v.invalid(
            &format!("{f}.contact"),
            "is missing",
            "add contact = \"sticky\", \"slip\" or \"friction\" (with friction = μ)",
        )),
    }
}

/// True when the world point `x` is strictly inside collider `c` (world
/// units): on its surface is allowed, an object may start resting on it.
fn strictly_inside(c: &Collider, x: [f64; 3]) -> bool {
    match c.shape {
        ColliderShape::Plane { point, normal } => {
            (0..3).map(|a| (x[a] - point[a]) * normal[a]).sum::<f64>() < 0.0
        }
        ColliderShape::Box { min, max } => (0..3).all(|a| min[a] < x[a] && x[a] < max[a]),
    }
}

/// A collider that holds simulated splats at the start ([`start_inside`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartInside {
    /// Its index in the list checked.
    pub index: usize,
    /// How many simulated splats start inside it.
    pub splats: usize,
    /// Where they are: "behind the plane" or "inside the box".
    pub place: &'static str,
    /// How to fix it.
    pub fix: &'static str,
}

/// The first of `colliders` (world units) that holds simulated splats
/// (`means` where `simulated`) at the start, if any: the contact rules act
/// on grid nodes, and material inside a collider is pushed out of it or
/// held by it in ways no real scene shows.
pub fn start_inside(
    colliders: &[Collider],
    means: &[[f32; 3]],
    simulated: &[bool],
) -> Option<StartInside> {
    colliders.iter().enumerate().find_map(|(index, c)| {
        let splats = means
            .iter()
            .zip(simulated)
            .filter(|(p, s)| **s && strictly_inside(c, p.map(f64::from)))
            .count();
        let (place, fix) = match c.shape {
            ColliderShape::Plane { .. } => (
                "behind the plane",
                "move `point`, or flip `normal` so that it points out of the collider \
                 towards the object",
            ),
            ColliderShape::Box { .. } => ("inside the box", "move or shrink the box"),
        };
        (splats > 0).then_some(StartInside {
            index,
            splats,
            place,
            fix,
        })
    })
}

/// Refuses colliders that hold simulated splats at the start
/// ([`start_inside`]).
pub(crate) fn check_start_outside(
    v: &Validator,
    colliders: &[Collider],
    means: &[[f32; 3]],
    simulated: &[bool],
) -> Result<(), SceneError> {
    match start_inside(colliders, means, simulated) {
        Some(s) => Err(v.invalid(
            &field(s.index),
            format!("{} simulated splats start {}", s.splats, s.place),
            s.fix,
        )),
        None => Ok(()),
    }
}

/// `c` (world units) in the simulator's normalised units of `sim_box`
/// (normals keep their direction: the map is a translation and one
/// uniform scale).
pub fn to_normalised(c: &Collider, sim_box: &SimBox) -> Collider {
    let point = |p: [f64; 3]| std::array::from_fn(|a| (p[a] - sim_box.min[a]) / sim_box.side);
    let shape = match c.shape {
        ColliderShape::Plane { point: p, normal } => ColliderShape::Plane {
            point: point(p),
            normal,
        },
        ColliderShape::Box { min, max } => ColliderShape::Box {
            min: point(min),
            max: point(max),
        },
    };
    Collider {
        shape,
        contact: c.contact,
    }
}
