//! Rewrites of the generated schemas into the forms code generators read.
//!
//! `schemars` writes an enum whose variants carry doc comments as a `oneOf` of `const`
//! schemas, each with its own description. That is valid JSON Schema, but most OpenAPI
//! generators make it a union of anonymous types rather than an enum, so here it becomes
//! `{"type": "string", "enum": […]}` with the variants' descriptions folded into the
//! description as a list. A `default` moves into the description too (see
//! [`defaults_as_prose`]).

use serde_json::{Map, Value};

/// Keys a `const` alternative may have and still be folded into an `enum`.
const FOLDABLE: &[&str] = &["const", "description", "title", "type"];

/// Rewrites every `oneOf` whose alternatives are all `const` schemas, anywhere in `value`,
/// into an `enum`.
pub(super) fn enums_for_generators(value: &mut Value) {
    match value {
        Value::Object(map) => {
            fold_const_one_of(map);
            for v in map.values_mut() {
                enums_for_generators(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(enums_for_generators),
        _ => {}
    }
}

/// Folds `map`'s `oneOf` into an `enum` when every alternative is a bare `const`.
fn fold_const_one_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = map.get("oneOf") else {
        return;
    };
    let foldable = !alternatives.is_empty()
        && alternatives.iter().all(|a| {
            a.as_object().is_some_and(|o| {
                o.contains_key("const") && o.keys().all(|k| FOLDABLE.contains(&k.as_str()))
            })
        });
    if !foldable {
        return;
    }
    let values: Vec<Value> = alternatives.iter().map(|a| a["const"].clone()).collect();
    let listed: Vec<String> = alternatives
        .iter()
        .filter_map(|a| {
            let description = a.get("description")?.as_str()?;
            Some(format!("- `{}`: {description}", a["const"]))
        })
        .collect();
    let json_type = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let first = values.first().map(json_type);
    map.remove("oneOf");
    if let Some(first) = first
        && values.iter().all(|v| json_type(v) == first)
        && !map.contains_key("type")
    {
        map.insert("type".to_owned(), Value::from(first));
    }
    map.insert("enum".to_owned(), Value::Array(values));
    if !listed.is_empty() {
        let listed = listed.join("\n");
        let description = match map.get("description").and_then(Value::as_str) {
            Some(own) => format!("{own}\n\n{listed}"),
            None => listed,
        };
        map.insert("description".to_owned(), Value::from(description));
    }
}

/// Moves every schema's `default` into its description ("Defaults to `false`.").
///
/// `default` is documentation only (the server fills absent fields itself), but
/// openapi-typescript 7 reads it as "always present" and makes such fields required, so a
/// generated client could not leave out `recording_enabled` of a new agent. A `null` default
/// (an absent optional field) says nothing a reader needs and is dropped.
pub(super) fn defaults_as_prose(value: &mut Value) {
    walk_defaults(value, false);
}

/// `in_properties`: `value` is a `properties` map, whose keys are field names, not keywords.
fn walk_defaults(value: &mut Value, in_properties: bool) {
    match value {
        Value::Object(map) => {
            if !in_properties
                && let Some(default) = map.remove("default")
                && !default.is_null()
            {
                let note = format!("Defaults to `{default}`.");
                let description = match map.get("description").and_then(Value::as_str) {
                    Some(own) => format!("{own}\n\n{note}"),
                    None => note,
                };
                map.insert("description".to_owned(), Value::from(description));
            }
            for (key, child) in map.iter_mut() {
                // Values, not schemas: a `default` inside them is data.
                if !in_properties
                    && matches!(key.as_str(), "example" | "examples" | "const" | "enum")
                {
                    continue;
                }
                walk_defaults(child, !in_properties && key == "properties");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk_defaults(v, false)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_one_of_of_consts_becomes_an_enum_keeping_descriptions() {
        let mut schema = json!({
            "description": "A status.",
            "oneOf": [
                {"type": "string", "const": "queued", "description": "Waiting."},
                {"type": "string", "const": "done"},
            ],
        });
        enums_for_generators(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "string",
                "enum": ["queued", "done"],
                "description": "A status.\n\n- `\"queued\"`: Waiting.",
            })
        );
    }

    #[test]
    fn a_one_of_of_objects_is_left_alone() {
        let mut schema = json!({"oneOf": [
            {"const": "a"},
            {"type": "object", "properties": {"kind": {"const": "b"}}},
        ]});
        let before = schema.clone();
        enums_for_generators(&mut schema);
        assert_eq!(schema, before);
    }

    #[test]
    fn defaults_become_prose_and_fields_named_default_stay() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "recording_enabled": {"type": "boolean", "default": false, "description": "Record."},
                "status": {"type": ["string", "null"], "default": null},
                "default": {"type": "string", "default": "x"},
            },
            "examples": [{"default": "kept"}],
        });
        defaults_as_prose(&mut schema);
        assert_eq!(
            schema["properties"]["recording_enabled"],
            json!({"type": "boolean", "description": "Record.\n\nDefaults to `false`."})
        );
        assert_eq!(
            schema["properties"]["status"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            schema["properties"]["default"],
            json!({"type": "string", "description": "Defaults to `\"x\"`."})
        );
        assert_eq!(schema["examples"], json!([{"default": "kept"}]));
    }
}
