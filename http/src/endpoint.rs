//! What an operation is made of, as types: the inputs it extracts from a request
//! ([`Extract`]: credentials, query, body) and the answer it gives ([`Reply`]: an envelope, a
//! list, a file). A handler is an `async fn(Cx, path, inputs) -> Result<answer, ApiError>`;
//! [`run`] extracts its inputs in order and answers, and [`spec`] describes the same types
//! for the OpenAPI document, so the document cannot say anything the handler does not do.

use std::future::Future;

use bytes::{Buf, Bytes};
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::Outcome;
use voiceplane_core::page::Page;

use crate::body::{JSON_REQUIRED, read_json, require_json};
use crate::error::ApiError;
use crate::openapi::{Auth, Input, OpSpec, Output, Schemas};
use crate::response::{self, CountedPagination, DataEnvelope, ListEnvelope, OutcomeEnvelope};
use crate::{Api, BoxError, ResponseBody, extract, query};

/// A request body after routing: boxed, so that extractors are not generic over it.
pub(crate) type RequestBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// Boxes any request body into a [`RequestBody`].
pub(crate) fn boxed<B>(body: B) -> RequestBody
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(Into::into)
        .boxed_unsync()
}

/// What a handler sees of the request besides its typed inputs.
pub(crate) struct Cx {
    pub(crate) api: Api,
    pub(crate) parts: Parts,
}

impl Cx {
    /// The service every operation calls.
    pub(crate) fn service(&self) -> &Service {
        &self.api.service
    }
}

/// An input of an operation, read from the request.
pub(crate) trait Extract: Sized + Send {
    /// Reads the input; the body, for the one extractor that consumes it.
    fn extract(
        cx: &Cx,
        body: &mut Option<RequestBody>,
    ) -> impl Future<Output = Result<Self, ApiError>> + Send;

    /// What the input adds to the operation's description.
    fn describe(spec: &mut OpSpec, schemas: &mut Schemas);
}

/// The answer of an operation.
pub(crate) trait Reply {
    /// The response.
    fn into_response(self) -> Response<ResponseBody>;

    /// What the answer adds to the operation's description.
    fn describe(spec: &mut OpSpec, schemas: &mut Schemas);
}

/// Runs `handler`: extracts its inputs in their declared order (credentials before the query
/// before the body), calls it, and answers.
pub(crate) async fn run<P, I, O, F, Fut>(
    api: &Api,
    parts: Parts,
    body: RequestBody,
    path: P,
    handler: F,
) -> Result<Response<ResponseBody>, ApiError>
where
    I: Extract,
    O: Reply,
    F: FnOnce(Cx, P, I) -> Fut,
    Fut: Future<Output = Result<O, ApiError>>,
{
    let cx = Cx {
        api: api.clone(),
        parts,
    };
    let mut body = Some(body);
    let input = I::extract(&cx, &mut body).await?;
    Ok(handler(cx, path, input).await?.into_response())
}

/// The description of `handler` from its input and answer types.
pub(crate) fn spec<P, I, O, F, Fut>(_handler: F, schemas: &mut Schemas) -> OpSpec
where
    I: Extract,
    O: Reply,
    F: FnOnce(Cx, P, I) -> Fut,
    Fut: Future<Output = Result<O, ApiError>>,
{
    let mut spec = OpSpec::default();
    I::describe(&mut spec, schemas);
    O::describe(&mut spec, schemas);
    spec
}

impl Extract for () {
    async fn extract(_: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(())
    }

    fn describe(_: &mut OpSpec, _: &mut Schemas) {}
}

macro_rules! extract_tuple {
    ($($t:ident),+) => {
        impl<$($t: Extract),+> Extract for ($($t,)+) {
            async fn extract(cx: &Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
                Ok(($($t::extract(cx, body).await?,)+))
            }

            fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
                $($t::describe(spec, schemas);)+
            }
        }
    };
}

extract_tuple!(A);
extract_tuple!(A, B);
extract_tuple!(A, B, C);
extract_tuple!(A, B, C, D);

/// The caller, authenticated in the organization of `X-Organization-Id`.
impl Extract for Actor {
    async fn extract(cx: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        // Authenticated once already, before the rate limit and idempotency checks.
        if let Some(crate::protect::Authenticated(actor)) = cx.parts.extensions.get() {
            // Authenticated before `conditional::dispatch` read the preconditions.
            let mut actor = actor.clone();
            actor.request.preconditions = crate::protect::preconditions_of(&cx.parts);
            return Ok(actor);
        }
        let creds = extract::credentials(&cx.parts.headers)?;
        let mut actor = cx.service().authenticate(&creds).await?;
        actor.request = crate::protect::request_context(&cx.api, &cx.parts);
        Ok(actor)
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.auth = Auth::Organization;
    }
}

/// The bearer token of a caller who acts outside any organization (accepting an invitation),
/// and where the request came from.
pub(crate) struct Invitee(
    pub(crate) Option<String>,
    pub(crate) voiceplane_core::auth::RequestContext,
);

impl Extract for Invitee {
    async fn extract(cx: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(Self(
            extract::credentials(&cx.parts.headers)?.bearer,
            crate::protect::request_context(&cx.api, &cx.parts),
        ))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.auth = Auth::BearerOnly;
    }
}

/// The query string, decoded into `T` by the one query reader.
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned + JsonSchema + Send> Extract for Query<T> {
    async fn extract(cx: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        query::read(cx.parts.uri.query()).map(Self)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.parameters.extend(query::parameters::<T>(schemas));
    }
}

