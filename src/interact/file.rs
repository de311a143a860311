//! The interactions file (`--interactions FILE`, docs/scene.md
//! "Interactions file"): `[[interactions]]` tables, each with a `kind` and
//! that kind's fields only (unknown fields are errors, as in scene.toml),
//! and `[[colliders]]` tables, the schema of `[[simulation.colliders]]`
//! read by the scene's own collider code ([`parse_colliders`]).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::error::InteractionError;
use super::interaction::{Check, Entry, Impulse, Interaction, Interactions, Start, VelocityRegion};
use crate::scene::collider::parse_colliders;
use crate::scene::config::ColliderConfig;

/// The kinds of `[[interactions]]`.
const KINDS: &str = "\"velocity\", \"impulse\", \"gravity\", \"start\", \"release\"";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InteractionsFile {
    #[serde(default)]
    interactions: Vec<toml::Table>,
    #[serde(default)]
    colliders: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxTable {
    min: [f64; 3],
    max: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VelocityTable {
    velocity: [f64; 3],
    #[serde(rename = "box")]
    within: Option<BoxTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImpulseTable {
    /// `center` is read as `centre`: both spellings are common.
    #[serde(alias = "center")]
    centre: [f64; 3],
    radius: f64,
    acceleration: [f64; 3],
    #[serde(default)]
    start: f64,
    end: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GravityTable {
    acceleration: [f64; 3],
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum StartFrom {
    Fitted,
    Rest,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartTable {
    from: StartFrom,
}

/// `kind = "release"` takes no fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseTable {}

impl Interactions {
    /// Reads an interactions file (module doc).
    pub fn load(path: &Path) -> Result<Interactions, InteractionError> {
        let origin = crate::io::shown::shown(path).to_string();
        let text = std::fs::read_to_string(path).map_err(|error| InteractionError::Read {
            source_name: origin.clone(),
            error,
        })?;
        Self::parse(&text, &origin)
    }

    /// Parses the text of an interactions file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Interactions, InteractionError> {
        let parse_error = |field: &str, e: &dyn std::fmt::Display| InteractionError::Parse {
            source_name: origin.to_string(),
            field: field.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        };
        let file: InteractionsFile =
            toml::from_str(text).map_err(|e| parse_error("(top level)", &e))?;
        let check = Check { origin };
        let mut out = Interactions::default();
        for (i, mut table) in file.interactions.into_iter().enumerate() {
            let field = format!("interactions[{i}]");
            let kind = match table.remove("kind") {
                Some(toml::Value::String(kind)) => kind,
                Some(other) => {
                    return Err(check.invalid(
                        &format!("{field}.kind"),
                        format!("{other} is not a string"),
                        format!("write one of {KINDS}"),
                    ))
                }
                None => {
                    return Err(check.invalid(
                        &field,
                        "has no `kind`",
                        format!("add `kind = ` one of {KINDS}"),
                    ))
                }
            };
            fn read<T: DeserializeOwned>(
                table: toml::Table,
                field: &str,
                parse_error: &dyn Fn(&str, &dyn std::fmt::Display) -> InteractionError,
            ) -> Result<T, InteractionError> {
                toml::Value::Table(table)
                    .try_into()
                    .map_err(|e| parse_error(field, &e))
            }
            let interaction = match kind.as_str() {
                "velocity" => {
                    let t: VelocityTable = read(table, &field, &parse_error)?;
                    Interaction::Velocity(check.velocity(
                        &format!("{field}.velocity"),
                        &format!("{field}.box"),
                        VelocityRegion {
                            velocity: t.velocity,
                            within: t.within.map(|b| (b.min, b.max)),
                        },
                    )?)
                }
                "impulse" => {
                    let t: ImpulseTable = read(table, &field, &parse_error)?;
                    Interaction::Impulse(check.impulse(
                        &field,
                        Impulse {
                            centre: t.centre,
                            radius: t.radius,
                            acceleration: t.acceleration,
                            start: t.start,
                            end: t.end,
                        },
                    )?)
                }
                "gravity" => {
                    let t: GravityTable = read(table, &field, &parse_error)?;
                    Interaction::Gravity(check.finite3(
                        &format!("{field}.acceleration"),
                        t.acceleration,
                        "world units / s²",
                    )?)
                }
                "start" => {
                    let t: StartTable = read(table, &field, &parse_error)?;
                    Interaction::Start(match t.from {
                        StartFrom::Fitted => Start::Fitted,
                        StartFrom::Rest => Start::Rest,
                    })
                }
                "release" => {
                    let _: ReleaseTable = read(table, &field, &parse_error)?;
                    Interaction::Release
                }
                other => {
                    return Err(check.invalid(
                        &format!("{field}.kind"),
                        format!("\"{other}\" is not a kind of interaction"),
                        format!("write one of {KINDS}"),
                    ))
                }
            };
            out.push(Entry {
                origin: origin.to_string(),
                field,
                interaction,
            })?;
        }
        let configs = file
            .colliders
            .into_iter()
            .enumerate()
            .map(|(i, table)| {
                toml::Value::Table(table)
                    .try_into::<ColliderConfig>()
                    .map_err(|e| parse_error(&format!("colliders[{i}]"), &e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let colliders = parse_colliders(Path::new(origin), "colliders", &configs)?;
        for (i, collider) in colliders.into_iter().enumerate() {
            out.push(Entry {
                origin: origin.to_string(),
                field: format!("colliders[{i}]"),
                interaction: Interaction::Collider(collider),
            })?;
        }
        Ok(out)
    }
}
