//! The OpenAPI 3.1 document of the API, served by `GET /api/openapi.json`.
//!
//! The document is generated, not written:
//!
//! - **Paths** come from [`ROUTES`], the route table the resolver itself uses. Each
//!   `(method, template)` is resolved to its [`Route`] variant, and `describe` — one
//!   exhaustive `match` over the variants — says what the route takes and returns: its
//!   operationId (the `Service` method, `<resource>_<verb>`), how it authenticates, its query
//!   parameters, its request body type, its success status and response type, and the error
//!   statuses that apply beyond those implied by the rest. A new route that is not described
//!   is a compile error here.
//! - **Path parameters** come from the template's `{name}` segments; an id parameter gets the
//!   prefix of the [`IdKind`] whose field name it is.
//! - **Schemas** of request and response types are derived from the core's own Rust types with
//!   `schemars` (`#[derive(JsonSchema)]` behind `voiceplane-core`'s `openapi` feature), which
//!   follows their serde attributes (renames, `skip_serializing`, `flatten`,
//!   `deny_unknown_fields`, `Option` as `null`). Response types are generated under the
//!   serialize contract, request bodies under the deserialize contract. JSON Schema 2020-12
//!   is the dialect of OpenAPI 3.1, so the schemas are used as they are.
//! - **Envelopes** (`{success, data}`, lists with `pagination`, `{success, message, data}`),
//!   the error body `{detail}`, the security schemes and the shared parameters are written
//!   here by hand; the error statuses follow [`crate::status_for`] and the adapter's own
//!   checks (`http/README.md`).
//!
//! The document is built once, on first use, and served as bytes. The workspace's
//! `tests/openapi.rs` checks it against the route table and validates real responses of a
//! scenario against the schemas it declares.

use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode, header};
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};
use voiceplane_core::ids::IdKind;
use voiceplane_core::model::{
    Agent, AgentUpdate, ApiKey, Call, CallUpdate, CreatedApiKey, Document, DocumentUpdate,
    Integration, IntegrationUpdate, Invitation, Member, MemberUpdate, NewAgent, NewApiKey, NewCall,
    NewIntegration, NewInvitation, NewPhoneNumber, NewTextDocument, NewTool, PhoneNumber,
    PhoneNumberUpdate, RecordingLink, Tool, ToolSummary, ToolUpdate,
};
use voiceplane_core::page::{DEFAULT_LIMIT, MAX_LIMIT};
use voiceplane_core::voice::{
    AddedVoice, DEFAULT_LIBRARY_PAGE_SIZE, DEFAULT_LIBRARY_SORT, DEFAULT_SEARCH_PAGE_SIZE,
    LibraryAddInput, LibraryVoice, MAX_VOICE_PAGE_SIZE, Voice, VoicePage, VoiceProviderName,
};

use crate::ResponseBody;
use crate::router::{ROUTES, Route, resolve};

/// The OpenAPI version the document declares.
pub const OPENAPI_VERSION: &str = "3.1.0";

/// Where component schemas live in the document.
const SCHEMAS: &str = "#/components/schemas/";

/// The OpenAPI 3.1 document of every route, built on first use.
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let built = build();
        for problem in &built.problems {
            tracing::error!(%problem, "the OpenAPI document is incomplete");
        }
        built.document
    })
}

