//! One arm per [`Route`]: authenticate, read the input, call the [`Service`] operation, wrap
//! the result. Status codes come from [`crate::error`], envelopes from [`crate::response`].

use http::request::Parts;
use http::{Request, Response, StatusCode};
use http_body::Body;
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Invitation, Member, Outcome};
use voiceplane_core::page::PageParams;

use crate::body::{JSON_REQUIRED, read_json, require_json};
use crate::error::ApiError;
use crate::router::Route;
use crate::{Api, BoxError, ResponseBody, extract, recordings, response};

/// The 415 detail of `POST /api/knowledge-base` for anything but JSON.
const KB_JSON_REQUIRED: &str = "Content-Type must be application/json with {\"name\", \"text\"}, \
     or multipart/form-data with a `file` part";

type Reply = Result<Response<ResponseBody>, ApiError>;

/// The parts of a request a handler reads, besides the body.
struct Cx<'a> {
    api: &'a Api,
    parts: &'a Parts,
}

impl Cx<'_> {
    fn service(&self) -> &Service {
        &self.api.service
    }

    /// The authenticated caller.
    async fn actor(&self) -> Result<Actor, ApiError> {
        let creds = extract::credentials(&self.parts.headers)?;
        Ok(self.service().authenticate(&creds).await?)
    }

    /// `limit` and `cursor` of the query string.
    fn page_params(&self) -> Result<PageParams, ApiError> {
        extract::page_params(self.parts.uri.query())
    }

    /// The JSON body, decoded into `T`.
    async fn json<T, B>(&self, body: B) -> Result<T, ApiError>
    where
        T: DeserializeOwned,
        B: Body + Send,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        self.json_or(body, JSON_REQUIRED).await
    }

    /// The JSON body, with `wrong_type` as the 415 detail.
    async fn json_or<T, B>(&self, body: B, wrong_type: &str) -> Result<T, ApiError>
    where
        T: DeserializeOwned,
        B: Body + Send,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        read_json(
            &self.parts.headers,
            body,
            self.api.config.max_body_bytes,
            wrong_type,
        )
        .await
    }
}

#[derive(Serialize)]
struct Status {
    status: &'static str,
}

#[derive(Serialize)]
struct Invitations<'a> {
    invitations: &'a [Invitation],
}

#[derive(Serialize)]
struct Members<'a> {
    members: &'a [Member],
}

/// The answer of a delete: the resource as it was, and a sentence saying it is gone.
fn deleted<T>(what: &str, data: T) -> Outcome<T> {
    Outcome {
        data,
        message: format!("{what} deleted"),
    }
}

