//! The route table: every operation of the API, declared once.
//!
//! Each line of the `routes!` invocation below gives a route's summary (its doc comment), its
//! method, its path template (segments in braces capture a path parameter), the [`Route`]
//! variant it resolves to, its handler in `src/ops/` and, in brackets, the error statuses
//! that neither its credentials, nor its parameters, nor its body imply. The handler's name
//! is the operation's id: the `Service` method it calls (`<resource>_<verb>`), the
//! operationId of the OpenAPI document and the `operation` field of the request span; its
//! module is the operation's tag. The macro generates, from that single list, the [`Route`]
//! enum, the [`ROUTES`] and [`OPERATIONS`] tables, [`resolve`], the dispatch to the handlers
//! and their descriptions for the OpenAPI document.
//!
//! Paths are matched segment by segment and exactly: no trailing slash, no empty segments, no
//! percent-decoding (identifiers never need it; an encoded id simply fails validation with a
//! 400). A path that matches a template under another method gives
//! [`RouteError::MethodNotAllowed`] with the allowed methods; a path that matches no template
//! gives [`RouteError::NotFound`].

use http::request::Parts;
use http::{Method, Response};

use crate::endpoint::{self, RequestBody};
use crate::error::ApiError;
use crate::openapi::{OpSpec, Schemas};
use crate::{Api, ResponseBody};

/// One operation of the API, as the route table declares it.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// The HTTP method.
    pub method: &'static str,
    /// The path template; `{name}` segments are parameters.
    pub template: &'static str,
    /// The operation's id: the handler's and the `Service` method's name.
    pub id: &'static str,
    /// The area the operation belongs to (the handler's module), e.g. `phone_numbers`.
    pub area: &'static str,
    /// One line saying what the operation does.
    pub summary: &'static str,
    /// Error statuses beyond those implied by its credentials, parameters and body.
    pub errors: &'static [u16],
    pub(crate) describe: fn(&mut Schemas) -> OpSpec,
}

impl Operation {
    /// The OpenAPI tag: the area, in the spelling of the paths (`phone-numbers`).
    pub fn tag(&self) -> String {
        self.area.replace('_', "-")
    }
}

/// The operations the adapter answers itself, with no `Service` method behind them.
pub const ADAPTER_OPERATIONS: &[&str] = &["health_live", "openapi_document"];

macro_rules! routes {
    (
        $(
            #[doc = $summary:literal]
            $method:ident $template:literal => $variant:ident $({ $($param:ident),* $(,)? })?
                = $area:ident :: $handler:ident $([$($status:literal),*])?;
        )*
    ) => {
        /// A resolved route with its captured path parameters.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Route {
            $(
                #[doc = concat!("`", stringify!($method), " ", $template, "`: `",
                    stringify!($handler), "`.")]
                #[doc = ""]
                #[doc = $summary]
                $variant $({
                    $(
                        #[doc = concat!("The `{", stringify!($param), "}` path segment, as sent.")]
                        $param: String,
                    )*
                })?,
            )*
        }

        /// Every route as `(method, path template)`, in declaration order. Path parameters
        /// are written `{name}`.
        pub const ROUTES: &[(&str, &str)] = &[$((stringify!($method), $template)),*];

        /// Every operation, in declaration order (the order of [`ROUTES`]).
        pub const OPERATIONS: &[Operation] = &[$(Operation {
            method: stringify!($method),
            template: $template,
            id: stringify!($handler),
            area: stringify!($area),
            summary: $summary.trim_ascii(),
            errors: &[$($($status),*)?],
            describe: |schemas| endpoint::spec(crate::ops::$area::$handler, schemas),
        }),*];

        /// The parameter names of each route, in the order of [`ROUTES`]; the tests check
        /// them against the templates.
        #[cfg(test)]
        const ROUTE_PARAMS: &[&[&str]] = &[$(&[$($(stringify!($param)),*)?]),*];

        impl Route {
            /// The `(method, template)` this route was declared with.
            pub fn definition(&self) -> (&'static str, &'static str) {
                match self {
                    $(Self::$variant { .. } => (stringify!($method), $template),)*
                }
            }

            /// The id of the operation this route runs (`agent_view`).
            pub fn operation_id(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => stringify!($handler),)*
                }
            }
        }

        /// Resolves a request's method and path (without the query string). `HEAD` resolves to
        /// the `GET` route of the path, and the allowed methods of a 405 list `HEAD` after
        /// `GET`.
        pub fn resolve(method: &Method, path: &str) -> Result<Route, RouteError> {
            let mut allow: Vec<&'static str> = Vec::new();
            $(
                if let Some(captures) = match_template($template, path) {
                    // HEAD runs the GET route; `Api::handle` drops the body (RFC 9110 §9.3.2).
                    if method.as_str() == stringify!($method)
                        || (method == Method::HEAD && stringify!($method) == "GET")
                    {
                        #[allow(unused_mut, unused_variables)]
                        let mut captures = captures.into_iter();
                        return Ok(Route::$variant $({
                            $($param: captures.next().unwrap_or_default().to_owned()),*
                        })?);
                    }
                    if !allow.contains(&stringify!($method)) {
                        allow.push(stringify!($method));
                        if stringify!($method) == "GET" {
                            allow.push("HEAD");
                        }
                    }
                }
            )*
            if allow.is_empty() {
                Err(RouteError::NotFound)
            } else {
                Err(RouteError::MethodNotAllowed { allow })
            }
        }

        /// Runs the handler of `route`.
        pub(crate) async fn dispatch(
            api: &Api,
            route: Route,
            parts: Parts,
            body: RequestBody,
        ) -> Result<Response<ResponseBody>, ApiError> {
            match route {
                $(Route::$variant $({ $($param),* })? => {
                    endpoint::run(
                        api,
                        parts,
                        body,
                        ($($($param,)*)?),
                        crate::ops::$area::$handler,
                    )
                    .await
                })*
            }
        }
    };
}