/// The answer of `GET /api/openapi.json`: the document as JSON bytes, serialized once.
pub(crate) fn response() -> Response<ResponseBody> {
    static BYTES: OnceLock<Bytes> = OnceLock::new();
    let bytes =
        BYTES.get_or_init(|| Bytes::from(serde_json::to_vec(document()).unwrap_or_default()));
    let mut response = Response::new(crate::body::full(bytes.clone()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A built document and what went wrong building it (always empty unless a route or a type
/// changed in a way this module does not handle; the unit tests assert that).
struct Built {
    document: Value,
    problems: Vec<String>,
}

/// How an operation authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// No credentials.
    Public,
    /// `X-API-Key` or a bearer JWT, plus `X-Organization-Id`.
    Organization,
    /// A bearer JWT only, without `X-Organization-Id` (accepting an invitation).
    BearerOnly,
}

/// What an operation reads from the request body.
enum Input {
    /// Nothing.
    None,
    /// A JSON body of this schema.
    Json(Value),
    /// No body, but `Content-Type: application/json` is required.
    EmptyJson,
    /// JSON of this schema, or `multipart/form-data` with a `file` and an optional `name`.
    JsonOrMultipart(Value),
    /// Raw audio bytes (`audio/wav` or `audio/mpeg`).
    Audio,
}

/// What an operation answers when it succeeds.
enum Output {
    /// `{"success": true, "data": …}` with this status.
    Data(StatusCode, Value),
    /// A cursor list of items of this schema; with `total_count` when the flag is set.
    List(Value, bool),
    /// `200 {"success": true, "message": …, "data": …}`.
    Outcome(Value),
    /// `200` with this schema and no envelope.
    Bare(Value),
    /// `200` with the recording's bytes as an `audio/wav` attachment.
    AudioAttachment,
    /// `200` or `206` with a recording's bytes, honouring `Range`.
    AudioRange,
}

/// The description of one route.
struct Op {
    /// operationId: the `Service` method, `<resource>_<verb>`.
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
    auth: Auth,
    query: Vec<Value>,
    input: Input,
    output: Output,
    /// Error statuses beyond those implied by the authentication, the path parameters, the
    /// query parameters and the input.
    errors: &'static [u16],
}

fn op(id: &'static str, tag: &'static str, summary: &'static str) -> Op {
    Op {
        id,
        tag,
        summary,
        auth: Auth::Organization,
        query: Vec::new(),
        input: Input::None,
        output: Output::Bare(json!({})),
        errors: &[],
    }
}

impl Op {
    fn public(mut self) -> Self {
        self.auth = Auth::Public;
        self
    }

    fn bearer_only(mut self) -> Self {
        self.auth = Auth::BearerOnly;
        self
    }

    fn json(mut self, schema: Value) -> Self {
        self.input = Input::Json(schema);
        self
    }

    fn input(mut self, input: Input) -> Self {
        self.input = input;
        self
    }

    fn query(mut self, params: Vec<Value>) -> Self {
        self.query = params;
        self
    }

    fn ok(mut self, data: Value) -> Self {
        self.output = Output::Data(StatusCode::OK, data);
        self
    }

    fn created(mut self, data: Value) -> Self {
        self.output = Output::Data(StatusCode::CREATED, data);
        self
    }

    /// A cursor list; reads `limit` and `cursor`.
    fn list(mut self, item: Value, total_count: bool) -> Self {
        self.query = vec![param_ref("Limit"), param_ref("Cursor")];
        self.output = Output::List(item, total_count);
        self
    }

    fn outcome(mut self, data: Value) -> Self {
        self.output = Output::Outcome(data);
        self
    }

    fn bare(mut self, schema: Value) -> Self {
        self.output = Output::Bare(schema);
        self
    }

    fn output(mut self, output: Output) -> Self {
        self.output = output;
        self
    }

    fn errors(mut self, errors: &'static [u16]) -> Self {
        self.errors = errors;
        self
    }
}

/// The schemas of request and response types, from the types themselves.
struct Schemas {
    /// Response types: the serialize contract (`skip_serializing` fields are left out,
    /// `Option` fields are present and may be `null`).
    responses: SchemaGenerator,
    /// Request bodies: the deserialize contract (fields with defaults are optional, unknown
    /// fields are refused where serde refuses them).
    requests: SchemaGenerator,
}

impl Schemas {
    fn new() -> Self {
        let settings = SchemaSettings::draft2020_12().with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        });
        Self {
            responses: settings.clone().for_serialize().into_generator(),
            requests: settings.for_deserialize().into_generator(),
        }
    }

    /// The schema (usually a `$ref`) of a response type.
    fn out<T: JsonSchema>(&mut self) -> Value {
        self.responses.subschema_for::<T>().to_value()
    }

    /// The schema (usually a `$ref`) of a request body type.
    fn input<T: JsonSchema>(&mut self) -> Value {
        self.requests.subschema_for::<T>().to_value()
    }

    /// Every generated component schema. A name generated under both contracts must have the
    /// same schema under both; otherwise it is reported in `problems`.
    fn into_components(mut self, problems: &mut Vec<String>) -> Map<String, Value> {
        let mut all = self.responses.take_definitions(true);
        for (name, schema) in self.requests.take_definitions(true) {
            match all.get(&name) {
                Some(existing) if *existing != schema => problems.push(format!(
                    "schema {name} differs between its request and response forms"
                )),
                Some(_) => {}
                None => {
                    all.insert(name, schema);
                }
            }
        }
        all
    }
}

/// What each route takes and returns. Exhaustive: a new [`Route`] variant must be described
/// here before the crate compiles.
fn describe(route: &Route, s: &mut Schemas) -> Op {
    match route {
        Route::Healthz => op("health_live", "health", "The process is up")
            .public()
            .bare(status_schema("ok")),
        Route::Readyz => op("health_ready", "health", "The database answers")
            .public()
            .bare(status_schema("ready"))
            .errors(&[503]),
        Route::OpenApi => op("openapi_document", "meta", "This OpenAPI 3.1 document")
            .public()
            .bare(json!({
                "type": "object",
                "description": "An OpenAPI 3.1 document.",
                "required": ["openapi", "info", "paths", "components"],
            })),

        Route::ApiKeyCreate => op("api_key_create", "api-keys", "Create an API key")
            .json(s.input::<NewApiKey>())
            .created(s.out::<CreatedApiKey>()),
        Route::ApiKeyList => op(
            "api_key_list",
            "api-keys",
            "List API keys, revoked ones included",
        )
        .list(s.out::<ApiKey>(), false),
        Route::ApiKeyRevoke { .. } => {
            op("api_key_revoke", "api-keys", "Revoke an API key").outcome(s.out::<ApiKey>())
        }

        Route::CallCreate => op("call_create", "calls", "Record a call")
            .json(s.input::<NewCall>())
            .created(s.out::<Call>()),
        Route::CallList => op("call_list", "calls", "List calls").list(s.out::<Call>(), false),
        Route::CallView { .. } => op("call_view", "calls", "Get a call").ok(s.out::<Call>()),
        Route::CallUpdate { .. } => op("call_update", "calls", "Update a call")
            .json(s.input::<CallUpdate>())
            .ok(s.out::<Call>()),

        Route::RecordingUpload { .. } => op(
            "recording_upload",
            "recordings",
            "Upload the call's recording (replaces a previous one)",
        )
        .input(Input::Audio)
        .ok(s.out::<Call>()),
        Route::RecordingStream { .. } => op(
            "recording_stream",
            "recordings",
            "A URL that plays the recording for an hour, with Range support",
        )
        .ok(s.out::<RecordingLink>()),
        Route::RecordingDownload { .. } => op(
            "recording_download",
            "recordings",
            "Download the recording as a WAV attachment",
        )
        .output(Output::AudioAttachment),
        Route::RecordingSigned { .. } => op(
            "recording_signed_read",
            "recordings",
            "Read a recording through a URL signed by this server (the `url` of recording_stream)",
        )
        .public()
        .query(signed_url_query())
        .output(Output::AudioRange)
        .errors(&[403, 404, 416, 503]),

        Route::ToolCreate => op("tool_create", "tools", "Create a tool")
            .json(s.input::<NewTool>())
            .created(s.out::<Tool>())
            .errors(&[409]),
        Route::ToolList => op(
            "tool_list",
            "tools",
            "List tools (summaries, with total_count)",
        )
        .list(s.out::<ToolSummary>(), true),
        Route::ToolView { .. } => op("tool_view", "tools", "Get a tool").ok(s.out::<Tool>()),
        Route::ToolUpdate { .. } => op("tool_update", "tools", "Update a tool")
            .json(s.input::<ToolUpdate>())
            .ok(s.out::<Tool>())
            .errors(&[409]),
        Route::ToolDelete { .. } => {
            op("tool_delete", "tools", "Delete a tool").outcome(s.out::<Tool>())
        }

        Route::AgentCreate => op("agent_create", "agents", "Create an agent")
            .json(s.input::<NewAgent>())
            .created(s.out::<Agent>()),
        Route::AgentList => op("agent_list", "agents", "List agents").list(s.out::<Agent>(), false),
        Route::AgentView { .. } => op("agent_view", "agents", "Get an agent").ok(s.out::<Agent>()),
        Route::AgentUpdate { .. } => op("agent_update", "agents", "Update an agent")
            .json(s.input::<AgentUpdate>())
            .ok(s.out::<Agent>()),
        Route::AgentDelete { .. } => {
            op("agent_delete", "agents", "Delete an agent").outcome(s.out::<Agent>())
        }

        Route::PhoneNumberCreate => {
            op("phone_number_create", "phone-numbers", "Add a phone number")
                .json(s.input::<NewPhoneNumber>())
                .created(s.out::<PhoneNumber>())
                .errors(&[409])
        }
        Route::PhoneNumberList => op("phone_number_list", "phone-numbers", "List phone numbers")
            .list(s.out::<PhoneNumber>(), false),
        Route::PhoneNumberView { .. } => {
            op("phone_number_view", "phone-numbers", "Get a phone number")
                .ok(s.out::<PhoneNumber>())
        }
        Route::PhoneNumberUpdate { .. } => op(
            "phone_number_update",
            "phone-numbers",
            "Update a phone number",
        )
        .json(s.input::<PhoneNumberUpdate>())
        .ok(s.out::<PhoneNumber>())
        .errors(&[409]),
        Route::PhoneNumberDelete { .. } => op(
            "phone_number_delete",
            "phone-numbers",
            "Delete a phone number",
        )
        .outcome(s.out::<PhoneNumber>()),

        Route::IntegrationCreate => op(
            "integration_create",
            "integrations",
            "Store telephony credentials",
        )
        .json(s.input::<NewIntegration>())
        .created(s.out::<Integration>()),
        Route::IntegrationList => op("integration_list", "integrations", "List integrations")
            .list(s.out::<Integration>(), false),
        Route::IntegrationView { .. } => {
            op("integration_view", "integrations", "Get an integration").ok(s.out::<Integration>())
        }
        Route::IntegrationUpdate { .. } => op(
            "integration_update",
            "integrations",
            "Update an integration",
        )
        .json(s.input::<IntegrationUpdate>())
        .ok(s.out::<Integration>()),
        Route::IntegrationDelete { .. } => op(
            "integration_delete",
            "integrations",
            "Delete an integration and its stored credentials",
        )
        .outcome(s.out::<Integration>())
        .errors(&[409]),
        Route::IntegrationValidate { .. } => op(
            "integration_validate",
            "integrations",
            "Test the stored credentials with the provider; status becomes active or invalid",
        )
        .input(Input::EmptyJson)
        .outcome(s.out::<Integration>()),

        Route::DocumentCreate => op(
            "document_create",
            "knowledge-base",
            "Add a knowledge-base document: JSON text or an uploaded file",
        )
        .input(Input::JsonOrMultipart(s.input::<NewTextDocument>()))
        .created(s.out::<Document>()),
        Route::DocumentList => {
            op("document_list", "knowledge-base", "List documents").list(s.out::<Document>(), false)
        }
        Route::DocumentView { .. } => {
            op("document_view", "knowledge-base", "Get a document").ok(s.out::<Document>())
        }
        Route::DocumentUpdate { .. } => {
            op("document_update", "knowledge-base", "Rename a document")
                .json(s.input::<DocumentUpdate>())
                .ok(s.out::<Document>())
        }
        Route::DocumentDelete { .. } => {
            op("document_delete", "knowledge-base", "Delete a document")
                .outcome(s.out::<Document>())
        }

        Route::VoiceSearch => op("voice_search", "voices", "Search a provider's voices")
            .query(voice_search_query(s))
            .bare(s.out::<VoicePage<Voice>>())
            .errors(&[502]),
        Route::VoiceLibraryList => op(
            "voice_library_list",
            "voices",
            "List provider_two's shared voice library",
        )
        .query(voice_library_query())
        .bare(s.out::<VoicePage<LibraryVoice>>())
        .errors(&[502]),
        Route::VoiceLibraryAdd => op(
            "voice_library_add",
            "voices",
            "Add a shared voice to the provider_two account",
        )
        .json(s.input::<LibraryAddInput>())
        .bare(s.out::<AddedVoice>())
        .errors(&[404, 502]),

        Route::InvitationCreate => op("invitation_create", "members", "Invite someone")
            .json(s.input::<NewInvitation>())
            .created(s.out::<Invitation>())
            .errors(&[409]),
        Route::InvitationList => op("invitation_list", "members", "List pending invitations")
            .bare(wrapped("invitations", s.out::<Invitation>())),
        Route::InvitationRevoke { .. } => {
            op("invitation_revoke", "members", "Withdraw an invitation")
                .outcome(s.out::<Invitation>())
                .errors(&[409])
        }
        Route::InvitationAccept { .. } => op(
            "invitation_accept",
            "members",
            "Accept an invitation with the invitee's JWT",
        )
        .bearer_only()
        .outcome(s.out::<Member>())
        .errors(&[409]),
        Route::MemberList => {
            op("member_list", "members", "List members").bare(wrapped("members", s.out::<Member>()))
        }
        Route::MemberUpdate { .. } => op("member_update", "members", "Change a member's role")
            .json(s.input::<MemberUpdate>())
            .ok(s.out::<Member>())
            .errors(&[409]),
        Route::MemberRemove { .. } => op(
            "member_remove",
            "members",
            "Remove a member and revoke the API keys they created",
        )
        .outcome(s.out::<Member>())
        .errors(&[409]),
    }
}

/// `{"status": "<value>"}` of the health routes.
fn status_schema(value: &str) -> Value {
    json!({
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string", "const": value}},
    })
}

/// `{"<field>": [items]}`: the membership lists, which have no envelope.
fn wrapped(field: &str, item: Value) -> Value {
    json!({
        "type": "object",
        "required": [field],
        "properties": {field: {"type": "array", "items": item}},
    })
}

fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": schema})
}

