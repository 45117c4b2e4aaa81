//! The path items of the document: one operation object per route, with its parameters,
//! request body and responses, and the error responses every operation may refer to.

use serde_json::{Map, Value, json};
use voiceplane_core::ids::IdKind;

use super::spec::{Input, OpSpec, Output};
use crate::operation::{Auth, Conditional, Operation};

/// `{"$ref": "#/components/parameters/<name>"}`.
pub(super) fn param_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/parameters/{name}")})
}

/// `application/json` content of this schema.
/// The names of a template's `{param}` segments, in order.
fn template_params(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// The error responses: status, component name, description.
pub(super) const ERRORS: &[(u16, &str, &str)] = &[
    (
        400,
        "BadRequest",
        "Bad input: a malformed path id, query parameter or body field, invalid JSON, an \
         undecodable cursor, an unknown provider, or a missing or malformed `X-Organization-Id`.",
    ),
    (
        401,
        "Unauthorized",
        "The credential is missing, malformed, unknown, expired or revoked.",
    ),
    (
        403,
        "Forbidden",
        "Authenticated, but the role lacks the permission, or the credential belongs to \
         another organization.",
    ),
    (
        404,
        "NotFound",
        "No such resource, or one of another organization.",
    ),
    (
        408,
        "RequestTimeout",
        "The request body did not arrive within the server's read deadline; nothing was \
         changed. Send it again, faster or in smaller parts.",
    ),
    (
        409,
        "Conflict",
        "The change conflicts with the current state (a duplicate, or a reference that \
         blocks it; or the first request with this `Idempotency-Key` is still running); the \
         detail says what to do first.",
    ),
    (
        412,
        "PreconditionFailed",
        "`If-Match` does not match the resource's current `ETag` (or `If-None-Match` does); \
         nothing was changed.",
    ),
    (
        413,
        "PayloadTooLarge",
        "The request body exceeds the server's limit.",
    ),
    (
        415,
        "UnsupportedMediaType",
        "The request's `Content-Type` is not one this operation accepts.",
    ),
    (
        416,
        "RangeNotSatisfiable",
        "The requested range lies outside the recording.",
    ),
    (
        422,
        "UnprocessableContent",
        "The request cannot be carried out as things stand (the sentence says why: a number \
         with no integration, a provider that does not have it), or its `Idempotency-Key` was \
         already used with a different request (method, path or body).",
    ),
    (
        429,
        "TooManyRequests",
        "The credential spent its rate limit, or the client address too many failed \
         authentications (when the server sets rate limits); `Retry-After` says how many \
         seconds to wait.",
    ),
    (
        502,
        "BadGateway",
        "An upstream provider failed or answered garbage; the detail names it.",
    ),
    (
        503,
        "ServiceUnavailable",
        "The database, object storage or a needed provider is unavailable or not configured.",
    ),
];

/// The path parameter `{name}`: an id of the kind whose field it is, or a plain string.
fn path_param(name: &str) -> Value {
    let (description, schema) = match IdKind::ALL.iter().find(|k| k.field() == name) {
        Some(kind) => (
            format!("An id starting with `{}`.", kind.prefix()),
            json!({"type": "string", "pattern": format!("^{}", kind.prefix())}),
        ),
        None => (format!("The `{name}` segment."), json!({"type": "string"})),
    };
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "description": description,
        "schema": schema,
    })
}

/// The error statuses of an operation on a route whose template has `has_path_params`:
/// those its authentication, parameters and body imply, plus the ones its route declares.
/// Public operations declare all of theirs.
fn error_statuses(meta: &Operation, op: &OpSpec, has_path_params: bool) -> Vec<u16> {
    let mut statuses: Vec<u16> = meta.errors.to_vec();
    if meta.conditional != Conditional::None {
        statuses.push(412);
    }
    if meta.method == "POST" {
        // `Idempotency-Key`: still running, or used with another request.
        statuses.extend([409, 422]);
    }
    if meta.auth == Auth::Provider {
        // A bad signature; too many of them for the integration; telephony not configured.
        statuses.extend([400, 403, 413, 429, 503]);
    } else if meta.auth != Auth::None {
        statuses.extend([401, 403, 503]);
        if meta.auth == Auth::Organization {
            statuses.push(429);
        }
        if meta.auth == Auth::Organization || has_path_params || !op.parameters.is_empty() {
            statuses.push(400);
        }
        if has_path_params {
            statuses.push(404);
        }
    }
    match op.input {
        Input::None => {}
        Input::EmptyJson => statuses.push(415),
        Input::Json(_) | Input::JsonOrMultipart(_) => statuses.extend([400, 413, 415]),
        // A CSV body is read within a deadline.
        Input::JsonOrCsv(_) => statuses.extend([400, 408, 413, 415]),
        Input::Audio => statuses.extend([413, 415]),
        Input::Form => statuses.push(413),
    }
    statuses.sort_unstable();
    statuses.dedup();
    statuses
}

