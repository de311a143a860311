//! The interactions themselves (module doc of [`super`]): their values in
//! world units, checked once where they are read (`Check`), whether from
//! a file or a flag, so both refuse the same things with the same words.

use super::error::InteractionError;
use crate::mpm_rules::Collider;

/// Most impulses one run may hold: the external-force kernel keeps each
/// particle's impulses as the bits of one `u32`.
pub use crate::mpm::external_force::MAX_IMPULSES;

/// Where the initial velocity starts from, before the `velocity`
/// interactions are added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Start {
    /// The fitted initial velocity of `drivers.safetensors` (the default).
    #[default]
    Fitted,
    /// Every driver at rest.
    Rest,
}

/// An initial velocity added to every free driver, or to those whose rest
/// position lies inside a box.
#[derive(Clone, Debug, PartialEq)]
pub struct VelocityRegion {
    /// World units / s.
    pub velocity: [f64; 3],
    /// `(min, max)` corners in world units, inclusive; `None`: everywhere.
    pub within: Option<([f64; 3], [f64; 3])>,
}

impl VelocityRegion {
    /// True when this velocity applies at world position `p`.
    pub fn applies_at(&self, p: [f64; 3]) -> bool {
        match self.within {
            None => true,
            Some((lo, hi)) => (0..3).all(|a| lo[a] <= p[a] && p[a] <= hi[a]),
        }
    }
}

/// An acceleration applied to the free particles within `radius` of
/// `centre` over the time window `[start, end]` (PhysDreamer § 5.1's poke).
/// Which particles it holds is decided once, from their positions at
/// `start`, and kept while it acts (the particles it pushes move, and a
/// fixed ball in space would lose them).
#[derive(Clone, Debug, PartialEq)]
pub struct Impulse {
    /// World units.
    pub centre: [f64; 3],
    /// World units (> 0).
    pub radius: f64,
    /// World units / s².
    pub acceleration: [f64; 3],
    /// Seconds from frame 0 (≥ 0).
    pub start: f64,
    /// Seconds from frame 0 (> `start`).
    pub end: f64,
}

impl Impulse {
    /// The velocity change it gives a particle it holds for its whole
    /// window: `acceleration · (end − start)`, world units / s.
    pub fn velocity_change(&self) -> [f64; 3] {
        self.acceleration.map(|a| a * (self.end - self.start))
    }
}

/// One interaction.
#[derive(Clone, Debug, PartialEq)]
pub enum Interaction {
    /// An initial velocity ([`VelocityRegion`]).
    Velocity(VelocityRegion),
    /// An impulse ([`Impulse`]).
    Impulse(Impulse),
    /// Gravity for the run, world units / s², in place of the scene's
    /// `simulation.gravity`.
    Gravity([f64; 3]),
    /// Where the initial velocity starts from ([`Start`]).
    Start(Start),
    /// The object let go: the fit's anchored drivers move with the rest
    /// (it falls under gravity, or rests on a collider), and the splats
    /// they held follow their nearest drivers like every free splat.
    Release,
    /// A static collider added to the scene's `simulation.colliders`
    /// (world units): a `[[colliders]]` table or `--ground`.
    Collider(Collider),
}

/// An interaction with where it was given, for the errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The file or the flag that gave it.
    pub origin: String,
    /// Its field there (`interactions[2]`, or the flag).
    pub field: String,
    /// The interaction.
    pub interaction: Interaction,
}

/// Every interaction of a run, in the order given (module doc of
/// [`super`]). At most one [`Interaction::Gravity`] and one
/// [`Interaction::Start`], at most [`MAX_IMPULSES`] impulses; velocities
/// add up where their regions overlap.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interactions {
    /// The interactions with their origins.
    pub entries: Vec<Entry>,
}

impl Interactions {
    /// True without interactions.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends `entry` after checking that the list stays usable: a second
    /// gravity or start, or one impulse too many, is refused naming both
    /// places.
    pub fn push(&mut self, entry: Entry) -> Result<(), InteractionError> {
        let same_kind = |e: &&Entry| {
            std::mem::discriminant(&e.interaction) == std::mem::discriminant(&entry.interaction)
        };
        let unique = match entry.interaction {
            Interaction::Gravity(_) => Some("gravity"),
            Interaction::Start(_) => Some("start"),
            Interaction::Release => Some("release"),
            _ => None,
        };
        if let (Some(what), Some(first)) = (unique, self.entries.iter().find(same_kind)) {
            return Err(InteractionError::Invalid {
                source_name: entry.origin,
                field: entry.field,
                problem: format!(
                    "a second {what}: `{}` of {} already sets it",
                    first.field, first.origin
                ),
                fix: format!("give {what} once"),
            });
        }
        if matches!(entry.interaction, Interaction::Impulse(_))
            && self.impulses().count() == MAX_IMPULSES
        {
            return Err(InteractionError::Invalid {
                source_name: entry.origin,
                field: entry.field,
                problem: format!("more than {MAX_IMPULSES} impulses"),
                fix: format!("combine impulses: at most {MAX_IMPULSES} act in one run"),
            });
        }
        self.entries.push(entry);
        Ok(())
    }

