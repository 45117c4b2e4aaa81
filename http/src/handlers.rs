//! One arm per [`Route`]: authenticate, read the input, call the [`Service`] operation, wrap
//! the result. Status codes come from [`crate::error`], envelopes from [`crate::response`].

use http::request::Parts;
use http::{Request, Response, StatusCode};
use http_body::Body;
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Invitation, Member};
use voiceplane_core::page::PageParams;

use crate::body::{JSON_REQUIRED, read_json};
use crate::error::ApiError;
use crate::router::Route;
use crate::{Api, BoxError, ResponseBody, extract, response};

/// The 415 detail of `POST /api/knowledge-base` for anything but JSON.
const KB_JSON_REQUIRED: &str = "Content-Type must be application/json with {\"name\", \"text\"}; \
     file uploads (multipart/form-data) are not supported yet";

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

        Route::AgentCreate => {
            let actor = cx.actor().await?;
            let input = cx.json(body).await?;
            Ok(response::created(&svc.agent_create(&actor, input).await?))
        }
        Route::AgentView { agent_id } => {
            let actor = cx.actor().await?;
            Ok(response::ok(&svc.agent_view(&actor, &agent_id).await?))
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

        Route::DocumentCreate => {
            let actor = cx.actor().await?;
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