fn string_param(name: &str, description: &str) -> Value {
    query_param(name, description, json!({"type": "string"}))
}

fn param_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/parameters/{name}")})
}

/// The query (and `Range` header) of a self-signed recording URL.
fn signed_url_query() -> Vec<Value> {
    let mut expires = query_param(
        "expires",
        "Unix time (seconds) after which the URL is refused.",
        json!({"type": "integer"}),
    );
    expires["required"] = Value::Bool(true);
    let mut sig = string_param("sig", "The server's signature of the path and `expires`.");
    sig["required"] = Value::Bool(true);
    let range = json!({
        "name": "Range",
        "in": "header",
        "required": false,
        "description": "`bytes=<first>-[<last>]` or `bytes=-<suffix>`: answered with 206.",
        "schema": {"type": "string"},
    });
    vec![expires, sig, range]
}

/// The query of `GET /api/voices/search` (read by `crate::voices::search_input`).
fn voice_search_query(s: &mut Schemas) -> Vec<Value> {
    let mut provider = query_param(
        "provider",
        "The provider to search.",
        s.out::<VoiceProviderName>(),
    );
    provider["required"] = Value::Bool(true);
    vec![
        provider,
        string_param("query", "Free text."),
        string_param("language", "Language code."),
        string_param(
            "gender",
            "`male` or `female`; most relevant for provider_one.",
        ),
        string_param(
            "cursor",
            "The `next_cursor` of the previous page; omitted for the first page.",
        ),
        query_param(
            "page_size",
            "Voices per page.",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_VOICE_PAGE_SIZE,
                   "default": DEFAULT_SEARCH_PAGE_SIZE}),
        ),
    ]
}

