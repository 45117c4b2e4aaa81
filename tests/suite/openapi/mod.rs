//! The OpenAPI document (`GET /api/openapi.json`) against the code:
//!
//! - every `(method, template)` of the router's table is documented, and nothing else is;
//! - the document is structurally OpenAPI 3.1 and every `$ref` in it resolves;
//! - the answers of a realistic scenario (every operation at least once, plus errors) validate
//!   against the schema the document declares for their route and status, and the JSON
//!   bodies the scenario sends validate against the documented request schemas.
//!
//! The JSON Schema validator is written here and covers exactly the keywords the document
//! uses; a test fails when the document starts using another one. It validates strictly: an
//! object schema with `properties` and no `additionalProperties` is treated as closed, so an
//! answer carrying an undocumented field fails.
//!
//! Run on SQLite only: `cargo test --test openapi`; add `VOICEPLANE_TEST_POSTGRES_URL` for both.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::signing::UrlSigner;
use voiceplane_http::router::{ROUTES, resolve};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, agent_body, db_tests, http_client, jwt_for, merged,
    mount_twilio_account, mount_voice_catalogue, telephony, voice_providers,
};
use wiremock::MockServer;

const TWILIO_SID: &str = "AC00000000000000000000000000000001";
const TWILIO_TOKEN: &str = "auth-token-for-tests";

// ---------------------------------------------------------------------------------------
// A validator for the subset of JSON Schema 2020-12 the document uses.
// ---------------------------------------------------------------------------------------

/// Keywords the validator checks.
const VALIDATED: &[&str] = &[
    "$ref",
    "type",
    "const",
    "enum",
    "format",
    "minimum",
    "maximum",
    "pattern",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "oneOf",
    "anyOf",
    "allOf",
];

/// Keywords that only annotate.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "$comment",
];

/// Validates JSON values against schemas of one document, whose `$ref`s it resolves.
struct Validator<'d> {
    doc: &'d Value,
}

impl<'d> Validator<'d> {
    /// The target of a local reference such as `#/components/schemas/Call`.
    fn resolve(&self, reference: &str) -> Option<&'d Value> {
        self.doc.pointer(reference.strip_prefix('#')?)
    }

    /// `value` itself, or what it refers to when it is a `{"$ref": …}` object.
    fn deref(&self, value: &'d Value) -> &'d Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .resolve(r)
                .unwrap_or_else(|| panic!("unresolvable $ref {r}")),
            None => value,
        }
    }

    /// Every way `value` fails `schema`; empty when it passes.
    fn errors(&self, schema: &Value, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(schema, value, "$", &mut errors);
        errors
    }

    fn check(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let s = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                errors.push(format!("{at}: no value is allowed here, got {value}"));
                return;
            }
            Value::Object(s) => s,
            other => {
                errors.push(format!("{at}: {other} is not a schema"));
                return;
            }
        };
        if let Some(reference) = s.get("$ref") {
            match reference.as_str().and_then(|r| self.resolve(r)) {
                Some(target) => self.check(target, value, at, errors),
                None => errors.push(format!("{at}: unresolvable $ref {reference}")),
            }
        }
        if let Some(types) = s.get("type") {
            let types: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !types.iter().any(|t| has_type(t, value)) {
                errors.push(format!("{at}: expected {types:?}, got {value}"));
                return;
            }
        }
        if let Some(c) = s.get("const")
            && c != value
        {
            errors.push(format!("{at}: expected {c}, got {value}"));
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            errors.push(format!("{at}: {value} is not one of {options:?}"));
        }
        if let (Some("date-time"), Some(text)) =
            (s.get("format").and_then(Value::as_str), value.as_str())
            && !is_rfc3339(text)
        {
            errors.push(format!("{at}: {text:?} is not an RFC 3339 date-time"));
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = s.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                errors.push(format!("{at}: {n} is below the minimum {min}"));
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                errors.push(format!("{at}: {n} is above the maximum {max}"));
            }
        }
        if let (Some(pattern), Some(text)) =
            (s.get("pattern").and_then(Value::as_str), value.as_str())
        {
            // Only `^literal` prefixes appear in the document.
            match pattern.strip_prefix('^') {
                Some(prefix)
                    if prefix
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    if !text.starts_with(prefix) {
                        errors.push(format!("{at}: {text:?} does not match {pattern}"));
                    }
                }
                _ => errors.push(format!("{at}: unsupported pattern {pattern}")),
            }
        }
        if let Some(object) = value.as_object() {
            let properties = s.get("properties").and_then(Value::as_object);
            for name in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !object.contains_key(name) {
                    errors.push(format!("{at}: required `{name}` is missing"));
                }
            }
            for (name, v) in object {
                let here = format!("{at}.{name}");
                match (
                    properties.and_then(|p| p.get(name)),
                    s.get("additionalProperties"),
                ) {
                    (Some(p), _) => self.check(p, v, &here, errors),
                    (None, Some(additional)) => self.check(additional, v, &here, errors),
                    // Strict: a documented object is closed.
                    (None, None) if properties.is_some() => {
                        errors.push(format!("{here}: not in the documented properties"));
                    }
                    (None, None) => {}
                }
            }
        }
        if let (Some(items), Some(array)) = (s.get("items"), value.as_array()) {
            for (i, v) in array.iter().enumerate() {
                self.check(items, v, &format!("{at}[{i}]"), errors);
            }
        }
        let passes = |sub: &Value| self.errors(sub, value).is_empty();
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for sub in all {
                self.check(sub, value, at, errors);
            }
        }
        if let Some(any) = s.get("anyOf").and_then(Value::as_array)
            && !any.iter().any(passes)
        {
            errors.push(format!("{at}: {value} matches none of anyOf"));
        }
        if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
            let matching = one.iter().filter(|sub| passes(sub)).count();
            if matching != 1 {
                errors.push(format!(
                    "{at}: {value} matches {matching} of oneOf, not exactly one"
                ));
            }
        }
    }
}

