//! The OpenAPI document (`GET /api/openapi.json`) against the code:
//!
//! - every `(method, template)` of the router's table is documented, and nothing else is, and
//!   the document is structurally OpenAPI 3.1 with every `$ref` resolving (`document`);
//! - the answers of a realistic scenario (every operation at least once, plus errors) validate
//!   against the schema the document declares for their route and status, and the JSON
//!   bodies the scenario sends validate against the documented request schemas (`checker`,
//!   `scenario`), with the `jsonschema` crate, strictly (`schema`);
//! - every JSON request body and success response has an example, and every example
//!   validates against its schema (`examples`).

mod checker;
mod document;
mod examples;
mod scenario;
mod schema;
mod steps;

use serde_json::Value;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn document() -> &'static Value {
    voiceplane_http::openapi_document()
}

/// Every `(METHOD, template, operation)` of the document.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (template, item) in doc["paths"].as_object().expect("paths is an object") {
        for (method, op) in item.as_object().expect("a path item is an object") {
            if METHODS.contains(&method.as_str()) {
                out.push((method.to_ascii_uppercase(), template.clone(), op));
            }
        }
    }
    out
}

/// The target of a local reference such as `#/components/schemas/Call` in `doc`.
fn resolve<'d>(doc: &'d Value, reference: &str) -> Option<&'d Value> {
    doc.pointer(reference.strip_prefix('#')?)
}

/// `value` itself, or what it refers to in `doc` when it is a `{"$ref": …}` object.
fn deref<'d>(doc: &'d Value, value: &'d Value) -> &'d Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(doc, r).unwrap_or_else(|| panic!("unresolvable $ref {r}")),
        None => value,
    }
}
