//! What the document says of one operation, as collected from its handler's types
//! ([`crate::endpoint::FromRequest`] and [`crate::endpoint::Reply`]), and the schema generators
//! that turn Rust types into JSON Schemas.

use http::StatusCode;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::credentials::Auth;

/// What an operation reads from the request body.
#[derive(Debug, Default)]
pub(crate) enum Input {
    /// Nothing.
    #[default]
    None,
    /// A JSON body of this schema.
    Json(Value),
    /// No body, but `Content-Type: application/json` is required.
    EmptyJson,
    /// JSON of this schema, or `multipart/form-data` with a `file` and an optional `name`.
    JsonOrMultipart(Value),
    /// JSON of this schema, or a `text/csv` body streamed.
    JsonOrCsv(Value),
    /// Raw audio bytes (`audio/wav` or `audio/mpeg`).
    Audio,
    /// A form (`application/x-www-form-urlencoded`) of text fields, as a provider posts it.
    Form,
}

/// What an operation answers when it succeeds.
#[derive(Debug)]
pub(crate) enum Output {
    /// JSON of this schema with this status.
    Json {
        /// The success status.
        status: StatusCode,
        /// The response's description.
        description: &'static str,
        /// The body's schema, envelope included.
        schema: Value,
    },
    /// `200` with the recording's bytes as an `audio/wav` attachment.
    AudioAttachment,
    /// `200` or `206` with a recording's bytes, honouring `Range`.
    AudioRange,
    /// `200` with an XML document (TwiML).
    Xml,
    /// `101`: the connection becomes a WebSocket.
    WebSocket,
}

impl Default for Output {
    fn default() -> Self {
        Self::Json {
            status: StatusCode::OK,
            description: "OK.",
            schema: json!({}),
        }
    }
}

/// One operation as its handler's types describe it.
#[derive(Debug, Default)]
pub(crate) struct OpSpec {
    /// The credentials its handler takes: the tests hold them equal to its declaration.
    pub(crate) credentials: Option<Auth>,
    /// How many path parameters its handler takes: the tests hold it equal to its template's.
    pub(crate) path_params: usize,
    /// Query and header parameters, besides the path's and `X-Organization-Id`.
    pub(crate) parameters: Vec<Value>,
    pub(crate) input: Input,
    pub(crate) output: Output,
    /// A second success of a JSON output, with the same body: `200` beside a `201` for a put
    /// that changes what exists instead of creating it.
    pub(crate) also: Option<(StatusCode, &'static str)>,
}

/// The schemas of request and response types, from the types themselves.
pub(crate) struct Schemas {
    /// Response types: the serialize contract (`skip_serializing` fields are left out,
    /// `Option` fields are present and may be `null`).
    responses: SchemaGenerator,
    /// Request bodies: the deserialize contract (fields with defaults are optional, unknown
    /// fields are refused where serde refuses them).
    requests: SchemaGenerator,
}

impl Schemas {
    pub(crate) fn new() -> Self {
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
    pub(crate) fn out<T: JsonSchema>(&mut self) -> Value {
        self.responses.subschema_for::<T>().to_value()
    }

    /// The schema (usually a `$ref`) of a request body type.
    pub(crate) fn input<T: JsonSchema>(&mut self) -> Value {
        self.requests.subschema_for::<T>().to_value()
    }

    /// The schema of a response type written out rather than referenced.
    pub(crate) fn inline_out<T: JsonSchema>(&mut self) -> Value {
        T::json_schema(&mut self.responses).to_value()
    }

    /// The schema of a request type written out rather than referenced (a query string's
    /// fields become parameters, not a component).
    pub(crate) fn inline_input<T: JsonSchema>(&mut self) -> Value {
        T::json_schema(&mut self.requests).to_value()
    }

    /// Every generated component schema. A name generated under both contracts must have the
    /// same schema under both; otherwise it is reported in `problems`.
    pub(crate) fn into_components(mut self, problems: &mut Vec<String>) -> Map<String, Value> {
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