fn has_type(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            .then(|| s[r].parse::<u32>().unwrap_or(u32::MAX))
    };
    let date_time_ok = matches!(
        (
            digits(0..4),
            digits(5..7),
            digits(8..10),
            digits(11..13),
            digits(14..16),
            digits(17..19)
        ),
        (
            Some(_),
            Some(1..=12),
            Some(1..=31),
            Some(0..=23),
            Some(0..=59),
            Some(0..=60)
        )
    ) && b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't'))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':');
    if !date_time_ok {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// Calls `f` on every schema inside `schema` (itself included), without following `$ref`s.
fn walk_schema(schema: &Value, at: &str, f: &mut dyn FnMut(&str, &Value)) {
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

// ---------------------------------------------------------------------------------------
// Reading the document.
// ---------------------------------------------------------------------------------------

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn document() -> &'static Value {
    voiceplane_http::openapi::document()
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

/// Every schema of the document: components, parameters, request and response bodies.
fn all_schemas(doc: &Value) -> Vec<(String, &Value)> {
    let v = Validator { doc };
    let mut out = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        out.push((format!("components.schemas.{name}"), schema));
    }
    for (method, template, op) in operations(doc) {
        let here = format!("{method} {template}");
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = v.deref(p);
            out.push((format!("{here} parameter {}", p["name"]), &p["schema"]));
        }
        for (ct, media) in op["requestBody"]["content"]
            .as_object()
            .into_iter()
            .flatten()
        {
            out.push((format!("{here} request {ct}"), &media["schema"]));
        }
        for (status, response) in op["responses"].as_object().unwrap() {
            let response = v.deref(response);
            for (ct, media) in response["content"].as_object().into_iter().flatten() {
                out.push((format!("{here} {status} {ct}"), &media["schema"]));
            }
        }
    }
    out
}