/// A response object with `X-Request-Id` and these extra headers and content.
pub(super) fn response_object(
    description: &str,
    content: Value,
    headers: &[(&str, &str)],
) -> Value {
    let mut hs = Map::new();
    hs.insert(
        "X-Request-Id".to_owned(),
        json!({"$ref": "#/components/headers/RequestId"}),
    );
    for (name, header_ref) in headers {
        hs.insert(
            (*name).to_owned(),
            json!({"$ref": format!("#/components/headers/{header_ref}")}),
        );
    }
    json!({"description": description, "headers": hs, "content": content})
}

/// The schema of raw bytes of `media_type`. `format: binary` is what code generators read
/// (as a file or byte stream); `contentMediaType` is the JSON Schema 2020-12 form of the same.
fn binary(media_type: &str) -> Value {
    json!({"type": "string", "format": "binary", "contentMediaType": media_type})
}

pub(super) fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

/// The `responses` object of an operation.
fn responses(meta: &Operation, op: &OpSpec, has_path_params: bool) -> Map<String, Value> {
    let mut out = Map::new();
    let audio = json!({
        "audio/wav": {"schema": binary("audio/wav")},
        "audio/mpeg": {"schema": binary("audio/mpeg")},
    });
    match &op.output {
        Output::Json {
            status,
            description,
            schema,
        } => {
            // Every 201 says where the new resource is; views and their updates carry a tag.
            let mut headers = Vec::new();
            if *status == http::StatusCode::CREATED {
                headers.push(("Location", "Location"));
            }
            let tagged = matches!(
                meta.conditional,
                Conditional::TaggedView | Conditional::TaggedWrite
            );
            if tagged {
                headers.push(("ETag", "ETag"));
            }
            out.insert(
                status.as_u16().to_string(),
                response_object(description, json_content(schema.clone()), &headers),
            );
            if let Some((also, description)) = op.also {
                out.insert(
                    also.as_u16().to_string(),
                    response_object(description, json_content(schema.clone()), &[]),
                );
            }
            if meta.conditional == Conditional::TaggedView {
                out.insert(
                    "304".to_owned(),
                    json!({
                        "description": "Not modified: `If-None-Match` matches the current \
                            `ETag`. No body.",
                        "headers": {
                            "X-Request-Id": {"$ref": "#/components/headers/RequestId"},
                            "ETag": {"$ref": "#/components/headers/ETag"},
                        },
                    }),
                );
            }
        }
        Output::AudioAttachment => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "The recording's bytes, as an attachment named `recording_<to_number>.wav`.",
                    json!({"audio/wav": {"schema": binary("audio/wav")}}),
                    &[
                        ("Content-Disposition", "ContentDisposition"),
                        ("Content-Length", "ContentLength"),
                    ],
                ),
            );
        }
        Output::Xml => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "The TwiML document that tells Twilio what to do with the call.",
                    json!({"text/xml": {
                        "schema": {"type": "string"},
                        "example": voiceplane_core::telephony::twiml::connect_stream(
                            "wss://runtime.example.com/media/call_0123456789abcdef01234567",
                            "call_0123456789abcdef01234567",
                            "agent_0123456789ab",
                            None,
                        ),
                    }}),
                    &[],
                ),
            );
        }
        Output::WebSocket => {
            out.insert(
                "101".to_owned(),
                response_object(
                    "The connection is now a WebSocket carrying the call's media stream.",
                    json!({}),
                    &[],
                ),
            );
        }
        Output::AudioRange => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "The whole recording.",
                    audio.clone(),
                    &[
                        ("Accept-Ranges", "AcceptRanges"),
                        ("Content-Length", "ContentLength"),
                    ],
                ),
            );
            out.insert(
                "206".to_owned(),
                response_object(
                    "The requested range of the recording.",
                    audio,
                    &[
                        ("Content-Range", "ContentRange"),
                        ("Content-Length", "ContentLength"),
                    ],
                ),
            );
        }
    }
    for status in error_statuses(meta, op, has_path_params) {
        if let Some((_, name, _)) = ERRORS.iter().find(|(s, _, _)| *s == status) {
            out.insert(
                status.to_string(),
                json!({"$ref": format!("#/components/responses/{name}")}),
            );
        }
    }
    out
}