/// The query of `GET /api/voices/provider_two/library` (read by
/// `crate::voices::library_input`).
fn voice_library_query() -> Vec<Value> {
    let mut use_cases = query_param(
        "use_cases",
        "Use cases; repeat the parameter for several.",
        json!({"type": "array", "items": {"type": "string"}}),
    );
    use_cases["style"] = json!("form");
    use_cases["explode"] = Value::Bool(true);
    vec![
        string_param("query", "Free text."),
        string_param("language", "Language code."),
        string_param("gender", "e.g. `male`, `female`."),
        string_param("age", "e.g. `young`, `middle_aged`, `old`."),
        string_param("accent", "Accent."),
        string_param("category", "Category."),
        use_cases,
        query_param(
            "sort",
            "Sort order.",
            json!({"type": "string", "default": DEFAULT_LIBRARY_SORT}),
        ),
        query_param(
            "page",
            "Zero-based page index: the previous page's `next_cursor`.",
            json!({"type": "integer", "minimum": 0, "default": 0}),
        ),
        query_param(
            "page_size",
            "Voices per page.",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_VOICE_PAGE_SIZE,
                   "default": DEFAULT_LIBRARY_PAGE_SIZE}),
        ),
    ]
}

/// Every kind of id, to describe path parameters named after their field.
const ID_KINDS: &[IdKind] = &[
    IdKind::Organization,
    IdKind::User,
    IdKind::Membership,
    IdKind::ApiKey,
    IdKind::Call,
    IdKind::Tool,
    IdKind::Document,
    IdKind::Agent,
    IdKind::Integration,
    IdKind::PhoneNumber,
    IdKind::Invitation,
];

