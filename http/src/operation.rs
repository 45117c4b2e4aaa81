//! What an operation is: one static [`Operation`] declared beside its handler in `src/ops/`,
//! carrying everything the adapter needs to know about it: its method and path template, how
//! its caller authenticates, how it takes part in conditional requests, the error statuses
//! particular to it, its summary and description, and the handler itself.
//!
//! Everything else is derived from the declarations: the resolver and the dispatch
//! ([`crate::ops`]), the protections (`protect/`), `ETag` handling
//! (`conditional.rs`), the OpenAPI document, the `operation` of the request span and
//! of the metrics, and the table of `http/README.md`. An operation is declared as
//!
//! ```text
//! pub(crate) const AGENT_VIEW: Operation = Operation::get("/api/agents/{agent_id}", handler!(agent_view))
//!     .tagged_view()
//!     .doc("Get an agent", "One agent of the organization …");
//! ```
//!
//! and listed in its module's [`Area`].

use std::future::Future;
use std::pin::Pin;

use http::request::Parts;
use http::{Method, Response};

pub use crate::credentials::Auth;

use crate::api::Api;
use crate::body::RequestBody;
use crate::caller::Authenticated;
use crate::error::ApiError;
use crate::openapi::spec::{OpSpec, Schemas};
use crate::response::ResponseBody;

/// How an operation takes part in conditional requests (RFC 9110 §13; see
/// `conditional.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conditional {
    /// None: an unsafe request with an `If-Match` listing tags gets 412, since nothing it
    /// answers has a tag; `If-Match: *` passes, `If-None-Match` is ignored.
    None,
    /// The `GET` of a resource's representation: answered with a strong `ETag`, `304` for a
    /// matching `If-None-Match`, `412` for an `If-Match` that does not match.
    TaggedView,
    /// A write of the resource a [`Conditional::TaggedView`] at the same path shows, answering
    /// that same representation with its `ETag`; `If-Match`/`If-None-Match` are checked in the
    /// write's transaction.
    TaggedWrite,
    /// A write (a delete) of the resource of a [`Conditional::TaggedView`] at the same path,
    /// with the preconditions checked in its transaction; its answer carries no tag.
    Write,
}

/// The path parameters of a resolved request, in template order (at most two).
pub(crate) type Captures = [String; 2];

/// The future of a running handler.
pub(crate) type Answer =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, ApiError>> + Send>>;

/// A handler as the adapter calls it, built by [`handler!`](crate::endpoint::handler) from an `async fn` of `src/ops/`.
#[derive(Clone, Copy)]
pub(crate) struct Handler {
    /// The function's name: the operation's id.
    pub(crate) id: &'static str,
    /// Extracts the handler's inputs from the request (and its caller, when authenticated),
    /// calls it and answers.
    pub(crate) run: fn(Api, Parts, Captures, RequestBody, Option<Authenticated>) -> Answer,
    /// What its inputs and answer say about the operation, for the OpenAPI document.
    pub(crate) describe: fn(&mut Schemas) -> OpSpec,
}

/// One operation of the API. See the [module](self).
#[derive(Clone, Copy)]
pub struct Operation {
    /// The HTTP method. `HEAD` runs the `GET` of the same path.
    pub method: &'static str,
    /// The path template; `{name}` segments are parameters.
    pub template: &'static str,
    /// The operation's id (`agent_view`): the handler's name, the OpenAPI operationId and the
    /// `operation` of the request span and of the metrics.
    pub id: &'static str,
    /// How its caller authenticates.
    pub auth: Auth,
    /// How it takes part in conditional requests.
    pub conditional: Conditional,
    /// Error statuses beyond those its authentication, parameters, body and conditional
    /// behaviour imply.
    pub errors: &'static [u16],
    /// One line saying what it does.
    pub summary: &'static str,
    /// What it does beyond its summary, who may call it and the errors worth knowing.
    pub description: &'static str,
    pub(crate) handler: Handler,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.method, self.template, self.id)
    }
}