/// A JSON body decoded into `T`.
pub(crate) struct Json<T>(pub(crate) T);

impl<T: DeserializeOwned + JsonSchema + Send> Extract for Json<T> {
    async fn extract(cx: &Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let body = body.take().unwrap_or_default();
        read_json(
            &cx.parts.headers,
            body,
            cx.api.config.max_body_bytes,
            JSON_REQUIRED,
        )
        .await
        .map(Self)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.input = Input::Json(schemas.input::<T>());
    }
}

/// No body is read, but the request must declare JSON, as the operation's contract says.
pub(crate) struct JsonContentType;

impl Extract for JsonContentType {
    async fn extract(cx: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        require_json(&cx.parts.headers, JSON_REQUIRED).map(|()| Self)
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.input = Input::EmptyJson;
    }
}

/// A reply type answering `{"success": true, "data": …}` with one status.
macro_rules! enveloped {
    ($(#[$doc:meta])* $name:ident, $status:ident, $description:literal) => {
        $(#[$doc])*
        pub(crate) struct $name<T>(pub(crate) T);

        impl<T: Serialize + JsonSchema + 'static> Reply for $name<T> {
            fn into_response(self) -> Response<ResponseBody> {
                response::data(StatusCode::$status, &self.0)
            }

            fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
                spec.output = Output::Json {
                    status: StatusCode::$status,
                    description: $description,
                    schema: schemas.out::<DataEnvelope<'static, T>>(),
                };
            }
        }
    };
}

enveloped!(
    /// `200 {"success": true, "data": …}`.
    Data, OK, "The resource."
);

/// `201 {"success": true, "data": …}` with a `Location` that resolves to the new resource.
///
/// The `Location` is a relative reference (RFC 3986 §4.2), not an absolute path: the adapter
/// may be mounted under a prefix it never sees (axum's `nest_service("/voice", api)` strips
/// it), and a relative reference is resolved by the client against the URL it posted to,
/// prefix included. `POST /voice/api/agents` answering `Location: agents/agent_1` resolves to
/// `/voice/api/agents/agent_1` (the last segment of the request path is replaced, §5.2.3).
pub(crate) struct Created<T> {
    data: T,
    location: String,
}

impl<T> Created<T> {
    /// `data`, found at `location`, a reference relative to the request's URL.
    pub(crate) fn at(location: impl Into<String>, data: T) -> Self {
        Self {
            data,
            location: location.into(),
        }
    }

    /// `data`, the new member (whose id `id` returns) of the collection the request was posted to: the
    /// reference is `<last segment of the request path>/<id>`, e.g. `agents/agent_1` for
    /// `POST /api/agents`.
    pub(crate) fn member(cx: &Cx, data: T, id: impl FnOnce(&T) -> &str) -> Self {
        let collection = cx.parts.uri.path().rsplit('/').next().unwrap_or_default();
        let location = format!("{collection}/{}", id(&data));
        Self::at(location, data)
    }
}

impl<T: Serialize + JsonSchema + 'static> Reply for Created<T> {
    fn into_response(self) -> Response<ResponseBody> {
        let mut response = response::data(StatusCode::CREATED, &self.data);
        // Ids and path segments are visible ASCII; a value that is not would be a bug, and
        // the answer is still the 201 without the header rather than an error.
        match HeaderValue::from_str(&self.location) {
            Ok(location) => {
                response.headers_mut().insert(header::LOCATION, location);
            }
            Err(_) => tracing::error!("a Location is not a valid header value"),
        }
        response
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::CREATED,
            description: "Created; `Location` refers to the new resource.",
            schema: schemas.out::<DataEnvelope<'static, T>>(),
        };
    }
}
enveloped!(
    /// `202 {"success": true, "data": …}`: the work was scheduled and happens after the answer.
    Accepted, ACCEPTED, "Accepted: scheduled, done after this answer."
);

/// `200` with the value as it is, without an envelope.
pub(crate) struct Bare<T>(pub(crate) T);

impl<T: Serialize + JsonSchema + 'static> Reply for Bare<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::json(StatusCode::OK, &self.0)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "OK (no envelope).",
            schema: schemas.out::<T>(),
        };
    }
}

/// A cursor list: `{"success": true, "data": […], "pagination": {…}}`.
impl<T: Serialize + JsonSchema + 'static> Reply for Page<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::page(&self)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "One page of the list (newest first, or in `seq` order for a transcript).",
            schema: schemas.out::<ListEnvelope<'static, T>>(),
        };
    }
}

/// A cursor list that also reports the size of the whole list (`pagination.total_count`).
pub(crate) struct Counted<T>(pub(crate) Page<T>);

impl<T: Serialize + JsonSchema + 'static> Reply for Counted<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::counted_page(&self.0)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "One page of the list, newest first.",
            schema: schemas.out::<ListEnvelope<'static, T, CountedPagination<'static>>>(),
        };
    }
}

/// `200 {"success": true, "message": …, "data": …}`: the answer of a state change.
impl<T: Serialize + JsonSchema + 'static> Reply for Outcome<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::outcome(&self)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.output = Output::Json {
            status: StatusCode::OK,
            description: "Done; `data` is the resource after the change.",
            schema: schemas.out::<OutcomeEnvelope<'static, T>>(),
        };
    }
}
