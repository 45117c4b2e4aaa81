//! The OpenAPI 3.1 document of the API, served by `GET /api/openapi.json`.
//!
//! The document is generated, not written:
//!
//! - **Paths** come from the operations' declarations ([`crate::operation`]), the ones the
//!   resolver itself uses: each gives the method, the template, the operationId (the
//!   handler's name, which is the `Service` method it calls), the authentication, the
//!   conditional behaviour, the summary, the description and the error statuses the rest does
//!   not imply; its area gives the tag.
//! - **What an operation takes and answers** comes from its handler's types
//!   (`src/endpoint.rs`): the credentials it extracts, the struct its query string is read
//!   into (whose fields become the query parameters), its body type and its answer type
//!   (`Data<Agent>`, `Page<Call>`, `Outcome<Tool>`, …). A handler cannot read or answer
//!   anything the document does not say.
//! - **Path parameters** come from the template's `{name}` segments; an id parameter gets the
//!   prefix of the [`voiceplane_core::ids::IdKind`] whose field name it is.
//! - **Schemas** of request and response types, envelopes and the error body included, are
//!   derived from the Rust types that serialize and deserialize them, with `schemars`
//!   (`#[derive(JsonSchema)]`; the core's behind its `openapi` feature), which follows their
//!   serde attributes (renames, `skip_serializing`, `flatten`, `deny_unknown_fields`, `Option`
//!   as `null`). Response types are generated under the serialize contract, request bodies
//!   under the deserialize contract. JSON Schema 2020-12 is the dialect of OpenAPI 3.1, so the
//!   schemas are used as they are, except that an enum written as a `oneOf` of `const`s
//!   becomes an `enum` (`generators.rs`), the form code generators read.
//! - The security schemes, the shared headers and the error statuses' descriptions are written
//!   here by hand, as is `servers` (`/`: the server that answers this document); which error
//!   statuses an operation has follows [`crate::status_for`] and
//!   the adapter's own checks (`http/README.md`).
//!
//! The document is built once, on first use, and served as bytes. The workspace's suite
//! checks it against the route table and validates real responses of a scenario against the
//! schemas it declares.

mod examples;
mod generators;
mod paths;
pub(crate) mod spec;
mod webhooks;

use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};
use voiceplane_core::ids::IdKind;

use self::spec::{OpSpec, Output, Schemas};
use crate::endpoint::Reply;
use crate::error::ErrorBody;
use crate::operation::{Area, Auth};
use crate::response::ResponseBody;

/// The OpenAPI version the document declares.
pub const OPENAPI_VERSION: &str = "3.1.0";

/// The OpenAPI 3.1 document of the operations of `areas` (the API's: [`crate::ops::AREAS`]),
/// built on first use. Also [`crate::openapi_document`].
pub fn document(areas: &'static [Area]) -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let built = build(areas);
        for problem in &built.problems {
            tracing::error!(%problem, "the OpenAPI document is incomplete");
        }
        built.document
    })
}