impl Operation {
    const fn new(method: &'static str, template: &'static str, handler: Handler) -> Self {
        Self {
            method,
            template,
            id: handler.id,
            auth: Auth::Organization,
            conditional: Conditional::None,
            errors: &[],
            summary: "",
            description: "",
            handler,
        }
    }

    /// A `GET` of an organization's caller.
    pub(crate) const fn get(template: &'static str, handler: Handler) -> Self {
        Self::new("GET", template, handler)
    }

    /// A `POST` of an organization's caller.
    pub(crate) const fn post(template: &'static str, handler: Handler) -> Self {
        Self::new("POST", template, handler)
    }

    /// A `PUT` of an organization's caller.
    pub(crate) const fn put(template: &'static str, handler: Handler) -> Self {
        Self::new("PUT", template, handler)
    }

    /// A `PATCH` of an organization's caller.
    pub(crate) const fn patch(template: &'static str, handler: Handler) -> Self {
        Self::new("PATCH", template, handler)
    }

    /// A `DELETE` of an organization's caller.
    pub(crate) const fn delete(template: &'static str, handler: Handler) -> Self {
        Self::new("DELETE", template, handler)
    }

    /// Taking no credentials.
    pub(crate) const fn public(mut self) -> Self {
        self.auth = Auth::None;
        self
    }

    /// Taking a bearer JWT without an organization.
    pub(crate) const fn invitee(mut self) -> Self {
        self.auth = Auth::Invitee;
        self
    }

    /// Called by a telephony provider, authenticated by its signature.
    pub(crate) const fn provider(mut self) -> Self {
        self.auth = Auth::Provider;
        self
    }

    /// The tagged view of its path ([`Conditional::TaggedView`]).
    pub(crate) const fn tagged_view(mut self) -> Self {
        self.conditional = Conditional::TaggedView;
        self
    }

    /// A write answering the tagged view's representation ([`Conditional::TaggedWrite`]).
    pub(crate) const fn tagged_write(mut self) -> Self {
        self.conditional = Conditional::TaggedWrite;
        self
    }

    /// A write under the view's preconditions ([`Conditional::Write`]).
    pub(crate) const fn conditional_write(mut self) -> Self {
        self.conditional = Conditional::Write;
        self
    }

    /// With these error statuses particular to it.
    pub(crate) const fn errors(mut self, errors: &'static [u16]) -> Self {
        self.errors = errors;
        self
    }

    /// With its summary (one line) and description.
    pub(crate) const fn doc(mut self, summary: &'static str, description: &'static str) -> Self {
        self.summary = summary;
        self.description = description;
        self
    }

    /// Whether a request of `method` runs this operation (`HEAD` runs a `GET`).
    pub(crate) fn answers(&self, method: &Method) -> bool {
        method.as_str() == self.method || (method == Method::HEAD && self.method == "GET")
    }

    /// The description of its inputs and answer, from its handler's types.
    pub(crate) fn describe(&self, schemas: &mut Schemas) -> OpSpec {
        (self.handler.describe)(schemas)
    }

    /// Runs its handler, for `caller` when the request was authenticated.
    pub(crate) fn run(
        &self,
        api: Api,
        parts: Parts,
        captures: Captures,
        body: RequestBody,
        caller: Option<Authenticated>,
    ) -> Answer {
        (self.handler.run)(api, parts, captures, body, caller)
    }
}

/// The operations of one area of the API (one module of `src/ops/`), which share an OpenAPI
/// tag.
#[derive(Debug, Clone, Copy)]
pub struct Area {
    /// The OpenAPI tag (`phone-numbers`).
    pub tag: &'static str,
    /// What the tag groups.
    pub about: &'static str,
    /// Its operations, in the order the document lists them.
    pub operations: &'static [Operation],
}