    /// Appends every entry of `other` ([`Interactions::push`]).
    pub fn extend(&mut self, other: Interactions) -> Result<(), InteractionError> {
        other.entries.into_iter().try_for_each(|e| self.push(e))
    }

    /// Where the initial velocity starts from (default [`Start::Fitted`]).
    pub fn start(&self) -> Start {
        self.entries
            .iter()
            .find_map(|e| match e.interaction {
                Interaction::Start(s) => Some(s),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Whether the object is let go ([`Interaction::Release`]).
    pub fn released(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.interaction, Interaction::Release))
    }

    /// The gravity given, if any (world units / s²).
    pub fn gravity(&self) -> Option<[f64; 3]> {
        self.entries.iter().find_map(|e| match e.interaction {
            Interaction::Gravity(g) => Some(g),
            _ => None,
        })
    }

    /// The initial velocities, in order.
    pub fn velocities(&self) -> impl Iterator<Item = &VelocityRegion> {
        self.entries.iter().filter_map(|e| match &e.interaction {
            Interaction::Velocity(v) => Some(v),
            _ => None,
        })
    }

    /// The colliders added, in order, with their entries (for the errors).
    pub fn colliders(&self) -> impl Iterator<Item = (&Entry, &Collider)> {
        self.entries.iter().filter_map(|e| match &e.interaction {
            Interaction::Collider(c) => Some((e, c)),
            _ => None,
        })
    }

    /// The impulses, in order (index `i` is bit `i` of the force kernel's
    /// masks).
    pub fn impulses(&self) -> impl Iterator<Item = &Impulse> {
        self.entries.iter().filter_map(|e| match &e.interaction {
            Interaction::Impulse(i) => Some(i),
            _ => None,
        })
    }
}

/// Value checks naming the origin and field (shared by the file and the
/// flags).
pub(crate) struct Check<'a> {
    /// The file or flag.
    pub origin: &'a str,
}

impl Check<'_> {
    /// An [`InteractionError::Invalid`] here.
    pub fn invalid(
        &self,
        field: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> InteractionError {
        InteractionError::Invalid {
            source_name: self.origin.to_string(),
            field: field.to_string(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// `v` if every component is finite.
    pub fn finite3(
        &self,
        field: &str,
        v: [f64; 3],
        unit: &str,
    ) -> Result<[f64; 3], InteractionError> {
        if v.iter().all(|c| c.is_finite()) {
            Ok(v)
        } else {
            Err(self.invalid(
                field,
                format!("{v:?} is not finite"),
                format!("give three finite numbers ({unit})"),
            ))
        }
    }

    /// `v` if finite and positive.
    pub fn positive(&self, field: &str, v: f64, unit: &str) -> Result<f64, InteractionError> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(self.invalid(
                field,
                format!("{v} is not positive"),
                format!("give a positive number ({unit})"),
            ))
        }
    }

    /// An impulse after checking each of its values (`field` is its table
    /// or flag).
    pub fn impulse(&self, field: &str, i: Impulse) -> Result<Impulse, InteractionError> {
        let f = |name: &str| format!("{field}.{name}");
        self.finite3(&f("centre"), i.centre, "world units")?;
        self.positive(&f("radius"), i.radius, "world units")?;
        self.finite3(&f("acceleration"), i.acceleration, "world units / s²")?;
        if !(i.start.is_finite() && i.start >= 0.0) {
            return Err(self.invalid(
                &f("start"),
                format!("{} is not a time ≥ 0", i.start),
                "give the start in seconds from frame 0",
            ));
        }
        if !(i.end.is_finite() && i.end > i.start) {
            return Err(self.invalid(
                &f("end"),
                format!("{} is not after start = {}", i.end, i.start),
                "give an end time (seconds from frame 0) after the start",
            ));
        }
        Ok(i)
    }

    /// A velocity region after checking its values (`velocity_field` and
    /// `box_field` name them).
    pub fn velocity(
        &self,
        velocity_field: &str,
        box_field: &str,
        v: VelocityRegion,
    ) -> Result<VelocityRegion, InteractionError> {
        self.finite3(velocity_field, v.velocity, "world units / s")?;
        if let Some((lo, hi)) = v.within {
            self.finite3(box_field, lo, "world units")?;
            self.finite3(box_field, hi, "world units")?;
            if (0..3).any(|a| lo[a] >= hi[a]) {
                return Err(self.invalid(
                    box_field,
                    format!("min {lo:?} is not below max {hi:?} on every axis"),
                    "swap the corners or give the box a positive size",
                ));
            }
        }
        Ok(v)
    }
}