/// Runs the handler of `route`.
pub(crate) async fn dispatch<B>(api: &Api, route: Route, req: Request<B>) -> Reply
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    let cx = Cx { api, parts: &parts };
    let svc = cx.service();
    match route {
        Route::Healthz => Ok(response::json(StatusCode::OK, &Status { status: "ok" })),
        Route::Readyz => match svc.health_ready().await {
            Ok(()) => Ok(response::json(StatusCode::OK, &Status { status: "ready" })),
            Err(e) => Err(ApiError::from(e).with_status(StatusCode::SERVICE_UNAVAILABLE)),
        },
        Route::OpenApi => Ok(crate::openapi::response()),

        Route::ApiKeyCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(&svc.api_key_create(&actor, input).await?))
        }
        Route::ApiKeyList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(&svc.api_key_list(&actor, &params).await?))
        }

        Route::ApiKeyRevoke { key_id } => {
            let actor = cx.actor().await?;
            Ok(response::outcome(
                &svc.api_key_revoke(&actor, &key_id).await?,
            ))
        }

        Route::CallCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(&svc.call_create(&actor, input).await?))
        }
        Route::CallList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(&svc.call_list(&actor, &params).await?))
        }
        Route::CallView { call_sid } => {
            let actor = cx.actor().await?;
            Ok(response::ok(&svc.call_view(&actor, &call_sid).await?))
        }
        Route::CallUpdate { call_sid } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.call_update(&actor, &call_sid, input).await?,
            ))
        }

        Route::RecordingUpload { call_sid } => {
            let actor = cx.actor().await?;
            recordings::upload(api, &actor, &parts, body, &call_sid).await
        }
        Route::RecordingStream { call_sid } => {
            let actor = cx.actor().await?;
            Ok(response::ok(
                &svc.recording_stream(&actor, &call_sid).await?,
            ))
        }
        Route::RecordingDownload { call_sid } => {
            let actor = cx.actor().await?;
            recordings::download(api, &actor, &call_sid).await
        }
        Route::RecordingSigned {
            organization_id,
            file,
        } => recordings::signed(api, &parts, &organization_id, &file).await,

        Route::ToolCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(&svc.tool_create(&actor, input).await?))
        }
        Route::ToolList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(&svc.tool_list(&actor, &params).await?))
        }

        Route::ToolView { tool_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(&svc.tool_view(&actor, &tool_id).await?))
        }
        Route::ToolUpdate { tool_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.tool_update(&actor, &tool_id, input).await?,
            ))
        }
        Route::ToolDelete { tool_id } => {
            let actor = cx.actor().await?;
            let tool = svc.tool_delete(&actor, &tool_id).await?;
            Ok(response::outcome(&deleted("tool", tool)))
        }

        Route::AgentCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(&svc.agent_create(&actor, input).await?))
        }
        Route::AgentView { agent_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(&svc.agent_view(&actor, &agent_id).await?))
        }

        Route::AgentList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(&svc.agent_list(&actor, &params).await?))
        }
        Route::AgentUpdate { agent_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.agent_update(&actor, &agent_id, input).await?,
            ))
        }
        Route::AgentDelete { agent_id } => {
            let actor = cx.actor().await?;
            let agent = svc.agent_delete(&actor, &agent_id).await?;
            Ok(response::outcome(&deleted("agent", agent)))
        }

        Route::PhoneNumberCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(
                &svc.phone_number_create(&actor, input).await?,
            ))
        }
        Route::PhoneNumberView { phone_number_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(
                &svc.phone_number_view(&actor, &phone_number_id).await?,
            ))
        }

        Route::PhoneNumberList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(
                &svc.phone_number_list(&actor, &params).await?,
            ))
        }
        Route::PhoneNumberUpdate { phone_number_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.phone_number_update(&actor, &phone_number_id, input)
                    .await?,
            ))
        }
        Route::PhoneNumberDelete { phone_number_id } => {
            let actor = cx.actor().await?;
            let number = svc.phone_number_delete(&actor, &phone_number_id).await?;
            Ok(response::outcome(&deleted("phone number", number)))
        }

        Route::IntegrationCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(
                &svc.integration_create(&actor, input).await?,
            ))
        }
        Route::IntegrationList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(
                &svc.integration_list(&actor, &params).await?,
            ))
        }
        Route::IntegrationView { integration_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(
                &svc.integration_view(&actor, &integration_id).await?,
            ))
        }
        Route::IntegrationUpdate { integration_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.integration_update(&actor, &integration_id, input)
                    .await?,
            ))
        }
        Route::IntegrationDelete { integration_id } => {
            let actor = cx.actor().await?;
            Ok(response::outcome(
                &svc.integration_delete(&actor, &integration_id).await?,
            ))
        }
        Route::IntegrationValidate { integration_id } => {
            let actor = cx.actor().await?;
            // The spec requires a JSON request; the body itself carries nothing.
            require_json(&parts.headers, JSON_REQUIRED)?;
            Ok(response::outcome(
                &svc.integration_validate(&actor, &integration_id).await?,
            ))
        }

        Route::DocumentCreate => {
            let actor = cx.actor().await?;
            if recordings::is_multipart(&parts) {
                let doc = recordings::document_upload(api, &actor, &parts, body).await?;
                return Ok(response::created(&doc));
            }
            let input = cx.json_or(body, KB_JSON_REQUIRED).await?;
            Ok(response::created(
                &svc.document_create_text(&actor, input).await?,
            ))
        }
        Route::DocumentView { documentation_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(
                &svc.document_view(&actor, &documentation_id).await?,
            ))
        }

        Route::DocumentList => {
            let actor = cx.actor().await?;
            let params = cx.page_params()?;
            Ok(response::page(&svc.document_list(&actor, &params).await?))
        }
        Route::DocumentUpdate { documentation_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.document_update(&actor, &documentation_id, input)
                    .await?,
            ))
        }
        Route::DocumentDelete { documentation_id } => {
            let actor = cx.actor().await?;
            let doc = svc.document_delete(&actor, &documentation_id).await?;
            Ok(response::outcome(&deleted("knowledge-base document", doc)))
        }

        // Voice endpoints answer without the success envelope (SPEC §4.5, §4.14, §4.15).
        Route::VoiceSearch => {
            let actor = cx.actor().await?;
            let input = crate::voices::search_input(parts.uri.query())?;
            let page = svc.voice_search(&actor, input).await?;
            Ok(response::json(StatusCode::OK, &page))
        }
        Route::VoiceLibraryList => {
            let actor = cx.actor().await?;
            let input = crate::voices::library_input(parts.uri.query())?;
            let page = svc.voice_library_list(&actor, input).await?;
            Ok(response::json(StatusCode::OK, &page))
        }
        Route::VoiceLibraryAdd => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            let added = svc.voice_library_add(&actor, input).await?;
            Ok(response::json(StatusCode::OK, &added))
        }

        Route::InvitationCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(
                &svc.invitation_create(&actor, input).await?,
            ))
        }
        Route::InvitationList => {
            let actor = cx.actor().await?;
            let invitations = svc.invitation_list(&actor).await?;
            Ok(response::json(
                StatusCode::OK,
                &Invitations {
                    invitations: &invitations,
                },
            ))
        }
        Route::InvitationRevoke { invite_id } => {
            let actor = cx.actor().await?;
            Ok(response::outcome(
                &svc.invitation_revoke(&actor, &invite_id).await?,
            ))
        }
        Route::InvitationAccept { invite_id } => {
            let creds = extract::credentials(&parts.headers)?;
            Ok(response::outcome(
                &svc.invitation_accept(creds.bearer.as_deref(), &invite_id)
                    .await?,
            ))
        }
        Route::MemberUpdate { membership_id } => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::ok(
                &svc.member_update(&actor, &membership_id, input).await?,
            ))
        }
        Route::MemberRemove { membership_id } => {
            let actor = cx.actor().await?;
            let member = svc.member_remove(&actor, &membership_id).await?;
            Ok(response::outcome(&Outcome {
                data: member,
                message: "member removed; the API keys they created here are revoked".to_owned(),
            }))
        }
        Route::MemberList => {
            let actor = cx.actor().await?;
            let members = svc.member_list(&actor).await?;
            Ok(response::json(
                StatusCode::OK,
                &Members { members: &members },
            ))
        }
    }
}