fn check_refs(doc: &Value, value: &Value, at: &str, bad: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref") {
                let ok = r
                    .as_str()
                    .and_then(|r| Validator { doc }.resolve(r))
                    .is_some();
                if !ok {
                    bad.push(format!("{at}: $ref {r} does not resolve"));
                }
            }
            for (k, v) in map {
                check_refs(doc, v, &format!("{at}/{k}"), bad);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_refs(doc, v, &format!("{at}/{i}"), bad);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Tests of the document itself.
// ---------------------------------------------------------------------------------------

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
    let v = Validator { doc: &doc };
    let thing = json!({"$ref": "#/components/schemas/Thing"});
    let good = json!({"id": "thing_1", "at": "2026-01-31T12:00:00.000000Z", "n": null,
                      "kind": "a", "tags": ["x"], "extra": true});
    assert_eq!(v.errors(&thing, &good), Vec::<String>::new());
    assert!(
        v.errors(
            &thing,
            &json!({"id": "thing_1", "at": "2026-01-31T12:00:00+02:00", "n": 3})
        )
        .is_empty()
    );

    let fails = |value: Value, expected: &str| {
        let errors = v.errors(&thing, &value);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{value} should fail with {expected:?}, got {errors:?}"
        );
    };
    fails(
        json!({"at": "2026-01-31T12:00:00Z"}),
        "required `id` is missing",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "color": "red"}),
        "$.color: not in the documented properties",
    );
    fails(
        json!({"id": 7, "at": "2026-01-31T12:00:00Z"}),
        "$.id: expected [\"string\"]",
    );
    fails(
        json!({"id": "other_1", "at": "2026-01-31T12:00:00Z"}),
        "does not match ^thing_",
    );
    fails(
        json!({"id": "thing_1", "at": "yesterday"}),
        "not an RFC 3339 date-time",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-13-01T00:00:00Z"}),
        "not an RFC 3339 date-time",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00"}),
        "not an RFC 3339 date-time",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "n": -1}),
        "below the minimum",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "n": 1.5}),
        "$.n: expected",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "kind": "c"}),
        "matches 0 of oneOf",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "tags": [1]}),
        "$.tags[0]: expected",
    );
    fails(
        json!({"id": "thing_1", "at": "2026-01-31T12:00:00Z", "extra": "yes"}),
        "matches none of anyOf",
    );
    fails(json!([]), "expected [\"object\"]");
    let open = json!({"$ref": "#/components/schemas/Open"});
    assert!(v.errors(&open, &json!({"a": 1, "b": 2})).is_empty());
    assert!(!v.errors(&open, &json!({"a": "1"})).is_empty());
    assert!(
        !v.errors(&json!({"$ref": "#/components/schemas/Nope"}), &json!(1))
            .is_empty()
    );

    // And against the real document: an agent answer without the agent's fields fails.
    let doc = document();
    let v = Validator { doc };
    let schema = &doc["paths"]["/api/agents/{agent_id}"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    let errors = v.errors(
        schema,
        &json!({"success": true, "data": {"agent_id": "agent_1"}}),
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("required `agent_name` is missing")),
        "{errors:?}"
    );
    let errors = v.errors(schema, &json!({"success": true, "data": {}, "extra": 1}));
    assert!(errors.iter().any(|e| e.contains("$.extra")), "{errors:?}");
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = document();
    let v = Validator { doc };
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    assert!(doc["paths"].as_object().is_some_and(|p| !p.is_empty()));

    // Security: an API key header and an HTTP bearer JWT, both offered everywhere by default.
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(
        schemes["ApiKey"],
        json!({"type": "apiKey", "in": "header", "name": "X-API-Key",
        "description": schemes["ApiKey"]["description"]})
    );
    assert_eq!(schemes["Bearer"]["type"], "http");
    assert_eq!(schemes["Bearer"]["scheme"], "bearer");
    assert_eq!(schemes["Bearer"]["bearerFormat"], "JWT");
    assert_eq!(doc["security"], json!([{"ApiKey": []}, {"Bearer": []}]));

    // Every $ref resolves.
    let mut bad = Vec::new();
    check_refs(doc, doc, "#", &mut bad);
    assert!(bad.is_empty(), "{bad:#?}");

    // Every schema uses only keywords the validator understands.
    let mut unknown = BTreeSet::new();
    for (at, schema) in all_schemas(doc) {
        walk_schema(schema, &at, &mut |at, s| {
            for key in s.as_object().into_iter().flat_map(|o| o.keys()) {
                if !VALIDATED.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
                    unknown.insert(format!("{at}: {key}"));
                }
            }
        });
    }
    assert!(
        unknown.is_empty(),
        "keywords the validator does not know: {unknown:#?}"
    );

    let mut ids = BTreeSet::new();
    for (method, template, op) in operations(doc) {
        let here = format!("{method} {template}");
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{here}: no operationId"));
        assert!(
            ids.insert(id.to_owned()),
            "{here}: duplicate operationId {id}"
        );
        assert!(op["summary"].is_string(), "{here}: no summary");

        // Path parameters are exactly the template's placeholders, required.
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| v.deref(p))
            .collect();
        for p in &params {
            assert!(
                p["name"].is_string() && p["schema"].is_object(),
                "{here}: {p}"
            );
            assert!(
                ["path", "query", "header"].contains(&p["in"].as_str().unwrap()),
                "{here}: {p}"
            );
        }
        let placeholders: Vec<&str> = template
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let in_path: Vec<&str> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(placeholders, in_path, "{here}: path parameters");
        assert!(
            params
                .iter()
                .filter(|p| p["in"] == "path")
                .all(|p| p["required"] == true)
        );

        // Organization-scoped operations take the organization header; the others say which
        // credentials they take instead.
        let org = params
            .iter()
            .find(|p| p["in"] == "header" && p["name"] == "X-Organization-Id");
        match op.get("security") {
            None => {
                let org = org.unwrap_or_else(|| panic!("{here}: no X-Organization-Id"));
                assert_eq!(org["required"], true, "{here}");
            }
            Some(security) => {
                assert!(org.is_none(), "{here}");
                for requirement in security.as_array().unwrap() {
                    for scheme in requirement.as_object().unwrap().keys() {
                        assert!(
                            schemes[scheme].is_object(),
                            "{here}: unknown scheme {scheme}"
                        );
                    }
                }
            }
        }

        // Responses: a success, and errors that are `{detail}`.
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2')),
            "{here}: no success response"
        );
        for (status, response) in responses {
            let code: u16 = status
                .parse()
                .unwrap_or_else(|_| panic!("{here}: status {status}"));
            let response = v.deref(response);
            assert!(
                response["description"].is_string(),
                "{here} {status}: no description"
            );
            if code >= 400 {
                let schema = &response["content"]["application/json"]["schema"];
                assert_eq!(
                    v.deref(schema)["required"],
                    json!(["detail"]),
                    "{here} {status}"
                );
                assert!(
                    v.errors(schema, &json!({"detail": "no such agent"}))
                        .is_empty()
                );
            }
        }
        for (ct, media) in op["requestBody"]["content"]
            .as_object()
            .into_iter()
            .flatten()
        {
            assert!(
                media["schema"].is_object(),
                "{here}: request {ct} has no schema"
            );
        }
    }
    assert!(
        [
            "health_ready",
            "agent_view",
            "call_list",
            "api_key_revoke",
            "recording_stream"
        ]
        .iter()
        .all(|id| ids.contains(*id)),
        "{ids:?}"
    );
}

