//! What an operation is made of, as types: the inputs it takes from a request
//! ([`FromRequest`]: credentials, query, body) and the answer it gives ([`Reply`]: an
//! envelope, a list, a file). A handler is an `async fn(Cx, path, inputs) -> Result<answer,
//! ApiError>`; [`run`] is the last stage of a request: it takes the inputs in order, calls the
//! handler and answers, and [`spec`] describes the same types for the OpenAPI document, so the
//! document cannot say anything the handler does not do.

use std::future::Future;

use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::idempotency::KeyBinding;
use voiceplane_core::model::Outcome;
use voiceplane_core::page::Page;

use crate::api::Api;
use crate::body::{JSON_REQUIRED, RequestBody, read_json, require_json};
use crate::caller::{self, Authenticated};
use crate::credentials::Auth;
use crate::error::ApiError;
use crate::openapi::spec::{Input, OpSpec, Output, Schemas};
use crate::operation::Captures;
use crate::response::{
    self, CountedPagination, DataEnvelope, ListEnvelope, OutcomeEnvelope, ResponseBody,
};
use crate::{credentials, query};

/// The [`Handler`] of an `async fn(Cx, path, inputs) -> Result<answer, ApiError>` (see
/// [`crate::endpoint`]); the function's name becomes the operation's id.
macro_rules! handler {
    ($handler:ident) => {
        $crate::operation::Handler {
            id: stringify!($handler),
            // Allocated before the future is made, so that the future is made in its box:
            // `Box::pin(future)` made it on the stack and copied it whole, states of stages
            // not begun included (as `Api::handle`'s route future did).
            run: |api, parts, captures, body, caller| {
                let slot = Box::new_uninit();
                let future = Box::write(
                    slot,
                    $crate::endpoint::run(
                        $crate::endpoint::Cx::new(api, parts, caller),
                        captures,
                        body,
                        $handler,
                    ),
                );
                Box::into_pin(future)
            },
            describe: |schemas| $crate::endpoint::spec($handler, schemas),
        }
    };
}
pub(crate) use handler;

/// What a handler sees of the request besides its typed inputs.
pub(crate) struct Cx {
    pub(crate) api: Api,
    pub(crate) parts: Parts,
    /// The caller [`crate::protect`] authenticated, until the `Actor` input takes it: an
    /// argument rather than one of the request's extensions, whose insert and removal were
    /// about 200 instructions of an authenticated request. Its actor is boxed, so that every
    /// stage's future that carries it stays small: unboxed, it cost `/healthz` 580.
    caller: Option<Authenticated>,
}

impl Drop for Cx {
    fn drop(&mut self) {
        // The request is done with: its maps serve a later one.
        crate::recycle::keep(&mut self.parts);
    }
}

impl Cx {
    /// What the handler of `parts`, sent by `caller` when authenticated, sees.
    pub(crate) fn new(api: Api, parts: Parts, caller: Option<Authenticated>) -> Self {
        Self { api, parts, caller }
    }

    /// The service every operation calls.
    pub(crate) fn service(&self) -> &Service {
        &self.api.service
    }

    /// The request's `Idempotency-Key`, for a create that binds it to what it makes.
    pub(crate) fn idempotency_key(&self) -> Option<&KeyBinding> {
        self.parts.extensions.get::<KeyBinding>()
    }
}

/// The path parameters of a handler: `()`, `(String,)` or `(String, String)`, in template
/// order.
pub(crate) trait FromCaptures: Sized {
    /// How many the handler takes; the tests hold it equal to the template's.
    const COUNT: usize;

    /// Takes them from the resolved request's captures.
    fn from_captures(captures: Captures) -> Self;
}

impl FromCaptures for () {
    const COUNT: usize = 0;

    fn from_captures(_: Captures) -> Self {}
}

impl FromCaptures for (String,) {
    const COUNT: usize = 1;

    fn from_captures([first, _]: Captures) -> Self {
        (first,)
    }
}

impl FromCaptures for (String, String) {
    const COUNT: usize = 2;

    fn from_captures([first, second]: Captures) -> Self {
        (first, second)
    }
}

