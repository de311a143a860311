//! `docs/fit.schema.json` is the JSON Schema generated from the types of
//! `fit.json` ([`FitSummary`]): regenerated here and compared, so that it
//! cannot go stale, and the fit.json shape these tests write has every
//! field it requires and no Rust Debug text.

use std::path::Path;

use physfit::fit::FitSummary;

use crate::common::json_shape::missing_fields;

fn committed_schema() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fit.schema.json");
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = FitSummary::json_schema();
    if std::env::var_os("PHYSFIT_WRITE_SCHEMA").is_some() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fit.schema.json");
        std::fs::write(path, &generated).unwrap();
    }
    assert!(
        committed_schema() == generated,
        "docs/fit.schema.json is stale; fix: PHYSFIT_WRITE_SCHEMA=1 cargo test --test cpu \
         the_committed_schema_is_the_generated_one"
    );
}

#[test]
fn the_schema_names_regions_solvers_and_stages_that_did_not_run() {
    let schema: serde_json::Value = serde_json::from_str(&FitSummary::json_schema()).unwrap();
    let defs = &schema["definitions"];
    for (def, field) in [
        ("YoungsParameter", "name"),
        ("YoungsParameter", "normalised"),
        ("YoungsParameter", "world"),
        ("StageSummary", "solver"),
        ("StageSummary", "run"),
        ("StageSettings", "learning_rate"),
    ] {
        assert!(
            defs[def]["properties"].get(field).is_some(),
            "{def}.{field} missing from the schema"
        );
    }
    // What does not always apply is not required.
    let required = |def: &str| {
        defs[def]["required"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(!required("StageSettings").contains(&"learning_rate".into()));
    assert!(!required("StageSummary").contains(&"run".into()));
    // A fit.json missing a required field is caught by the shape check.
    let value: serde_json::Value = serde_json::json!({"format": "physfit.fit"});
    assert!(missing_fields(&schema, &value).contains(&"$.version".to_string()));
}
