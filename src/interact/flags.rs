//! The simple interactions as command-line flags (docs/scene.md
//! "Interactions file", which lists them beside the file's fields):
//! `--velocity VX,VY,VZ [--in-box X0,Y0,Z0..X1,Y1,Z1]`, `--impulse
//! "centre=X,Y,Z;radius=R;acceleration=AX,AY,AZ;start=T0;end=T1"`
//! (repeatable; the keys are the file's impulse fields, `start` defaults to
//! 0), `--gravity GX,GY,GZ` and `--from-rest`. Parsed here, not in the CLI,
//! so that they refuse what the file refuses, in the same words.

use super::error::InteractionError;
use super::interaction::{Check, Entry, Impulse, Interaction, Interactions, Start, VelocityRegion};

/// The flags as typed (each `None` / empty when not given).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InteractionFlags {
    /// `--velocity VX,VY,VZ` (world units / s).
    pub velocity: Option<String>,
    /// `--in-box X0,Y0,Z0..X1,Y1,Z1`: where `--velocity` applies (world units).
    pub in_box: Option<String>,
    /// Each `--impulse` (module doc).
    pub impulses: Vec<String>,
    /// `--gravity GX,GY,GZ` (world units / s²).
    pub gravity: Option<String>,
    /// `--from-rest`.
    pub from_rest: bool,
    /// `--release`.
    pub release: bool,
}

/// `a,b,c` as three numbers.
fn triple(
    check: &Check,
    field: &str,
    text: &str,
    unit: &str,
) -> Result<[f64; 3], InteractionError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let numbers: Option<Vec<f64>> = parts.iter().map(|p| p.parse().ok()).collect();
    match numbers.as_deref() {
        Some(&[x, y, z]) => check.finite3(field, [x, y, z], unit),
        _ => Err(check.invalid(
            field,
            format!("\"{text}\" is not three numbers"),
            format!("write X,Y,Z ({unit}), e.g. 0,1.5,0"),
        )),
    }
}

/// One number.
fn number(check: &Check, field: &str, text: &str, unit: &str) -> Result<f64, InteractionError> {
    text.trim().parse().map_err(|_| {
        check.invalid(
            field,
            format!("\"{text}\" is not a number"),
            format!("write a number ({unit})"),
        )
    })
}

/// One `--impulse` value (module doc).
fn impulse(flag: &str, text: &str) -> Result<Impulse, InteractionError> {
    let check = Check { origin: flag };
    let (mut centre, mut radius, mut acceleration, mut start, mut end) =
        (None, None, None, None, None);
    for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(check.invalid(
                pair,
                "is not KEY=VALUE",
                "write centre=X,Y,Z;radius=R;acceleration=AX,AY,AZ;start=T0;end=T1",
            ));
        };
        let key = key.trim();
        match key {
            // Both spellings are common.
            "centre" | "center" => centre = Some(triple(&check, key, value, "world units")?),
            "radius" => radius = Some(number(&check, key, value, "world units")?),
            "acceleration" => acceleration = Some(triple(&check, key, value, "world units / s²")?),
            "start" => start = Some(number(&check, key, value, "seconds")?),
            "end" => end = Some(number(&check, key, value, "seconds")?),
            other => {
                return Err(check.invalid(
                    other,
                    "is not a field of an impulse",
                    "use the keys centre, radius, acceleration, start (optional) and end",
                ))
            }
        }
    }
    let missing =
        |key: &str, what: &str| check.invalid(key, "is missing", format!("add {key}={what}"));
    check.impulse(
        "impulse",
        Impulse {
            centre: centre.ok_or_else(|| missing("centre", "X,Y,Z (world units)"))?,
            radius: radius.ok_or_else(|| missing("radius", "R (world units)"))?,
            acceleration: acceleration
                .ok_or_else(|| missing("acceleration", "AX,AY,AZ (world units / s²)"))?,
            start: start.unwrap_or(0.0),
            end: end.ok_or_else(|| missing("end", "T1 (seconds from frame 0)"))?,
        },
    )
}

impl InteractionFlags {
    /// The flags as one list of interactions, in the order start, velocity,
    /// impulses, gravity.
    pub fn interactions(&self) -> Result<Interactions, InteractionError> {
        let mut out = Interactions::default();
        let mut push = |origin: &str, interaction| {
            out.push(Entry {
                origin: origin.to_string(),
                field: origin.to_string(),
                interaction,
            })
        };
        if self.from_rest {
            push("--from-rest", Interaction::Start(Start::Rest))?;
        }
        if self.release {
            push("--release", Interaction::Release)?;
        }
        match (&self.velocity, &self.in_box) {
            (None, Some(_)) => {
                return Err(Check { origin: "--in-box" }.invalid(
                    "--in-box",
                    "given without --velocity",
                    "add --velocity VX,VY,VZ (the velocity inside the box)",
                ))
            }
            (Some(v), within) => {
                let check = Check {
                    origin: "--velocity",
                };
                let velocity = triple(&check, "--velocity", v, "world units / s")?;
                let within = match within {
                    None => None,
                    Some(b) => {
                        let check = Check { origin: "--in-box" };
                        let (lo, hi) = b.split_once("..").ok_or_else(|| {
                            check.invalid(
                                "--in-box",
                                format!("\"{b}\" is not MIN..MAX"),
                                "write X0,Y0,Z0..X1,Y1,Z1 (world units)",
                            )
                        })?;
                        Some((
                            triple(&check, "--in-box", lo, "world units")?,
                            triple(&check, "--in-box", hi, "world units")?,
                        ))
                    }
                };
                let region = check.velocity(
                    "--velocity",
                    "--in-box",
                    VelocityRegion { velocity, within },
                )?;
                push("--velocity", Interaction::Velocity(region))?;
            }
            (None, None) => {}
        }
        for text in &self.impulses {
            push(
                "--impulse",
                Interaction::Impulse(impulse("--impulse", text)?),
            )?;
        }
        if let Some(g) = &self.gravity {
            let check = Check {
                origin: "--gravity",
            };
            push(
                "--gravity",
                Interaction::Gravity(triple(&check, "--gravity", g, "world units / s²")?),
            )?;
        }
        Ok(out)
    }
}