/// An input of an operation, read from the request.
pub(crate) trait FromRequest: Sized + Send {
    /// Reads the input; the body, for the one input that consumes it.
    fn from_request(
        cx: &mut Cx,
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

/// Runs `handler`: takes its inputs in their declared order (credentials before the query
/// before the body), calls it, and answers.
pub(crate) async fn run<P, I, O, F, Fut>(
    mut cx: Cx,
    captures: Captures,
    body: RequestBody,
    handler: F,
) -> Result<Response<ResponseBody>, ApiError>
where
    P: FromCaptures,
    I: FromRequest,
    O: Reply,
    F: FnOnce(Cx, P, I) -> Fut,
    Fut: Future<Output = Result<O, ApiError>>,
{
    let mut body = Some(body);
    let input = I::from_request(&mut cx, &mut body).await?;
    Ok(handler(cx, P::from_captures(captures), input)
        .await?
        .into_response())
}

/// The description of `handler` from its input and answer types.
pub(crate) fn spec<P, I, O, F, Fut>(_handler: F, schemas: &mut Schemas) -> OpSpec
where
    P: FromCaptures,
    I: FromRequest,
    O: Reply,
    F: FnOnce(Cx, P, I) -> Fut,
    Fut: Future<Output = Result<O, ApiError>>,
{
    let mut spec = OpSpec {
        path_params: P::COUNT,
        ..OpSpec::default()
    };
    I::describe(&mut spec, schemas);
    O::describe(&mut spec, schemas);
    spec
}

impl FromRequest for () {
    async fn from_request(_: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(())
    }

    fn describe(_: &mut OpSpec, _: &mut Schemas) {}
}

macro_rules! extract_tuple {
    ($($t:ident),+) => {
        impl<$($t: FromRequest),+> FromRequest for ($($t,)+) {
            async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
                Ok(($($t::from_request(cx, body).await?,)+))
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

/// The caller, authenticated in the organization of `X-Organization-Id` by
/// [`crate::protect`] before the operation runs, as its declaration asks ([`Auth::Organization`]).
impl FromRequest for Actor {
    async fn from_request(cx: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        // Moved out rather than cloned (a few strings per request): nothing reads it after.
        match cx.caller.take() {
            Some(Authenticated(actor)) => Ok(*actor),
            None => {
                // An operation that takes an `Actor` but is not declared `Auth::Organization`:
                // the tests make sure none is, and it must never run unauthenticated.
                tracing::error!("an operation takes a caller it was not declared to authenticate");
                Err(ApiError::from(voiceplane_core::Error::Internal(
                    "operation declared without credentials".into(),
                )))
            }
        }
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.credentials = Some(Auth::Organization);
    }
}

/// The bearer token of a caller who acts outside any organization (accepting an invitation),
/// and where the request came from.
pub(crate) struct Invitee(
    pub(crate) Option<String>,
    pub(crate) voiceplane_core::auth::RequestContext,
);

impl FromRequest for Invitee {
    async fn from_request(cx: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(Self(
            credentials::read(&cx.parts.headers)?.bearer,
            caller::request_context(&cx.api, &cx.parts),
        ))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.credentials = Some(Auth::Invitee);
    }
}

/// The query string, decoded into `T` by the one query reader.
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned + JsonSchema + Send> FromRequest for Query<T> {
    async fn from_request(cx: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        query::read(cx.parts.uri.query()).map(Self)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.parameters.extend(query::parameters::<T>(schemas));
    }
}

/// A JSON body decoded into `T`.
pub(crate) struct Json<T>(pub(crate) T);

impl<T: DeserializeOwned + JsonSchema + Send> FromRequest for Json<T> {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
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
pub(crate) struct EmptyJson;

impl FromRequest for EmptyJson {
    async fn from_request(cx: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
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
/// An answer that repeats one given before under the request's `Idempotency-Key` when
/// `replayed` (the key was bound to what the first request created): marked
/// `Idempotent-Replayed: true`, as a stored answer's replay is.
pub(crate) struct Keyed<R> {
    pub(crate) reply: R,
    pub(crate) replayed: bool,
}

impl<R: Reply> Reply for Keyed<R> {
    fn into_response(self) -> Response<ResponseBody> {
        let mut response = self.reply.into_response();
        if self.replayed {
            response.headers_mut().insert(
                crate::protect::idempotency::IDEMPOTENT_REPLAYED,
                HeaderValue::from_static("true"),
            );
        }
        response
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        R::describe(spec, schemas);
    }
}

/// `201` with `Location` when the put created the resource, `200` when it changed the one
/// that was there.
pub(crate) enum Put<T> {
    /// New.
    Created(Created<T>),
    /// Changed.
    Changed(T),
}

impl<T: Serialize + JsonSchema + 'static> Reply for Put<T> {
    fn into_response(self) -> Response<ResponseBody> {
        match self {
            Self::Created(created) => created.into_response(),
            Self::Changed(data) => response::data(StatusCode::OK, &data),
        }
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        Created::<T>::describe(spec, schemas);
        spec.also = Some((StatusCode::OK, "It existed; changed."));
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

/// `200` with a `T` written as JSON beforehand, without an envelope; described as [`Bare<T>`].
/// For an answer that never changes, so that it is not serialized again at every request.
pub(crate) struct BareWritten<T>(
    pub(crate) bytes::Bytes,
    pub(crate) std::marker::PhantomData<T>,
);

impl<T: Serialize + JsonSchema + 'static> Reply for BareWritten<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::ok_json(self.0)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        Bare::<T>::describe(spec, schemas);
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

/// `200 {"success": true, "data": …}` written before, with its `ETag`
/// ([`crate::represent`]); described as [`Data<T>`].
pub(crate) struct TaggedData<T>(
    pub(crate) crate::represent::Tagged,
    pub(crate) std::marker::PhantomData<T>,
);

impl<T: Serialize + JsonSchema + 'static> Reply for TaggedData<T> {
    fn into_response(self) -> Response<ResponseBody> {
        response::tagged(self.0.body, self.0.etag)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        Data::<T>::describe(spec, schemas);
    }
}

/// A page of the call list, its body written from calls already JSON
/// ([`crate::represent::Representations::calls_page`]): answered as the [`Page`] of `Call`s
/// it was written from, and described as one.
pub(crate) struct CallPage(pub(crate) bytes::Bytes);

impl Reply for CallPage {
    fn into_response(self) -> Response<ResponseBody> {
        response::ok_json(self.0)
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        Page::<voiceplane_core::model::Call>::describe(spec, schemas);
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