/// The path parameter `{name}`: an id of the kind whose field it is, or a plain string.
fn path_param(name: &str) -> Value {
    let (description, schema) = match ID_KINDS.iter().find(|k| k.field() == name) {
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

/// The names of a template's `{param}` segments, in order.
fn template_params(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// `{"success": true, "data": data}`.
fn data_envelope(data: Value) -> Value {
    json!({
        "type": "object",
        "required": ["success", "data"],
        "properties": {"success": {"type": "boolean", "const": true}, "data": data},
    })
}

/// `{"success": true, "message": "…", "data": data}`.
fn outcome_envelope(data: Value) -> Value {
    json!({
        "type": "object",
        "required": ["success", "message", "data"],
        "properties": {
            "success": {"type": "boolean", "const": true},
            "message": {"type": "string", "description": "What happened, as a sentence."},
            "data": data,
        },
    })
}

/// `{"success": true, "data": [items], "pagination": {…}}`.
fn list_envelope(item: Value, total_count: bool) -> Value {
    let pagination = if total_count {
        "CountedPagination"
    } else {
        "Pagination"
    };
    json!({
        "type": "object",
        "required": ["success", "data", "pagination"],
        "properties": {
            "success": {"type": "boolean", "const": true},
            "data": {"type": "array", "items": item},
            "pagination": {"$ref": format!("{SCHEMAS}{pagination}")},
        },
    })
}

/// The `pagination` object of cursor lists.
fn pagination_schema(total_count: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "description": "Where the page stands in its list.",
        "required": ["next_cursor", "has_more", "page_size"],
        "properties": {
            "next_cursor": {
                "type": ["string", "null"],
                "description": "Pass as `cursor` for the next page; `null` when `has_more` is false.",
            },
            "has_more": {"type": "boolean", "description": "Whether more items follow."},
            "page_size": {
                "type": "integer",
                "minimum": 0,
                "description": "Number of items on this page.",
            },
        },
    });
    if total_count {
        schema["required"] = json!(["next_cursor", "has_more", "page_size", "total_count"]);
        schema["properties"]["total_count"] = json!({
            "type": "integer",
            "minimum": 0,
            "description": "Number of items in the whole list.",
        });
    }
    schema
}

/// The error responses: status, component name, description.
const ERRORS: &[(u16, &str, &str)] = &[
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
        409,
        "Conflict",
        "The change conflicts with the current state (a duplicate, or a reference that \
         blocks it); the detail says what to do first.",
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

/// The error statuses of `op` on a route whose template has `has_path_params`. Public
/// operations list all of theirs in [`Op::errors`].
fn error_statuses(op: &Op, has_path_params: bool) -> Vec<u16> {
    let mut statuses: Vec<u16> = op.errors.to_vec();
    if op.auth != Auth::Public {
        statuses.extend([401, 403, 503]);
        if op.auth == Auth::Organization || has_path_params || !op.query.is_empty() {
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
        Input::Audio => statuses.extend([413, 415]),
    }
    statuses.sort_unstable();
    statuses.dedup();
    statuses
}

/// A response object with `X-Request-Id` and these extra headers and content.
fn response_object(description: &str, content: Value, headers: &[(&str, &str)]) -> Value {
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

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

/// The `responses` object of an operation.
fn responses(op: &Op, has_path_params: bool) -> Map<String, Value> {
    let mut out = Map::new();
    let audio = json!({
        "audio/wav": {"schema": {"type": "string", "contentMediaType": "audio/wav"}},
        "audio/mpeg": {"schema": {"type": "string", "contentMediaType": "audio/mpeg"}},
    });
    match &op.output {
        Output::Data(status, data) => {
            let description = if *status == StatusCode::CREATED {
                "Created."
            } else {
                "The resource."
            };
            out.insert(
                status.as_u16().to_string(),
                response_object(description, json_content(data_envelope(data.clone())), &[]),
            );
        }
        Output::List(item, total_count) => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "One page of the list, newest first.",
                    json_content(list_envelope(item.clone(), *total_count)),
                    &[],
                ),
            );
        }
        Output::Outcome(data) => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "Done; `data` is the resource after the change.",
                    json_content(outcome_envelope(data.clone())),
                    &[],
                ),
            );
        }
        Output::Bare(schema) => {
            out.insert(
                "200".to_owned(),
                response_object("OK (no envelope).", json_content(schema.clone()), &[]),
            );
        }
        Output::AudioAttachment => {
            out.insert(
                "200".to_owned(),
                response_object(
                    "The recording's bytes, as an attachment named `recording_<to_number>.wav`.",
                    json!({"audio/wav": {"schema": {"type": "string", "contentMediaType": "audio/wav"}}}),
                    &[
                        ("Content-Disposition", "ContentDisposition"),
                        ("Content-Length", "ContentLength"),
                    ],
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
    for status in error_statuses(op, has_path_params) {
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
        Input::Audio => json!({
            "description": "The recording's bytes, streamed.",
            "required": true,
            "content": {
                "audio/wav": {"schema": {"type": "string", "contentMediaType": "audio/wav"}},
                "audio/mpeg": {"schema": {"type": "string", "contentMediaType": "audio/mpeg"}},
            },
        }),
    };
    Some(body)
}

/// The operation object of `op` at `template`.
fn operation(op: &Op, template: &str) -> Value {
    let mut params: Vec<Value> = template_params(template).map(path_param).collect();
    let has_path_params = !params.is_empty();
    if op.auth == Auth::Organization {
        params.push(param_ref("OrganizationId"));
    }
    params.extend(op.query.iter().cloned());

    let mut object = Map::new();
    object.insert("operationId".to_owned(), json!(op.id));
    object.insert("summary".to_owned(), json!(op.summary));
    object.insert("tags".to_owned(), json!([op.tag]));
    match op.auth {
        Auth::Organization => {}
        Auth::Public => {
            object.insert("security".to_owned(), json!([]));
        }
        Auth::BearerOnly => {
            object.insert("security".to_owned(), json!([{"Bearer": []}]));
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
        Value::Object(responses(op, has_path_params)),
    );
    Value::Object(object)
}

/// Builds the document from [`ROUTES`] and [`describe`].
fn build() -> Built {
    let mut problems = Vec::new();
    let mut schemas = Schemas::new();
    let mut paths = Map::new();
    for &(method, template) in ROUTES {
        // A template is a path its own placeholders match, so it resolves to its route.
        let route = Method::from_bytes(method.as_bytes())
            .ok()
            .and_then(|m| resolve(&m, template).ok())
            .filter(|route| route.definition() == (method, template));
        let Some(route) = route else {
            problems.push(format!("{method} {template} does not resolve to itself"));
            continue;
        };
        let op = describe(&route, &mut schemas);
        let item = paths
            .entry(template.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        item[method.to_ascii_lowercase()] = operation(&op, template);
    }

    let mut components = schemas.into_components(&mut problems);
    components.insert("Pagination".to_owned(), pagination_schema(false));
    components.insert("CountedPagination".to_owned(), pagination_schema(true));
    components.insert(
        "Error".to_owned(),
        json!({
            "type": "object",
            "description": "Every error answer.",
            "required": ["detail"],
            "properties": {"detail": {"type": "string", "description": "A human-readable sentence."}},
        }),
    );

    let mut error_responses = Map::new();
    for (_, name, description) in ERRORS {
        error_responses.insert(
            (*name).to_owned(),
            response_object(
                description,
                json_content(json!({"$ref": format!("{SCHEMAS}Error")})),
                &[],
            ),
        );
    }

    let document = json!({
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
        "tags": [
            {"name": "api-keys", "description": "API keys of the organization."},
            {"name": "calls", "description": "Calls handled by the organization's agents."},
            {"name": "recordings", "description": "Call recordings."},
            {"name": "tools", "description": "Custom HTTP tools agents can call."},
            {"name": "agents", "description": "AI voice agents."},
            {"name": "phone-numbers", "description": "Phone numbers and their agents."},
            {"name": "integrations", "description": "Stored telephony provider credentials."},
            {"name": "knowledge-base", "description": "Knowledge-base documents."},
            {"name": "voices", "description": "Voice search and provider_two's shared library."},
            {"name": "members", "description": "Members and invitations."},
            {"name": "health", "description": "Liveness and readiness."},
            {"name": "meta", "description": "This document."},
        ],
        "security": [{"ApiKey": []}, {"Bearer": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": error_responses,
            "parameters": {
                "OrganizationId": {
                    "name": "X-Organization-Id",
                    "in": "header",
                    "required": true,
                    "description": "The organization the request acts in.",
                    "schema": {"type": "string", "pattern": format!("^{}", IdKind::Organization.prefix())},
                },
                "Limit": query_param(
                    "limit",
                    "Items per page.",
                    json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}),
                ),
                "Cursor": string_param(
                    "cursor",
                    "The `pagination.next_cursor` of the previous page; omitted (or empty) for the first page.",
                ),
            },
            "headers": {
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
    Built { document, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_without_problems() {
        let built = build();
        assert!(built.problems.is_empty(), "{:#?}", built.problems);
        let doc = &built.document;
        assert_eq!(doc["openapi"], OPENAPI_VERSION);
        for &(method, template) in ROUTES {
            let op = &doc["paths"][template][method.to_ascii_lowercase()];
            assert!(op["operationId"].is_string(), "{method} {template}");
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
        assert_eq!(ids.len(), ROUTES.len());
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