/// The answer of `GET /api/openapi.json`: `document` as JSON bytes, serialized once.
fn response(document: &'static Value) -> Response<ResponseBody> {
    static BYTES: OnceLock<Bytes> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| Bytes::from(serde_json::to_vec(document).unwrap_or_default()));
    let mut response = Response::new(crate::response::full(bytes.clone()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The API's document, as an operation's answer.
pub(crate) struct OpenApiDocument(pub(crate) &'static Value);

impl Reply for OpenApiDocument {
    fn into_response(self) -> Response<ResponseBody> {
        response(self.0)
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "OK (no envelope).",
            schema: json!({
                "type": "object",
                "description": "An OpenAPI 3.1 document.",
                "required": ["openapi", "info", "paths", "components"],
                "properties": {
                    "openapi": {"type": "string", "description": "The OpenAPI version."},
                    "info": {"type": "object", "description": "Title, version, license."},
                    "paths": {"type": "object", "description": "Every operation, by path."},
                    "components": {"type": "object", "description": "Schemas and the rest."},
                },
                "additionalProperties": true,
            }),
        };
    }
}

/// A built document and what went wrong building it (always empty unless a route or a type
/// changed in a way this module does not handle; the unit tests assert that).
struct Built {
    document: Value,
    problems: Vec<String>,
}

/// Builds the document from the operations' declarations, each described by its handler's
/// types.
fn build(areas: &[Area]) -> Built {
    let mut problems = Vec::new();
    let mut schemas = Schemas::new();
    let mut paths = Map::new();
    let mut tags = Vec::new();
    for area in areas {
        tags.push(json!({"name": area.tag, "description": area.about}));
        for operation in area.operations {
            let spec = operation.describe(&mut schemas);
            let declared = operation.template.matches('{').count();
            if spec.path_params != declared {
                problems.push(format!(
                    "{operation:?}: the handler takes {} path parameters, the template has \
                     {declared}",
                    spec.path_params
                ));
            }
            if spec.credentials.unwrap_or(Auth::None) != operation.auth {
                problems.push(format!(
                    "{operation:?}: the handler takes {:?}, the declaration says {:?}",
                    spec.credentials, operation.auth
                ));
            }
            let item = paths
                .entry(operation.template.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            item[operation.method.to_ascii_lowercase()] =
                paths::operation(operation, area.tag, &spec);
        }
    }
    let error = schemas.out::<ErrorBody>();
    let webhooks = webhooks::webhooks(&mut schemas);

    let components = schemas.into_components(&mut problems);

    let mut error_responses = Map::new();
    for (status, name, description) in paths::ERRORS {
        // Every 503 says when to try again (`ApiError`'s one constructor adds the header).
        let headers: &[(&str, &str)] = if *status == 503 {
            &[("Retry-After", "RetryAfter")]
        } else {
            &[]
        };
        error_responses.insert(
            (*name).to_owned(),
            paths::response_object(description, paths::json_content(error.clone()), headers),
        );
    }

    let mut document = json!({
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "voiceplane",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Organization-scoped control plane for AI voice agents.",
            "description": "Every `/api/*` operation acts in the organization named by \
                `X-Organization-Id`, with an API key (`X-API-Key`) or a bearer JWT. Successful \
                answers are `{\"success\": true, \"data\": …}` (lists add `pagination`, state \
                changes add `message`), except the voice and membership lists, which have \
                their own shapes. Errors are `{\"detail\": \"…\"}`. Every response carries \
                `X-Request-Id`.",
            "license": {"name": env!("CARGO_PKG_LICENSE"), "identifier": env!("CARGO_PKG_LICENSE")},
        },
        "tags": tags,
        "servers": [{
            "url": "/",
            "description": "The server that serves this document; the API is under `/api`.",
        }],
        "security": [{"ApiKey": []}, {"Bearer": []}],
        "paths": paths,
        "webhooks": webhooks,
        "components": {
            "schemas": components,
            "responses": error_responses,
            "parameters": {
                "IfMatch": {
                    "name": "If-Match",
                    "in": "header",
                    "required": false,
                    "description": "Entity tags (or `*`); when the resource's current `ETag` \
                        is not among them, the answer is 412 and nothing changes.",
                    "schema": {"type": "string"},
                },
                "IfNoneMatch": {
                    "name": "If-None-Match",
                    "in": "header",
                    "required": false,
                    "description": "Entity tags (or `*`); when the current `ETag` is among \
                        them (weak comparison), the answer is 304 without a body.",
                    "schema": {"type": "string"},
                },
                "OrganizationId": {
                    "name": "X-Organization-Id",
                    "in": "header",
                    "required": true,
                    "description": "The organization the request acts in.",
                    "schema": {"type": "string", "pattern": format!("^{}", IdKind::Organization.prefix())},
                },
                "RequestId": {
                    "name": "X-Request-Id",
                    "in": "header",
                    "required": false,
                    "description": "An id of the caller's for this request: logged with it and \
                        sent back in the response's `X-Request-Id`. Any other value (or none) \
                        gets a generated id instead.",
                    "schema": {
                        "type": "string",
                        "pattern": format!("^[!-~]{{1,{}}}$", crate::MAX_REQUEST_ID_LEN),
                    },
                },
                "IdempotencyKey": {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": false,
                    "description": "Makes a retry safe: the same key from the same credential with the same method, path and body within 24 h gets the first answer again (status, body, `Content-Type`, `Location`) with `Idempotent-Replayed: true`. Another request under the key: 422; the first still running: 409. 5xx answers (and 408, 409, 425, 429) are not kept, so their retry runs again.",
                    "schema": {"type": "string", "description": "1 to 255 visible ASCII characters (400 otherwise)."},
                },
            },
            "headers": {
                "Location": {
                    "required": true,
                    "description": "Where the new resource is: a reference relative to the \
                        request's URL (`agents/agent_…` for `POST …/api/agents`), so that it \
                        resolves under any prefix the API is mounted at.",
                    "schema": {"type": "string", "format": "uri-reference"},
                },
                "ETag": {
                    "required": true,
                    "description": "Strong entity tag of the representation; send it in \
                        `If-None-Match` (GET, 304 when unchanged) or `If-Match` (PATCH, DELETE, \
                        412 when changed).",
                    "schema": {"type": "string"},
                },
                "RequestId": {
                    "required": true,
                    "description": "The caller's `X-Request-Id` when it sent a sane one, else a generated id.",
                    "schema": {"type": "string"},
                },
                "ContentDisposition": {
                    "required": true,
                    "description": "`attachment; filename=\"recording_<to_number>.wav\"`.",
                    "schema": {"type": "string"},
                },
                "ContentLength": {
                    "required": true,
                    "description": "Size of the body in bytes.",
                    "schema": {"type": "integer", "minimum": 0},
                },
                "ContentRange": {
                    "required": true,
                    "description": "`bytes <first>-<last>/<size>`.",
                    "schema": {"type": "string"},
                },
                "RetryAfter": {
                    "required": true,
                    "description": "Seconds to wait before trying again.",
                    "schema": {"type": "integer", "minimum": 0, "examples": [crate::error::RETRY_AFTER_SECS]},
                },
                "AcceptRanges": {
                    "required": true,
                    "description": "`bytes`.",
                    "schema": {"type": "string"},
                },
            },
            "securitySchemes": {
                "ApiKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-API-Key",
                    "description": "An API key secret (`vpk_…`); it acts with its own role in its own organization.",
                },
                "Bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "A JWT whose `sub` is the user id; the role is the user's membership role in the organization.",
                },
            },
        },
    });
    generators::enums_for_generators(&mut document);
    generators::defaults_as_prose(&mut document);
    examples::add(&mut document);
    Built { document, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> &'static Value {
        super::document(crate::ops::AREAS)
    }

    fn response() -> Response<ResponseBody> {
        super::response(document())
    }

    #[test]
    fn builds_without_problems() {
        let built = build(crate::ops::AREAS);
        assert!(built.problems.is_empty(), "{:#?}", built.problems);
        let doc = &built.document;
        assert_eq!(doc["openapi"], OPENAPI_VERSION);
        for op in crate::ops::operations() {
            let item = &doc["paths"][op.template][op.method.to_ascii_lowercase()];
            assert_eq!(item["operationId"], op.id, "{op:?}");
        }
    }

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<&str> = Vec::new();
        for item in document()["paths"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
        {
            for op in item.as_object().into_iter().flat_map(|o| o.values()) {
                let id = op["operationId"].as_str().unwrap_or_default();
                assert!(!ids.contains(&id), "duplicate operationId {id}");
                ids.push(id);
            }
        }
        assert_eq!(ids.len(), crate::ops::operations().count());
    }

    #[test]
    fn schemas_follow_serde() {
        let schemas = &document()["components"]["schemas"];
        // skip_serializing: the agent's organization is not part of its shape.
        assert!(schemas["Agent"]["properties"]["client_id"].is_null());
        // rename: the document's kind is `type`.
        assert!(schemas["Document"]["properties"]["type"].is_object());
        // flatten: the created key has the key's fields and the secret.
        let created = &schemas["CreatedApiKey"]["properties"];
        assert!(created["key_id"].is_object() && created["api_key"].is_object());
        // deny_unknown_fields on request bodies.
        assert_eq!(schemas["NewAgent"]["additionalProperties"], false);
        // Timestamps are RFC 3339 strings; optional ones may be null.
        assert_eq!(
            schemas["Call"]["properties"]["created_at"],
            json!({"type": "string", "format": "date-time", "description": "When the call was recorded."})
        );
        assert_eq!(
            schemas["Call"]["properties"]["end_time"]["type"],
            json!(["string", "null"])
        );
        // PATCH bodies: `null` clears, absence keeps.
        let update = &schemas["PhoneNumberUpdate"];
        assert_eq!(
            update["properties"]["assigned_agent_id"]["type"],
            json!(["string", "null"])
        );
        assert!(update["required"].as_array().is_none_or(|r| r.is_empty()));
    }

    #[test]
    fn webhooks_describe_every_event_type() {
        let webhooks = document()["webhooks"].as_object().unwrap();
        assert_eq!(webhooks.len(), voiceplane_core::model::EventType::ALL.len());
        for &event_type in voiceplane_core::model::EventType::ALL {
            let name = event_type.as_str();
            let post = &webhooks[name]["post"];
            let body = &post["requestBody"]["content"]["application/json"]["schema"];
            assert_eq!(body["properties"]["type"]["const"], name);
            assert!(
                post["summary"].as_str().is_some_and(|s| s != name),
                "{name}"
            );
        }
        let agent = &webhooks["agent.created"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"]["data"];
        assert_eq!(agent["$ref"], "#/components/schemas/Agent");
        assert!(document()["components"]["schemas"]["RecordingReady"].is_object());
    }

    /// Every 503 of the document, wherever it is declared, says when to retry.
    #[test]
    fn every_503_declares_retry_after() {
        let doc = document();
        let mut seen = 0;
        for item in doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
        {
            for op in item.as_object().into_iter().flat_map(|o| o.values()) {
                let Some(response) = op["responses"].get("503") else {
                    continue;
                };
                let response = match response["$ref"].as_str() {
                    Some(r) => doc
                        .pointer(r.trim_start_matches('#'))
                        .unwrap_or(&Value::Null),
                    None => response,
                };
                let header = &response["headers"]["Retry-After"];
                let header = match header["$ref"].as_str() {
                    Some(r) => doc
                        .pointer(r.trim_start_matches('#'))
                        .unwrap_or(&Value::Null),
                    None => header,
                };
                assert_eq!(header["schema"]["type"], "integer", "{}", op["operationId"]);
                seen += 1;
            }
        }
        assert!(seen > 50, "only {seen} operations declare a 503");
    }

    #[tokio::test]
    async fn served_as_json_bytes() {
        use http_body_util::BodyExt;
        let r = response();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        let bytes = r.into_body().collect().await.map(|b| b.to_bytes());
        let value: Value = serde_json::from_slice(&bytes.unwrap_or_default()).unwrap_or_default();
        assert_eq!(&value, document());
    }
}
