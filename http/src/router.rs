//! The route table and the resolver from `(method, path)` to a [`Route`].
//!
//! Every route is declared once, in the `routes!` invocation below: its method, its path
//! template (segments in braces capture a path parameter) and the [`Route`] variant it
//! resolves to, with one `String` field per captured parameter. The macro generates the
//! [`Route`] enum, the [`ROUTES`] table and [`resolve`] from that single list, so adding an
//! endpoint is one line here plus one arm in the handler's `match` (which the compiler
//! demands, because the match is exhaustive).
//!
//! Paths are matched segment by segment and exactly: no trailing slash, no empty segments, no
//! percent-decoding (identifiers never need it; an encoded id simply fails validation with a
//! 400). A path that matches a template under another method gives
//! [`RouteError::MethodNotAllowed`] with the allowed methods; a path that matches no template
//! gives [`RouteError::NotFound`].

use http::Method;

macro_rules! routes {
    (
        $(
            $(#[doc = $doc:literal])*
            $method:ident $template:literal => $variant:ident $({ $($param:ident),* $(,)? })?;
        )*
    ) => {
        /// A resolved route with its captured path parameters.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Route {
            $(
                $(#[doc = $doc])*
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
        }

        /// Resolves a request's method and path (without the query string).
        pub fn resolve(method: &Method, path: &str) -> Result<Route, RouteError> {
            let mut allow: Vec<&'static str> = Vec::new();
            $(
                if let Some(captures) = match_template($template, path) {
                    if method.as_str() == stringify!($method) {
                        #[allow(unused_mut, unused_variables)]
                        let mut captures = captures.into_iter();
                        return Ok(Route::$variant $({
                            $($param: captures.next().unwrap_or_default().to_owned()),*
                        })?);
                    }
                    if !allow.contains(&stringify!($method)) {
                        allow.push(stringify!($method));
                    }
                }
            )*
            if allow.is_empty() {
                Err(RouteError::NotFound)
            } else {
                Err(RouteError::MethodNotAllowed { allow })
            }
        }
    };
}

routes! {
    /// `GET /healthz`: the process is up (no auth).
    GET "/healthz" => Healthz;
    /// `GET /readyz`: the database answers (no auth).
    GET "/readyz" => Readyz;
    /// `GET /api/openapi.json`: the OpenAPI 3.1 document of every route (no auth).
    GET "/api/openapi.json" => OpenApi;

    /// `POST /api/api-keys`: `api_key_create`.
    POST "/api/api-keys" => ApiKeyCreate;
    /// `GET /api/api-keys`: `api_key_list`.
    GET "/api/api-keys" => ApiKeyList;
    /// `DELETE /api/api-keys/{key_id}`: `api_key_revoke`.
    DELETE "/api/api-keys/{key_id}" => ApiKeyRevoke { key_id };

    /// `POST /api/calls`: `call_create`.
    POST "/api/calls" => CallCreate;
    /// `GET /api/calls`: `call_list`.
    GET "/api/calls" => CallList;
    /// `GET /api/calls/{call_sid}`: `call_view`.
    GET "/api/calls/{call_sid}" => CallView { call_sid };
    /// `PATCH /api/calls/{call_sid}`: `call_update`.
    PATCH "/api/calls/{call_sid}" => CallUpdate { call_sid };
    /// `PUT /api/calls/{call_sid}/recording`: `recording_upload` (raw `audio/wav` or
    /// `audio/mpeg` body, streamed).
    PUT "/api/calls/{call_sid}/recording" => RecordingUpload { call_sid };
    /// `GET /api/calls/{call_sid}/recording/stream`: `recording_stream`.
    GET "/api/calls/{call_sid}/recording/stream" => RecordingStream { call_sid };
    /// `GET /api/calls/{call_sid}/recording/download`: `recording_download`.
    GET "/api/calls/{call_sid}/recording/download" => RecordingDownload { call_sid };
    /// `GET /recordings/{organization_id}/{file}`: `recording_signed_read` (a self-signed
    /// URL; no credentials besides its signature).
    GET "/recordings/{organization_id}/{file}" => RecordingSigned { organization_id, file };

    /// `POST /api/tools`: `tool_create`.
    POST "/api/tools" => ToolCreate;
    /// `GET /api/tools`: `tool_list`.
    GET "/api/tools" => ToolList;
    /// `GET /api/tools/{tool_id}`: `tool_view`.
    GET "/api/tools/{tool_id}" => ToolView { tool_id };
    /// `PATCH /api/tools/{tool_id}`: `tool_update`.
    PATCH "/api/tools/{tool_id}" => ToolUpdate { tool_id };
    /// `DELETE /api/tools/{tool_id}`: `tool_delete`.
    DELETE "/api/tools/{tool_id}" => ToolDelete { tool_id };

    /// `POST /api/agents`: `agent_create`.
    POST "/api/agents" => AgentCreate;
    /// `GET /api/agents`: `agent_list`.
    GET "/api/agents" => AgentList;
    /// `GET /api/agents/{agent_id}`: `agent_view`.
    GET "/api/agents/{agent_id}" => AgentView { agent_id };
    /// `PATCH /api/agents/{agent_id}`: `agent_update`.
    PATCH "/api/agents/{agent_id}" => AgentUpdate { agent_id };
    /// `DELETE /api/agents/{agent_id}`: `agent_delete`.
    DELETE "/api/agents/{agent_id}" => AgentDelete { agent_id };

    /// `POST /api/phone-numbers`: `phone_number_create`.
    POST "/api/phone-numbers" => PhoneNumberCreate;
    /// `GET /api/phone-numbers`: `phone_number_list`.
    GET "/api/phone-numbers" => PhoneNumberList;
    /// `GET /api/phone-numbers/{phone_number_id}`: `phone_number_view`.
    GET "/api/phone-numbers/{phone_number_id}" => PhoneNumberView { phone_number_id };
    /// `PATCH /api/phone-numbers/{phone_number_id}`: `phone_number_update`.
    PATCH "/api/phone-numbers/{phone_number_id}" => PhoneNumberUpdate { phone_number_id };
    /// `DELETE /api/phone-numbers/{phone_number_id}`: `phone_number_delete`.
    DELETE "/api/phone-numbers/{phone_number_id}" => PhoneNumberDelete { phone_number_id };

    /// `POST /api/integrations`: `integration_create`.
    POST "/api/integrations" => IntegrationCreate;
    /// `GET /api/integrations`: `integration_list`.
    GET "/api/integrations" => IntegrationList;
    /// `GET /api/integrations/{integration_id}`: `integration_view`.
    GET "/api/integrations/{integration_id}" => IntegrationView { integration_id };
    /// `PATCH /api/integrations/{integration_id}`: `integration_update`.
    PATCH "/api/integrations/{integration_id}" => IntegrationUpdate { integration_id };
    /// `DELETE /api/integrations/{integration_id}`: `integration_delete`.
    DELETE "/api/integrations/{integration_id}" => IntegrationDelete { integration_id };
    /// `POST /api/integrations/{integration_id}/validate`: `integration_validate`.
    POST "/api/integrations/{integration_id}/validate" => IntegrationValidate { integration_id };

    /// `POST /api/knowledge-base`: `document_create_text` (JSON `{name, text}`).
    POST "/api/knowledge-base" => DocumentCreate;
    /// `GET /api/knowledge-base`: `document_list`.
    GET "/api/knowledge-base" => DocumentList;
    /// `GET /api/knowledge-base/{documentation_id}`: `document_view`.
    GET "/api/knowledge-base/{documentation_id}" => DocumentView { documentation_id };
    /// `PATCH /api/knowledge-base/{documentation_id}`: `document_update`.
    PATCH "/api/knowledge-base/{documentation_id}" => DocumentUpdate { documentation_id };
    /// `DELETE /api/knowledge-base/{documentation_id}`: `document_delete`.
    DELETE "/api/knowledge-base/{documentation_id}" => DocumentDelete { documentation_id };

    /// `GET /api/voices/search`: `voice_search` (no envelope).
    GET "/api/voices/search" => VoiceSearch;
    /// `GET /api/voices/provider_two/library`: `voice_library_list` (no envelope).
    GET "/api/voices/provider_two/library" => VoiceLibraryList;
    /// `POST /api/voices/provider_two/library/add`: `voice_library_add` (200 `{voice_id}`).
    POST "/api/voices/provider_two/library/add" => VoiceLibraryAdd;

    /// `POST /api/auth/organizations/invitations`: `invitation_create`.
    POST "/api/auth/organizations/invitations" => InvitationCreate;
    /// `GET /api/auth/organizations/invitations`: `invitation_list`.
    GET "/api/auth/organizations/invitations" => InvitationList;
    /// `DELETE /api/auth/organizations/invitations/{invite_id}`: `invitation_revoke`.
    DELETE "/api/auth/organizations/invitations/{invite_id}" => InvitationRevoke { invite_id };
    /// `POST /api/auth/invitations/{invite_id}/accept`: `invitation_accept` (the invitee's
    /// JWT; no organization header).
    POST "/api/auth/invitations/{invite_id}/accept" => InvitationAccept { invite_id };
    /// `GET /api/auth/organizations/members`: `member_list`.
    GET "/api/auth/organizations/members" => MemberList;
    /// `PATCH /api/auth/organizations/members/{membership_id}`: `member_update`.
    PATCH "/api/auth/organizations/members/{membership_id}" => MemberUpdate { membership_id };
    /// `DELETE /api/auth/organizations/members/{membership_id}`: `member_remove`.
    DELETE "/api/auth/organizations/members/{membership_id}" => MemberRemove { membership_id };
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
mod tests {
    use super::*;

    fn get(path: &str) -> Result<Route, RouteError> {
        resolve(&Method::GET, path)
    }

    /// Fills each `{param}` of a template with a sample value.
    fn sample_path(template: &str) -> String {
        template
            .split('/')
            .map(|seg| {
                if seg.starts_with('{') {
                    format!("v_{}", &seg[1..seg.len() - 1])
                } else {
                    seg.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_route_resolves_to_itself() {
        for &(method, template) in ROUTES {
            let m = Method::from_bytes(method.as_bytes()).unwrap();
            let route = resolve(&m, &sample_path(template))
                .unwrap_or_else(|e| panic!("{method} {template}: {e:?}"));
            assert_eq!(route.definition(), (method, template));
        }
    }

    #[test]
    fn table_has_no_duplicates_and_params_match_templates() {
        assert_eq!(ROUTES.len(), ROUTE_PARAMS.len());
        for (i, &(method, template)) in ROUTES.iter().enumerate() {
            assert!(template.starts_with('/'), "{template}");
            let placeholders: Vec<&str> = template
                .split('/')
                .filter(|s| s.starts_with('{'))
                .map(|s| &s[1..s.len() - 1])
                .collect();
            assert_eq!(placeholders, ROUTE_PARAMS[i], "{method} {template}");
            for &(m2, t2) in &ROUTES[i + 1..] {
                assert!(
                    (method, template) != (m2, t2),
                    "duplicate {method} {template}"
                );
            }
        }
    }

    #[test]
    fn path_params_are_captured() {
        assert_eq!(
            get("/api/calls/call_abc123"),
            Ok(Route::CallView {
                call_sid: "call_abc123".into()
            })
        );
        assert_eq!(
            resolve(&Method::PATCH, "/api/calls/call_x"),
            Ok(Route::CallUpdate {
                call_sid: "call_x".into()
            })
        );
        assert_eq!(
            get("/api/agents/agent_0123456789abcdef"),
            Ok(Route::AgentView {
                agent_id: "agent_0123456789abcdef".into()
            })
        );
        assert_eq!(
            get("/api/phone-numbers/phon_1"),
            Ok(Route::PhoneNumberView {
                phone_number_id: "phon_1".into()
            })
        );
        assert_eq!(
            get("/api/knowledge-base/doc_1"),
            Ok(Route::DocumentView {
                documentation_id: "doc_1".into()
            })
        );
    }

    #[test]
    fn collections_resolve_by_method() {
        assert_eq!(get("/healthz"), Ok(Route::Healthz));
        assert_eq!(get("/readyz"), Ok(Route::Readyz));
        assert_eq!(get("/api/calls"), Ok(Route::CallList));
        assert_eq!(resolve(&Method::POST, "/api/calls"), Ok(Route::CallCreate));
        assert_eq!(get("/api/api-keys"), Ok(Route::ApiKeyList));
        assert_eq!(
            resolve(&Method::POST, "/api/api-keys"),
            Ok(Route::ApiKeyCreate)
        );
        assert_eq!(get("/api/tools"), Ok(Route::ToolList));
        assert_eq!(resolve(&Method::POST, "/api/tools"), Ok(Route::ToolCreate));
        assert_eq!(
            resolve(&Method::POST, "/api/agents"),
            Ok(Route::AgentCreate)
        );
        assert_eq!(
            resolve(&Method::POST, "/api/phone-numbers"),
            Ok(Route::PhoneNumberCreate)
        );
        assert_eq!(
            resolve(&Method::POST, "/api/knowledge-base"),
            Ok(Route::DocumentCreate)
        );
        assert_eq!(
            get("/api/auth/organizations/invitations"),
            Ok(Route::InvitationList)
        );
        assert_eq!(
            resolve(&Method::POST, "/api/auth/organizations/invitations"),
            Ok(Route::InvitationCreate)
        );
        assert_eq!(
            get("/api/auth/organizations/members"),
            Ok(Route::MemberList)
        );
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for path in [
            "",
            "/",
            "/x",
            "/api",
            "/api/",
            "/api/calls/",
            "/api/calls//",
            "/api/calls/call_1/extra",
            "/api//calls",
            "/healthz/",
            "/API/calls",
            "api/calls",
        ] {
            assert_eq!(get(path), Err(RouteError::NotFound), "{path:?}");
        }
    }

    #[test]
    fn wrong_method_lists_the_allowed_ones() {
        assert_eq!(
            resolve(&Method::DELETE, "/api/calls"),
            Err(RouteError::MethodNotAllowed {
                allow: vec!["POST", "GET"]
            })
        );
        assert_eq!(
            resolve(&Method::DELETE, "/api/calls/call_1"),
            Err(RouteError::MethodNotAllowed {
                allow: vec!["GET", "PATCH"]
            })
        );
        assert_eq!(
            resolve(&Method::POST, "/healthz"),
            Err(RouteError::MethodNotAllowed { allow: vec!["GET"] })
        );
        assert_eq!(
            resolve(&Method::PUT, "/api/agents"),
            Err(RouteError::MethodNotAllowed {
                allow: vec!["POST", "GET"]
            })
        );
        assert_eq!(
            resolve(&Method::HEAD, "/api/tools"),
            Err(RouteError::MethodNotAllowed {
                allow: vec!["POST", "GET"]
            })
        );
    }
}