/// Every route of the router's table is in the document's `paths` and nothing else is, and
/// the routes this document was written with are among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_documented_and_nothing_else() {
    let ctx = TestContext::sqlite().await;
    let server = TestServer::start(&ctx).await;
    // Served without credentials, as JSON, and identical to the library's document.
    let resp = http_client()
        .get(server.url("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let served: Value = resp.json().await.unwrap();
    server.stop().await;
    ctx.cleanup().await;
    assert_eq!(&served, document());

    let routes: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
        .collect();
    let documented: BTreeSet<(String, String)> = operations(&served)
        .into_iter()
        .map(|(m, t, _)| (m, t))
        .collect();
    let missing: Vec<String> = routes
        .difference(&documented)
        .map(|(m, t)| format!("{m} {t}"))
        .collect();
    let extra: Vec<String> = documented
        .difference(&routes)
        .map(|(m, t)| format!("{m} {t}"))
        .collect();
    assert!(
        missing.is_empty(),
        "routes missing from the OpenAPI document: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "documented paths that are not routes: {extra:?}"
    );

    for (m, t) in [
        ("GET", "/api/openapi.json"),
        ("PUT", "/api/calls/{call_sid}/recording"),
        ("GET", "/api/calls/{call_sid}/recording/stream"),
        ("GET", "/api/calls/{call_sid}/recording/download"),
        ("GET", "/recordings/{organization_id}/{file}"),
    ] {
        assert!(
            routes.contains(&(m.to_owned(), t.to_owned())),
            "{m} {t} is not a route"
        );
    }
    let kb = &served["paths"]["/api/knowledge-base"]["post"]["requestBody"]["content"];
    assert!(kb["application/json"].is_object() && kb["multipart/form-data"].is_object());
}

// ---------------------------------------------------------------------------------------
// Real answers against the documented schemas.
// ---------------------------------------------------------------------------------------

/// What a request carries as its body.
enum Body {
    None,
    /// JSON that must itself match the documented request schema.
    Json(Value),
    /// JSON sent as it is (for requests meant to fail).
    Unchecked(Value),
    /// Raw bytes with a `Content-Type`.
    Raw(String, Vec<u8>),
}

/// A decoded answer.
struct Answer {
    status: StatusCode,
    json: Value,
    bytes: Vec<u8>,
}

/// Sends requests and checks each answer against the document.
struct Checker {
    api: ApiCaller,
    /// `METHOD template status` of every checked answer.
    seen: Arc<Mutex<BTreeSet<String>>>,
}

impl Checker {
    /// The same checker (and record of answers) for another caller.
    fn as_caller(&self, api: ApiCaller) -> Self {
        Self {
            api,
            seen: self.seen.clone(),
        }
    }

    fn with_key(&self, key: Option<&str>) -> Self {
        self.as_caller(ApiCaller {
            key: key.map(str::to_owned),
            bearer: None,
            ..self.api.clone()
        })
    }

    fn with_bearer(&self, token: &str) -> Self {
        self.as_caller(ApiCaller {
            org: None,
            ..self.api.with_bearer(token)
        })
    }

    async fn send(&self, m: Method, path_and_query: &str, body: Body) -> Answer {
        self.send_with(m, path_and_query, body, &[]).await
    }

    async fn send_with(
        &self,
        m: Method,
        path_and_query: &str,
        body: Body,
        headers: &[(&str, &str)],
    ) -> Answer {
        let doc = document();
        let v = Validator { doc };
        let path = path_and_query.split('?').next().unwrap();
        let route = resolve(&m, path).unwrap_or_else(|e| panic!("{m} {path}: {e:?}"));
        let (_, template) = route.definition();
        let op = &doc["paths"][template][m.as_str().to_ascii_lowercase()];
        assert!(op.is_object(), "{m} {template} is not documented");

        let mut req = self.api.request(m.clone(), path_and_query);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        req = match body {
            Body::None => req,
            Body::Json(value) => {
                let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                assert!(
                    schema.is_object() || schema.is_boolean(),
                    "{m} {template} takes no JSON"
                );
                let errors = v.errors(schema, &value);
                assert!(
                    errors.is_empty(),
                    "request to {m} {template} does not match its documented schema: {errors:#?}\n{value}"
                );
                req.json(&value)
            }
            Body::Unchecked(value) => req.json(&value),
            Body::Raw(content_type, bytes) => req.header("content-type", content_type).body(bytes),
        };
        let resp = req.send().await.expect("request is answered");
        let status = resp.status();
        let resp_headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body").to_vec();
        let here = format!("{m} {template} {}", status.as_u16());

        let documented = op["responses"].get(status.as_str()).unwrap_or_else(|| {
            panic!(
                "{m} {path_and_query} answered {status}, which the document does not list for \
                 {m} {template}: {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        let documented = v.deref(documented);
        for (name, header) in documented["headers"].as_object().into_iter().flatten() {
            if v.deref(header)["required"] == true {
                assert!(
                    resp_headers.contains_key(name.as_str()),
                    "{here}: no {name} header"
                );
            }
        }
        let content_type = resp_headers
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap()
            .trim()
            .to_owned();
        let content = documented["content"]
            .as_object()
            .expect("documented content");
        assert!(
            content.contains_key(&content_type),
            "{here}: Content-Type {content_type:?} is not one of {:?}",
            content.keys().collect::<Vec<_>>()
        );
        let mut json = Value::Null;
        if content_type == "application/json" {
            json = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{here}: {e}"));
            let errors = v.errors(&content[&content_type]["schema"], &json);
            assert!(
                errors.is_empty(),
                "{m} {path_and_query} answered {status} with a body that does not match the \
                 documented schema: {errors:#?}\n{json:#}"
            );
        }
        self.seen.lock().unwrap().insert(here);
        Answer {
            status,
            json,
            bytes,
        }
    }

    /// Sends and requires `expected`; returns the JSON body.
    async fn expect(&self, m: Method, path: &str, body: Body, expected: u16) -> Value {
        let answer = self.send(m.clone(), path, body).await;
        assert_eq!(
            answer.status.as_u16(),
            expected,
            "{m} {path}: {}",
            answer.json
        );
        answer.json
    }
}

/// An agent that records its calls.
fn recording_agent(name: &str) -> Value {
    merged(agent_body(name), json!({"recording_enabled": true}))
}

/// Fake upstreams on one server: twilio's account probe, both voice providers.
async fn fake_upstreams() -> MockServer {
    let upstream = MockServer::start().await;
    mount_twilio_account(&upstream, TWILIO_SID, TWILIO_TOKEN).await;
    mount_voice_catalogue(&upstream).await;
    upstream
}

/// A few bytes of a WAV file.
fn wav_bytes() -> Vec<u8> {
    let mut bytes = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
    bytes.extend_from_slice(&[0u8; 32]);
    bytes
}

fn str_of<'v>(v: &'v Value, field: &str) -> &'v str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("no string `{field}` in {v}"))
}

async fn responses_match_the_documented_schemas(ctx: &TestContext) {
    use Method as M;

    let upstream = fake_upstreams().await;
    let upstream_url = upstream.uri();
    let blobs = Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap());
    let server = TestServer::start_at(ctx, voiceplane_http::HttpConfig::default(), |s, base| {
        s.with_telephony(telephony(&upstream_url))
            .with_voice_providers(voice_providers(&upstream_url, Some(("p1-key", "p2-key"))))
            .with_blobs(blobs)
            .with_recording_urls(base, UrlSigner::new(b"openapi-test-signing-key-0123456789"))
    })
    .await;
    let c = Checker {
        api: ApiCaller::bootstrap(ctx, &server, "Acme").await,
        seen: Arc::default(),
    };
    let anonymous = c.as_caller(ApiCaller {
        org: None,
        ..c.with_key(None).api
    });

    // Health and the document itself: no credentials.
    anonymous.expect(M::GET, "/healthz", Body::None, 200).await;
    anonymous.expect(M::GET, "/readyz", Body::None, 200).await;
    anonymous
        .expect(M::GET, "/api/openapi.json", Body::None, 200)
        .await;

    // API keys.
    let user_key = c
        .expect(
            M::POST,
            "/api/api-keys",
            Body::Json(json!({"name": "reader", "role": "user"})),
            201,
        )
        .await;
    let user = c.with_key(Some(str_of(&user_key["data"], "api_key")));
    let temp = c
        .expect(
            M::POST,
            "/api/api-keys",
            Body::Json(json!({"name": "temp", "role": "agent_manager",
                              "expires_at": "2099-01-01T00:00:00Z"})),
            201,
        )
        .await;
    c.expect(M::GET, "/api/api-keys?limit=2", Body::None, 200)
        .await;
    let revoked = c
        .expect(
            M::DELETE,
            &format!("/api/api-keys/{}", str_of(&temp["data"], "key_id")),
            Body::None,
            200,
        )
        .await;
    assert_eq!(revoked["data"]["status"], "revoked");

    // Agents.
    let agent = c
        .expect(
            M::POST,
            "/api/agents",
            Body::Json(recording_agent("Front desk")),
            201,
        )
        .await["data"]
        .clone();
    let agent_id = str_of(&agent, "agent_id");
    c.expect(M::GET, &format!("/api/agents/{agent_id}"), Body::None, 200)
        .await;
    c.expect(M::GET, "/api/agents", Body::None, 200).await;
    c.expect(
        M::PATCH,
        &format!("/api/agents/{agent_id}"),
        Body::Json(json!({"system_prompt": "Be kind.", "llm_temperature": 0.3})),
        200,
    )
    .await;
    let spare = c
        .expect(
            M::POST,
            "/api/agents",
            Body::Json(recording_agent("Spare")),
            201,
        )
        .await;
    c.expect(
        M::DELETE,
        &format!("/api/agents/{}", str_of(&spare["data"], "agent_id")),
        Body::None,
        200,
    )
    .await;

    // Tools.
    let tool_body = json!({
        "tool_name": "lookup_order", "tool_description": "Looks up an order",
        "url": "https://example.com/orders", "http_method": "GET",
        "headers": {"X-Token": "t"}, "timeout_seconds": 10,
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    });
    let tool = c
        .expect(M::POST, "/api/tools", Body::Json(tool_body.clone()), 201)
        .await["data"]
        .clone();
    let tool_id = str_of(&tool, "tool_id");
    c.expect(M::POST, "/api/tools", Body::Json(tool_body), 409)
        .await;
    let tools = c.expect(M::GET, "/api/tools", Body::None, 200).await;
    assert_eq!(tools["pagination"]["total_count"], 1);
    c.expect(M::GET, &format!("/api/tools/{tool_id}"), Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &format!("/api/tools/{tool_id}"),
        Body::Json(json!({"timeout_seconds": 20})),
        200,
    )
    .await;

    // Knowledge base: JSON text and a multipart file.
    let doc = c
        .expect(
            M::POST,
            "/api/knowledge-base",
            Body::Json(json!({"name": "FAQ", "text": "We open at nine."})),
            201,
        )
        .await["data"]
        .clone();
    let doc_id = str_of(&doc, "documentation_id");
    let boundary = "voiceplane-openapi-boundary";
    let multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nPrices\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"prices.txt\"\r\n\
         Content-Type: text/plain\r\n\r\nTea: 3 EUR\r\n--{boundary}--\r\n"
    );
    let file_doc = c
        .expect(
            M::POST,
            "/api/knowledge-base",
            Body::Raw(
                format!("multipart/form-data; boundary={boundary}"),
                multipart.into_bytes(),
            ),
            201,
        )
        .await;
    assert_eq!(file_doc["data"]["type"], "file");
    c.expect(M::GET, "/api/knowledge-base", Body::None, 200)
        .await;
    c.expect(
        M::GET,
        &format!("/api/knowledge-base/{doc_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/knowledge-base/{doc_id}"),
        Body::Json(json!({"name": "Opening hours"})),
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!(
            "/api/knowledge-base/{}",
            str_of(&file_doc["data"], "documentation_id")
        ),
        Body::None,
        200,
    )
    .await;

    // Integrations and phone numbers.
    let integration = c
        .expect(
            M::POST,
            "/api/integrations",
            Body::Json(
                json!({"name": "Main", "provider": "twilio", "category": "telephony",
                "credentials": {"account_sid": TWILIO_SID, "auth_token": TWILIO_TOKEN}}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let integration_id = str_of(&integration, "integration_id");
    c.expect(M::GET, "/api/integrations", Body::None, 200).await;
    c.expect(
        M::GET,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/integrations/{integration_id}"),
        Body::Json(json!({"name": "Main line"})),
        200,
    )
    .await;
    let validated = c
        .expect(
            M::POST,
            &format!("/api/integrations/{integration_id}/validate"),
            Body::Json(json!({})),
            200,
        )
        .await;
    assert_eq!(validated["data"]["status"], "active");
    let number = c
        .expect(
            M::POST,
            "/api/phone-numbers",
            Body::Json(
                json!({"phone_number": "+14155550100", "integration_id": integration_id,
                              "assigned_agent_id": agent_id}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let number_id = str_of(&number, "phone_number_id");
    c.expect(M::GET, "/api/phone-numbers", Body::None, 200)
        .await;
    c.expect(
        M::GET,
        &format!("/api/phone-numbers/{number_id}"),
        Body::None,
        200,
    )
    .await;
    let unassigned = c
        .expect(
            M::PATCH,
            &format!("/api/phone-numbers/{number_id}"),
            Body::Json(json!({"assigned_agent_id": null})),
            200,
        )
        .await;
    assert_eq!(unassigned["data"]["assigned_agent_id"], Value::Null);
    c.expect(
        M::DELETE,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        409,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!("/api/phone-numbers/{number_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        200,
    )
    .await;

    // Calls, pages and recordings.
    let new_call = json!({"agent_id": agent_id, "to_number": "+14155550123",
                          "from_number": "+14155550199", "call_type": "outbound"});
    c.expect(M::POST, "/api/calls", Body::Json(new_call.clone()), 201)
        .await;
    let call = c
        .expect(M::POST, "/api/calls", Body::Json(new_call), 201)
        .await["data"]
        .clone();
    let call_sid = str_of(&call, "call_sid");
    let first = c
        .expect(M::GET, "/api/calls?limit=1", Body::None, 200)
        .await;
    let cursor = str_of(&first["pagination"], "next_cursor");
    let last = c
        .expect(
            M::GET,
            &format!("/api/calls?limit=1&cursor={cursor}"),
            Body::None,
            200,
        )
        .await;
    assert_eq!(last["pagination"]["next_cursor"], Value::Null);
    c.expect(M::GET, &format!("/api/calls/{call_sid}"), Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &format!("/api/calls/{call_sid}"),
        Body::Json(
            json!({"status": "completed", "start_time": "2026-01-01T00:00:00Z",
            "end_time": "2026-01-01T00:01:30Z", "total_cost": 1.5, "turn_count": 4,
            "end_reason": "user_hangup", "billing_status": "billed"}),
        ),
        200,
    )
    .await;
    let recording = format!("/api/calls/{call_sid}/recording");
    c.expect(M::GET, &format!("{recording}/stream"), Body::None, 404)
        .await;
    c.expect(
        M::PUT,
        &recording,
        Body::Raw("text/plain".to_owned(), b"not audio".to_vec()),
        415,
    )
    .await;
    c.expect(
        M::PUT,
        &recording,
        Body::Raw("audio/wav".to_owned(), wav_bytes()),
        200,
    )
    .await;
    let link = c
        .expect(M::GET, &format!("{recording}/stream"), Body::None, 200)
        .await;
    let download = c
        .send(M::GET, &format!("{recording}/download"), Body::None)
        .await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(download.bytes, wav_bytes());
    // The stream URL is served by this server; its path and query are what matter.
    let url = str_of(&link["data"], "url");
    let signed = &url[url.find("/recordings/").expect("a self-signed URL")..];
    let whole = anonymous.send(M::GET, signed, Body::None).await;
    assert_eq!((whole.status, whole.bytes), (StatusCode::OK, wav_bytes()));
    let part = anonymous
        .send_with(M::GET, signed, Body::None, &[("range", "bytes=0-3")])
        .await;
    assert_eq!(
        (part.status, part.bytes),
        (StatusCode::PARTIAL_CONTENT, b"RIFF".to_vec())
    );
    let outside = anonymous
        .send_with(M::GET, signed, Body::None, &[("range", "bytes=100000-")])
        .await;
    assert_eq!(outside.status, StatusCode::RANGE_NOT_SATISFIABLE);
    // Change the signature's last hex digit, whatever it is, so the URL really differs.
    let last = if signed.ends_with('0') { "1" } else { "0" };
    let tampered = format!("{}{last}", &signed[..signed.len() - 1]);
    anonymous.expect(M::GET, &tampered, Body::None, 403).await;

    // Voices.
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_one&gender=male",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_two&query=calm",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_one&query=fail",
        Body::None,
        502,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/search?provider=provider_three",
        Body::None,
        400,
    )
    .await;
    c.expect(
        M::GET,
        "/api/voices/provider_two/library?use_cases=news&use_cases=audiobook&page=0&page_size=10",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::POST,
        "/api/voices/provider_two/library/add",
        Body::Json(json!({"public_owner_id": "own-1", "voice_id": "sh-1", "name": "Deep"})),
        200,
    )
    .await;

    // Invitations and members.
    let invitation = c
        .expect(
            M::POST,
            "/api/auth/organizations/invitations",
            Body::Json(json!({"email": "new@example.com", "role": "agent_manager"})),
            201,
        )
        .await["data"]
        .clone();
    let withdrawn = c
        .expect(
            M::POST,
            "/api/auth/organizations/invitations",
            Body::Json(json!({"email": "gone@example.com", "role": "user"})),
            201,
        )
        .await;
    c.expect(
        M::GET,
        "/api/auth/organizations/invitations",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!(
            "/api/auth/organizations/invitations/{}",
            str_of(&withdrawn["data"], "invite_id")
        ),
        Body::None,
        200,
    )
    .await;
    let invitee = c.with_bearer(&jwt_for("user_newcomer", Some("new@example.com"), 3600));
    let member = invitee
        .expect(
            M::POST,
            &format!(
                "/api/auth/invitations/{}/accept",
                str_of(&invitation, "invite_id")
            ),
            Body::None,
            200,
        )
        .await["data"]
        .clone();
    let membership = format!(
        "/api/auth/organizations/members/{}",
        str_of(&member, "membership_id")
    );
    c.expect(M::GET, "/api/auth/organizations/members", Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &membership,
        Body::Json(json!({"role": "user"})),
        200,
    )
    .await;
    c.expect(M::DELETE, &membership, Body::None, 200).await;

    // Errors: `{detail}` with the documented statuses.
    c.with_key(None)
        .expect(M::GET, "/api/agents", Body::None, 401)
        .await;
    user.expect(
        M::POST,
        "/api/agents",
        Body::Json(recording_agent("Nope")),
        403,
    )
    .await;
    c.expect(
        M::GET,
        "/api/agents/agent_0000000000000000",
        Body::None,
        404,
    )
    .await;
    c.expect(M::GET, "/api/agents/not-an-id", Body::None, 400)
        .await;
    c.expect(M::GET, "/api/calls?limit=0", Body::None, 400)
        .await;
    c.expect(M::GET, "/api/calls?cursor=garbage", Body::None, 400)
        .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Unchecked(json!({"agent_name": "x", "colour": "blue"})),
        400,
    )
    .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Raw("text/plain".to_owned(), b"hello".to_vec()),
        415,
    )
    .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Unchecked(json!({"agent_name": "x".repeat(1_100_000)})),
        413,
    )
    .await;
    c.expect(M::DELETE, &format!("/api/tools/{tool_id}"), Body::None, 200)
        .await;

    server.stop().await;

    // Every success answer the document lists was produced and checked at least once.
    let seen = c.seen.lock().unwrap().clone();
    let mut unexercised = Vec::new();
    for (method, template, op) in operations(document()) {
        for status in op["responses"].as_object().unwrap().keys() {
            let key = format!("{method} {template} {status}");
            if status.starts_with('2') && !seen.contains(&key) {
                unexercised.push(key);
            }
        }
    }
    assert!(
        unexercised.is_empty(),
        "documented success answers the scenario did not check: {unexercised:#?}"
    );
    let errors_checked = seen
        .iter()
        .filter(|k| !k.ends_with(" 200") && !k.ends_with(" 201") && !k.ends_with(" 206"))
        .count();
    assert!(errors_checked >= 10, "{seen:#?}");
}

db_tests!(responses_match_the_documented_schemas);