routes! {
    /// The process is up
    GET "/healthz" => Healthz = health::health_live;
    /// The database and the object store answer
    GET "/readyz" => Readyz = health::health_ready [503];
    /// This OpenAPI 3.1 document
    GET "/api/openapi.json" => OpenApi = meta::openapi_document;

    /// Create an API key
    POST "/api/api-keys" => ApiKeyCreate = api_keys::api_key_create;
    /// List API keys, revoked ones included
    GET "/api/api-keys" => ApiKeyList = api_keys::api_key_list;
    /// Get an API key (never its secret)
    GET "/api/api-keys/{key_id}" => ApiKeyView { key_id } = api_keys::api_key_view;
    /// Revoke an API key
    DELETE "/api/api-keys/{key_id}" => ApiKeyRevoke { key_id } = api_keys::api_key_revoke;

    /// Record a call
    POST "/api/calls" => CallCreate = calls::call_create;
    /// List calls
    GET "/api/calls" => CallList = calls::call_list;
    /// Count, cost and duration of the calls the filters keep, in total and per group
    GET "/api/calls/stats" => CallStats = calls::call_stats;
    /// Get a call
    GET "/api/calls/{call_sid}" => CallView { call_sid } = calls::call_view;
    /// Update a call
    PATCH "/api/calls/{call_sid}" => CallUpdate { call_sid } = calls::call_update;
    /// Delete a call with its transcript and recording
    DELETE "/api/calls/{call_sid}" => CallDelete { call_sid } = calls::call_delete;
    /// Append messages to the call's transcript
    POST "/api/calls/{call_sid}/messages" => CallMessageAppend { call_sid }
        = transcripts::call_message_append;
    /// List the call's transcript in conversation order
    GET "/api/calls/{call_sid}/messages" => CallMessageList { call_sid }
        = transcripts::call_message_list;
    /// Upload the call's recording (replaces a previous one)
    PUT "/api/calls/{call_sid}/recording" => RecordingUpload { call_sid }
        = recordings::recording_upload;
    /// A URL that plays the recording for an hour, with Range support
    GET "/api/calls/{call_sid}/recording/stream" => RecordingStream { call_sid }
        = recordings::recording_stream;
    /// Download the recording as a WAV attachment
    GET "/api/calls/{call_sid}/recording/download" => RecordingDownload { call_sid }
        = recordings::recording_download;
    /// Delete the call's recording
    DELETE "/api/calls/{call_sid}/recording" => RecordingDelete { call_sid }
        = recordings::recording_delete;
    /// Read a recording through a URL signed by this server (the `url` of recording_stream)
    GET "/recordings/{organization_id}/{file}" => RecordingSigned { organization_id, file }
        = recordings::recording_signed_read [403, 404, 416, 503];

    /// Create a tool
    POST "/api/tools" => ToolCreate = tools::tool_create [409];
    /// List tools (summaries, with total_count)
    GET "/api/tools" => ToolList = tools::tool_list;
    /// Get a tool
    GET "/api/tools/{tool_id}" => ToolView { tool_id } = tools::tool_view;
    /// Update a tool
    PATCH "/api/tools/{tool_id}" => ToolUpdate { tool_id } = tools::tool_update [409];
    /// Delete a tool
    DELETE "/api/tools/{tool_id}" => ToolDelete { tool_id } = tools::tool_delete;

    /// Create an agent
    POST "/api/agents" => AgentCreate = agents::agent_create;
    /// List agents
    GET "/api/agents" => AgentList = agents::agent_list;
    /// Get an agent
    GET "/api/agents/{agent_id}" => AgentView { agent_id } = agents::agent_view;
    /// Update an agent
    PATCH "/api/agents/{agent_id}" => AgentUpdate { agent_id } = agents::agent_update;
    /// Delete an agent
    DELETE "/api/agents/{agent_id}" => AgentDelete { agent_id } = agents::agent_delete;

    /// Add a phone number
    POST "/api/phone-numbers" => PhoneNumberCreate = phone_numbers::phone_number_create [409];
    /// List phone numbers
    GET "/api/phone-numbers" => PhoneNumberList = phone_numbers::phone_number_list;
    /// Get a phone number
    GET "/api/phone-numbers/{phone_number_id}" => PhoneNumberView { phone_number_id }
        = phone_numbers::phone_number_view;
    /// Update a phone number
    PATCH "/api/phone-numbers/{phone_number_id}" => PhoneNumberUpdate { phone_number_id }
        = phone_numbers::phone_number_update [409];
    /// Delete a phone number
    DELETE "/api/phone-numbers/{phone_number_id}" => PhoneNumberDelete { phone_number_id }
        = phone_numbers::phone_number_delete;

    /// Store telephony credentials
    POST "/api/integrations" => IntegrationCreate = integrations::integration_create;
    /// List integrations
    GET "/api/integrations" => IntegrationList = integrations::integration_list;
    /// Get an integration
    GET "/api/integrations/{integration_id}" => IntegrationView { integration_id }
        = integrations::integration_view;
    /// Update an integration
    PATCH "/api/integrations/{integration_id}" => IntegrationUpdate { integration_id }
        = integrations::integration_update;
    /// Delete an integration and its stored credentials
    DELETE "/api/integrations/{integration_id}" => IntegrationDelete { integration_id }
        = integrations::integration_delete [409];
    /// Test the stored credentials with the provider; status becomes active or invalid
    POST "/api/integrations/{integration_id}/validate" => IntegrationValidate { integration_id }
        = integrations::integration_validate [502];

    /// Add a knowledge-base document: JSON text or an uploaded file
    POST "/api/knowledge-base" => DocumentCreate = knowledge_base::document_create;
    /// List documents
    GET "/api/knowledge-base" => DocumentList = knowledge_base::document_list;
    /// Get a document
    GET "/api/knowledge-base/{documentation_id}" => DocumentView { documentation_id }
        = knowledge_base::document_view;
    /// Rename a document
    PATCH "/api/knowledge-base/{documentation_id}" => DocumentUpdate { documentation_id }
        = knowledge_base::document_update;
    /// Delete a document
    DELETE "/api/knowledge-base/{documentation_id}" => DocumentDelete { documentation_id }
        = knowledge_base::document_delete;
    /// Process a document again; it is pending at once
    POST "/api/knowledge-base/{documentation_id}/reprocess" => DocumentReprocess { documentation_id }
        = knowledge_base::document_reprocess;
    /// Search the chunks of the organization's processed documents
    POST "/api/knowledge-base/search" => DocumentSearch = knowledge_base::document_search;

    /// Search a provider's voices
    GET "/api/voices/search" => VoiceSearch = voices::voice_search [502];
    /// List provider_two's shared voice library
    GET "/api/voices/provider_two/library" => VoiceLibraryList
        = voices::voice_library_list [502];
    /// Add a shared voice to the provider_two account
    POST "/api/voices/provider_two/library/add" => VoiceLibraryAdd
        = voices::voice_library_add [404, 502];

    /// The organization's retention policy
    GET "/api/organization/settings" => OrganizationSettingsView
        = organization::organization_settings_view;
    /// Change the organization's retention policy
    PATCH "/api/organization/settings" => OrganizationSettingsUpdate
        = organization::organization_settings_update;

    /// Invite someone
    POST "/api/auth/organizations/invitations" => InvitationCreate
        = members::invitation_create [409];
    /// List pending invitations
    GET "/api/auth/organizations/invitations" => InvitationList = members::invitation_list;
    /// Get an invitation, whatever its status
    GET "/api/auth/organizations/invitations/{invite_id}" => InvitationView { invite_id }
        = members::invitation_view;
    /// Withdraw an invitation
    DELETE "/api/auth/organizations/invitations/{invite_id}" => InvitationRevoke { invite_id }
        = members::invitation_revoke [409];
    /// Accept an invitation with the invitee's JWT
    POST "/api/auth/invitations/{invite_id}/accept" => InvitationAccept { invite_id }
        = members::invitation_accept [409];
    /// List members
    GET "/api/auth/organizations/members" => MemberList = members::member_list;
    /// Change a member's role
    PATCH "/api/auth/organizations/members/{membership_id}" => MemberUpdate { membership_id }
        = members::member_update [409];
    /// Remove a member and revoke the API keys they created
    DELETE "/api/auth/organizations/members/{membership_id}" => MemberRemove { membership_id }
        = members::member_remove [409];

    /// List events, newest first
    GET "/api/events" => EventList = events::event_list;
    /// Get an event
    GET "/api/events/{event_id}" => EventView { event_id } = events::event_view;

    /// List audit-log entries, newest first
    GET "/api/audit-log" => AuditList = audit::audit_list;

    /// Create a webhook endpoint; the answer holds its signing secret, shown only here
    POST "/api/webhooks" => WebhookCreate = webhooks::webhook_create;
    /// List webhook endpoints
    GET "/api/webhooks" => WebhookList = webhooks::webhook_list;
    /// Get a webhook endpoint
    GET "/api/webhooks/{webhook_id}" => WebhookView { webhook_id } = webhooks::webhook_view;
    /// Update a webhook endpoint
    PATCH "/api/webhooks/{webhook_id}" => WebhookUpdate { webhook_id }
        = webhooks::webhook_update;
    /// Delete a webhook endpoint and its deliveries
    DELETE "/api/webhooks/{webhook_id}" => WebhookDelete { webhook_id }
        = webhooks::webhook_delete;
    /// Replace the signing secret; the previous one keeps signing for 24 hours
    POST "/api/webhooks/{webhook_id}/rotate-secret" => WebhookRotateSecret { webhook_id }
        = webhooks::webhook_rotate_secret;
    /// Send a webhook.test event to this endpoint
    POST "/api/webhooks/{webhook_id}/test" => WebhookTest { webhook_id }
        = webhooks::webhook_test;
    /// List the deliveries to an endpoint, newest first
    GET "/api/webhooks/{webhook_id}/deliveries" => DeliveryList { webhook_id }
        = webhooks::delivery_list;
    /// Attempt a delivery again at once
    POST "/api/webhooks/{webhook_id}/deliveries/{delivery_id}/retry"
        => DeliveryRetry { webhook_id, delivery_id } = webhooks::delivery_retry;
}

/// Why a request matched no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// No template matches the path (HTTP 404).
    NotFound,
    /// Templates match the path, but none under the request's method (HTTP 405).
    MethodNotAllowed {
        /// The methods the path accepts, in table order.
        allow: Vec<&'static str>,
    },
}

/// Matches `path` against `template`; on success returns the captured segments in order.
/// A placeholder never matches an empty segment.
fn match_template<'p>(template: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let mut captures = Vec::new();
    let mut t = template.split('/');
    let mut p = path.split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(captures),
            (Some(ts), Some(ps)) => {
                if ts.starts_with('{') && ts.ends_with('}') {
                    if ps.is_empty() {
                        return None;
                    }
                    captures.push(ps);
                } else if ts != ps {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests;
