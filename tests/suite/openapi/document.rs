//! The document itself: structurally OpenAPI 3.1 (security schemes, operation ids,
//! parameters, responses whose errors are `{detail}`), every `$ref` resolving, every schema
//! using only the keywords [`schema`](super::schema) accounts for, and exactly the router's
//! routes documented.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use voiceplane_suite::{TestContext, TestServer, http_client};

use super::schema::{ANNOTATIONS, Schemas, VALIDATED, walk_schema};
use super::{deref, document, operations, resolve};

/// Every schema of the document: components, parameters, request and response bodies.
fn all_schemas(doc: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        out.push((format!("components.schemas.{name}"), schema));
    }
    for (method, template, op) in operations(doc) {
        let here = format!("{method} {template}");
        for p in op["parameters"].as_array().into_iter().flatten() {
            let p = deref(doc, p);
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
            let response = deref(doc, response);
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
                let ok = r.as_str().and_then(|r| resolve(doc, r)).is_some();
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

#[test]
fn the_document_is_openapi_3_1() {
    let doc = document();
    let v = Schemas::of(doc);
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

    // Every schema uses only keywords the validation accounts for.
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
        "keywords the validation does not account for: {unknown:#?}"
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
            .map(|p| deref(doc, p))
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

        // Responses: a success (`101` for a WebSocket), and errors that are `{detail}`.
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2') || s == "101"),
            "{here}: no success response"
        );
        for (status, response) in responses {
            let code: u16 = status
                .parse()
                .unwrap_or_else(|_| panic!("{here}: status {status}"));
            let response = deref(doc, response);
            assert!(
                response["description"].is_string(),
                "{here} {status}: no description"
            );
            if code >= 400 {
                let schema = &response["content"]["application/json"]["schema"];
                assert_eq!(
                    deref(doc, schema)["required"],
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

/// Every declared operation is in the document's `paths` and nothing else is, and
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

    let routes: BTreeSet<(String, String)> = voiceplane_http::ops::operations()
        .map(|op| (op.method.to_owned(), op.template.to_owned()))
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

/// Every `oneOf` in `value` whose alternatives are all `const` schemas, by where it is.
fn const_one_ofs(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(alts)) = map.get("oneOf")
                && alts.iter().all(|a| a.get("const").is_some())
            {
                found.push(at.to_owned());
            }
            for (k, v) in map {
                const_one_ofs(v, &format!("{at}/{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                const_one_ofs(v, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn the_document_suits_code_generators() {
    let doc = document();

    // Enums are `enum`s, not unions of constants, and keep their values' descriptions.
    let mut found = Vec::new();
    const_one_ofs(doc, "#", &mut found);
    assert!(found.is_empty(), "oneOf of consts at {found:#?}");
    let status = &doc["components"]["schemas"]["CallStatus"];
    assert_eq!(status["type"], "string", "{status}");
    let values = status["enum"].as_array().expect("CallStatus has an enum");
    assert!(values.contains(&json!("completed")), "{status}");

    // Raw bytes are `format: binary`, in and out.
    let recording =
        &doc["paths"]["/api/calls/{call_sid}/recording"]["put"]["requestBody"]["content"];
    let file = &doc["paths"]["/api/knowledge-base"]["post"]["requestBody"]["content"]["multipart/form-data"]
        ["schema"]["properties"]["file"];
    let download = &doc["paths"]["/api/calls/{call_sid}/recording/download"]["get"]["responses"]["200"]
        ["content"]["audio/wav"]["schema"];
    for (what, schema) in [
        ("recording upload (WAV)", &recording["audio/wav"]["schema"]),
        ("recording upload (MP3)", &recording["audio/mpeg"]["schema"]),
        ("knowledge-base file part", file),
        ("recording download", download),
    ] {
        assert_eq!(schema["type"], "string", "{what}: {schema}");
        assert_eq!(schema["format"], "binary", "{what}: {schema}");
    }

    // Where to send requests: the server that serves the document.
    assert_eq!(doc["servers"][0]["url"], "/", "{}", doc["servers"]);
}
