//! Validation of JSON values against the document's schemas, with the `jsonschema` crate
//! (JSON Schema 2020-12, formats checked). It validates strictly: before compiling, an object
//! schema with `properties` and no `additionalProperties` is closed (`additionalProperties:
//! false`), so an answer carrying an undocumented field fails. The document's
//! `#/components/schemas/…` references are rewritten to `$defs` of the compiled schema.

use serde_json::{Value, json};

use super::document;

/// Keywords the validation accounts for: the crate checks them all, and closing objects is
/// right only while no other keyword (`patternProperties`, `unevaluatedProperties`, …)
/// decides which fields an object may have.
pub(super) const VALIDATED: &[&str] = &[
    "$ref",
    "type",
    "const",
    "enum",
    "format",
    "minimum",
    "maximum",
    "pattern",
    "minLength",
    "maxLength",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "oneOf",
    "anyOf",
    "allOf",
];

/// Keywords that only annotate.
pub(super) const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    // OpenAPI's: which `oneOf` alternative a body is, by a property the alternatives pin.
    "discriminator",
    "contentMediaType",
    "contentEncoding",
    "$comment",
];

/// Calls `f` on every schema inside `schema` (itself included), without following `$ref`s.
pub(super) fn walk_schema(schema: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
    f(at, schema);
    let Some(s) = schema.as_object() else {
        return;
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            walk_schema(sub, &format!("{at}.properties.{name}"), f);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = s.get(key).filter(|v| v.is_object()) {
            walk_schema(sub, &format!("{at}.{key}"), f);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for (i, sub) in s
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk_schema(sub, &format!("{at}.{key}[{i}]"), f);
        }
    }
}

/// One way a value fails a schema.
#[derive(Debug)]
pub(super) struct Failure {
    /// Where in the value, as a JSON pointer (`""` for the value itself).
    pub at: String,
    /// The keyword that failed.
    pub keyword: String,
    /// The crate's sentence.
    pub message: String,
}

/// The schemas of one document, prepared for validation.
pub(super) struct Schemas {
    defs: Value,
}

impl Schemas {
    /// The schemas of `doc`'s `components`.
    pub fn of(doc: &Value) -> Self {
        let mut defs = doc["components"]["schemas"].clone();
        for schema in defs
            .as_object_mut()
            .into_iter()
            .flat_map(|d| d.values_mut())
        {
            prepare(schema);
        }
        Self { defs }
    }

    /// Every way `value` fails `schema` (a schema of the document, which may refer to its
    /// components); empty when it passes.
    pub fn errors(&self, schema: &Value, value: &Value) -> Vec<Failure> {
        let mut schema = schema.clone();
        prepare(&mut schema);
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": self.defs,
            "allOf": [schema],
        });
        let validator = match jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&root)
        {
            Ok(validator) => validator,
            Err(e) => {
                return vec![Failure {
                    at: String::new(),
                    keyword: e.kind().keyword().to_owned(),
                    message: format!("the schema does not compile: {e}"),
                }];
            }
        };
        validator
            .iter_errors(value)
            .map(|e| Failure {
                at: e.instance_path().to_string(),
                keyword: e.kind().keyword().to_owned(),
                message: e.to_string(),
            })
            .collect()
    }
}

/// Closes every object schema inside `schema` that lists `properties` without saying what
/// else it allows, and points component references at `$defs`.
fn prepare(schema: &mut Value) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::String(reference)) = s.get_mut("$ref")
        && let Some(name) = reference.strip_prefix("#/components/schemas/")
    {
        *reference = format!("#/$defs/{name}");
    }
    if s.contains_key("properties") && !s.contains_key("additionalProperties") {
        s.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(prepare);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = s.get_mut(key) {
            prepare(sub);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(subs) = s.get_mut(key).and_then(Value::as_array_mut) {
            subs.iter_mut().for_each(prepare);
        }
    }
}

#[test]
fn the_validator_rejects_what_it_should() {
    let doc = json!({"components": {"schemas": {
        "Kind": {"oneOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b"}]},
        "Thing": {
            "type": "object",
            "required": ["id", "at"],
            "properties": {
                "id": {"type": "string", "pattern": "^thing_"},
                "at": {"type": "string", "format": "date-time"},
                "n": {"type": ["integer", "null"], "minimum": 0},
                "kind": {"$ref": "#/components/schemas/Kind", "description": "which"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            },
        },
        "Open": {"type": "object", "additionalProperties": {"type": "integer"}},
    }}});
    let v = Schemas::of(&doc);
    let thing = json!({"$ref": "#/components/schemas/Thing"});
    let good = json!({"id": "thing_1", "at": "2026-01-31T12:00:00.000000Z", "n": null,
                      "kind": "a", "tags": ["x"], "extra": true});
    assert!(
        v.errors(&thing, &good).is_empty(),
        "{:?}",
        v.errors(&thing, &good)
    );
    assert!(
        v.errors(
            &thing,
            &json!({"id": "thing_1", "at": "2026-01-31T12:00:00+02:00", "n": 3})
        )
        .is_empty()
    );

    // Each bad value fails at the place and with the keyword expected.
    let fails = |value: Value, at: &str, keyword: &str| {
        let errors = v.errors(&thing, &value);
        assert!(
            errors.iter().any(|e| e.at == at && e.keyword == keyword),
            "{value} should fail {keyword} at {at:?}, got {errors:?}"
        );
    };
    fails(json!({"at": "2026-01-31T12:00:00Z"}), "", "required");
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "color": "red"}),
        "",
        "additionalProperties",
    );
    fails(
        json!({"id": 7, "at": "2026-01-31T12:00:00Z"}),
        "/id",
        "type",
    );
    fails(
        json!({"id": "other_1", "at": "2026-01-31T12:00:00Z"}),
        "/id",
        "pattern",
    );
    for at in ["yesterday", "2026-13-01T00:00:00Z", "2026-01-31T12:00:00"] {
        fails(json!({"id": "thing_1", "at": at}), "/at", "format");
    }
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "n": -1}),
        "/n",
        "minimum",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "n": 1.5}),
        "/n",
        "type",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "kind": "c"}),
        "/kind",
        "oneOf",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "tags": [1]}),
        "/tags/0",
        "type",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "extra": "yes"}),
        "/extra",
        "anyOf",
    );
    fails(json!([]), "", "type");
    let open = json!({"$ref": "#/components/schemas/Open"});
    assert!(v.errors(&open, &json!({"a": 1, "b": 2})).is_empty());
    assert!(!v.errors(&open, &json!({"a": "1"})).is_empty());
    assert!(
        !v.errors(&json!({"$ref": "#/components/schemas/Nope"}), &json!(1))
            .is_empty()
    );

    // And against the real document: an agent answer without the agent's fields fails, and
    // so does one with an undocumented field.
    let doc = document();
    let v = Schemas::of(doc);
    let schema = &doc["paths"]["/api/agents/{agent_id}"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    let errors = v.errors(
        schema,
        &json!({"success": true, "data": {"agent_id": "agent_1"}}),
    );
    assert!(
        errors.iter().any(|e| e.at == "/data"
            && e.keyword == "required"
            && e.message.contains("agent_name")),
        "{errors:?}"
    );
    let errors = v.errors(schema, &json!({"success": true, "data": {}, "extra": 1}));
    assert!(
        errors
            .iter()
            .any(|e| e.keyword == "additionalProperties" && e.message.contains("extra")),
        "{errors:?}"
    );
}