/// The `requestBody` object of an operation, if it has one.
fn request_body(input: &Input) -> Option<Value> {
    let body = match input {
        Input::None => return None,
        Input::Json(schema) => json!({"required": true, "content": json_content(schema.clone())}),
        Input::EmptyJson => json!({
            "description": "Not read; the request must nevertheless be sent as `application/json`.",
            "required": false,
            "content": json_content(json!({})),
        }),
        Input::JsonOrMultipart(schema) => json!({
            "required": true,
            "content": {
                "application/json": {"schema": schema},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": {
                            "file": {
                                "type": "string",
                                "format": "binary",
                                "contentMediaType": "application/octet-stream",
                                "description": "The file; its name and type are taken from the part.",
                            },
                            "name": {
                                "type": "string",
                                "description": "The document's name; the file name by default.",
                            },
                        },
                    },
                },
            },
        }),
        Input::JsonOrCsv(schema) => json!({
            "required": true,
            "content": {
                "application/json": {"schema": schema},
                "text/csv": {
                    "schema": {
                        "type": "string",
                        "description": "A header row naming the columns (`to_number` required, \
                            `timezone` optional, every other column a dynamic variable), then \
                            one recipient per row; at most 100,000 rows and 10 MiB.",
                    },
                    "example": "to_number,timezone,first_name\n+14155550101,America/Los_Angeles,Ada\n",
                },
            },
        }),
        Input::Form => json!({
            "required": true,
            "content": {
                "application/x-www-form-urlencoded": {
                    "schema": {
                        "type": "object",
                        "description": "The provider's fields (`CallSid`, `From`, `To`, \
                            `CallStatus`, …), every one covered by the signature.",
                        "additionalProperties": {"type": "string"},
                    },
                    "example": {
                        "CallSid": "CA0123456789abcdef0123456789abcdef",
                        "AccountSid": "AC0123456789abcdef0123456789abcdef",
                        "From": "+33612345678",
                        "To": "+14155550100",
                        "Direction": "inbound",
                        "CallStatus": "ringing",
                    },
                },
            },
        }),
        Input::Audio => json!({
            "description": "The recording's bytes, streamed. Sent as `application/octet-stream`, \
                the format is told by the first bytes (`RIFF….WAVE` is WAV; an `ID3` tag or an \
                MPEG frame sync is MP3); anything else is refused with 400 \
                \"the recording is neither WAV nor MP3\".",
            "required": true,
            "content": {
                "audio/wav": {"schema": binary("audio/wav")},
                "audio/mpeg": {"schema": binary("audio/mpeg")},
                "application/octet-stream": {"schema": binary("application/octet-stream")},
            },
        }),
    };
    Some(body)
}

/// The operation object of the operation `meta` of the area tagged `tag`, described by `op`.
pub(super) fn operation(meta: &Operation, tag: &str, op: &OpSpec) -> Value {
    let mut params: Vec<Value> = template_params(meta.template).map(path_param).collect();
    let has_path_params = !params.is_empty();
    if meta.auth == Auth::Organization {
        params.push(param_ref("OrganizationId"));
    }
    params.extend(op.parameters.iter().cloned());
    if meta.conditional != Conditional::None {
        params.push(param_ref("IfMatch"));
        if meta.conditional == Conditional::TaggedView {
            params.push(param_ref("IfNoneMatch"));
        }
    }
    // Every operation takes the caller's own request id. Declaring it also makes
    // openapi-python-client (0.29) import `Unset` in every endpoint module, which its template
    // uses but forgets to import for a required body of two media types
    // (openapi-generators/openapi-python-client#1451: `document_create`'s JSON or multipart).
    params.push(param_ref("RequestId"));
    if meta.method == "POST" {
        params.push(param_ref("IdempotencyKey"));
    }

    let mut object = Map::new();
    object.insert("operationId".to_owned(), json!(meta.id));
    object.insert("summary".to_owned(), json!(meta.summary));
    object.insert("description".to_owned(), json!(meta.description));
    object.insert("tags".to_owned(), json!([tag]));
    match meta.auth {
        Auth::Organization => {}
        Auth::None => {
            object.insert("security".to_owned(), json!([]));
        }
        Auth::Invitee => {
            object.insert("security".to_owned(), json!([{"Bearer": []}]));
        }
        // The provider's signature, checked by the operation, is the credential.
        Auth::Provider => {
            object.insert("security".to_owned(), json!([]));
        }
    }
    if !params.is_empty() {
        object.insert("parameters".to_owned(), Value::Array(params));
    }
    if let Some(body) = request_body(&op.input) {
        object.insert("requestBody".to_owned(), body);
    }
    object.insert(
        "responses".to_owned(),
        Value::Object(responses(meta, op, has_path_params)),
    );
    Value::Object(object)
}
