//! Rewrites of the generated schemas into the forms code generators read.
//!
//! `schemars` writes an enum whose variants carry doc comments as a `oneOf` of `const`
//! schemas, each with its own description. That is valid JSON Schema, but most OpenAPI
//! generators make it a union of anonymous types rather than an enum, so here it becomes
//! `{"type": "string", "enum": […]}` with the variants' descriptions folded into the
//! description as a list.

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
}
