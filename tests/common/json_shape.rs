//! A JSON value checked against the shape a JSON Schema (as `schemars`
//! writes it: `$ref`s into `definitions`) gives it: every required field
//! present, objects where objects are expected, recursively. Enough to
//! catch a file that programs reading by the schema cannot read.

use serde_json::Value;

/// The schema `node` points at (`$ref` followed into `definitions`).
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap();
            resolve(root, &root["definitions"][name])
        }
        None => match node.get("allOf").and_then(Value::as_array) {
            Some(all) if all.len() == 1 => resolve(root, &all[0]),
            _ => node,
        },
    }
}

/// Every place in `value` where a field `schema` requires is missing, as
/// `path.field`; empty when its shape is right.
pub fn missing_fields(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, schema, value, "$", &mut out);
    out
}

fn walk(root: &Value, node: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let node = resolve(root, node);
    if let (Some(props), Some(obj)) = (node.get("properties"), value.as_object()) {
        for field in node["required"].as_array().into_iter().flatten() {
            let field = field.as_str().unwrap();
            if !obj.contains_key(field) {
                out.push(format!("{at}.{field}"));
            }
        }
        for (field, v) in obj {
            if let Some(sub) = props.get(field) {
                walk(root, sub, v, &format!("{at}.{field}"), out);
            }
        }
    } else if node.get("properties").is_some() && !value.is_null() {
        out.push(format!("{at} (not an object)"));
    }
    if let (Some(items), Some(list)) = (node.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            walk(root, items, v, &format!("{at}[{i}]"), out);
        }
    }
    for alt in ["anyOf", "oneOf"] {
        if let Some(alts) = node.get(alt).and_then(Value::as_array) {
            // An `Option<T>`: the non-null alternative, when the value is set.
            if !value.is_null() {
                if let Some(a) = alts.iter().find(|a| a.get("type") != Some(&"null".into())) {
                    walk(root, a, value, at, out);
                }
            }
        }
    }
}
