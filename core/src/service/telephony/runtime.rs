//! What the built-in voice runtime (DESIGN §24) does with the call it runs, as the system:
//! open it once its stream proved its token, keep its transcript, usage and recording, hang it
//! up, and record how it ended. No API key is involved: the token checked by
//! [`Service::runtime_open`] is the credential, and these writes carry no audit entry (a job's
//! writes do not either).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::auth::{Actor, Principal, RequestContext};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    Agent, Call, CallLatency, DocumentSearch, EventType, NewMessage, NewUsage, SearchHit, Tool,
    UsageItem,
};
use crate::role::Role;
use crate::runtime::{MediaEndpoint, token_matches};
use crate::service::{By, Service};
use crate::telephony::TelephonyProvider;
use crate::telephony::progress::{AnsweredBy, is_terminal};

/// A call the built-in runtime may run: the stream that asked for it showed its token.
#[derive(Debug, Clone)]
pub struct RuntimeCall {
    /// The call.
    pub call: Call,
    /// The configuration it runs with: the version it drew, else the agent as it is.
    pub agent: Agent,
    /// The agent's `custom_tools`, in its order (tools deleted since are left out).
    pub tools: Vec<Tool>,
    /// The values of the prompt's `{{name}}`s.
    pub dynamic_variables: BTreeMap<String, String>,
}

/// How a call the runtime ran ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeEnd {
    /// `tool_end_call`, `user_hangup`, `silence_timeout`, `max_duration`, `voicemail`,
    /// `runtime_error` or `runtime_busy`.
    pub reason: String,
    /// Caller turns answered.
    pub turn_count: i64,
    /// The turn latency, when a turn was answered.
    pub latency: Option<CallLatency>,
}

/// The one refusal of a stream that cannot run a call, whatever is wrong with it.
fn refused() -> Error {
    Error::Forbidden("this media stream is not one voiceplane opened".to_owned())
}

impl Service {
    /// The call `call_sid` for the built-in runtime, when `token` is its token, `endpoint` its
    /// provider, the provider's id of the call (when the stream names one) its own, and it is
    /// still live. Anything else is the same 403, and nothing is changed.
    pub async fn runtime_open(
        &self,
        endpoint: MediaEndpoint,
        call_sid: &str,
        token: &str,
        provider_call_id: Option<&str>,
    ) -> Result<RuntimeCall> {
        if !IdKind::Call.matches(call_sid) {
            return Err(refused());
        }
        let call = self
            .repo
            .call_get_any(call_sid)
            .await?
            .ok_or_else(refused)?;
        let stored = call.runtime_token.as_deref().ok_or_else(refused)?;
        if !token_matches(stored, token) {
            return Err(refused());
        }
        let provider = match endpoint {
            MediaEndpoint::Twilio => TelephonyProvider::Twilio,
            MediaEndpoint::Telnyx => TelephonyProvider::Telnyx,
        };
        if call.provider != Some(provider) {
            return Err(refused());
        }
        if let (Some(named), Some(own)) = (provider_call_id, call.provider_call_id.as_deref())
            && named != own
        {
            return Err(refused());
        }
        if is_terminal(call.status) && !call.ended_provisionally() {
            return Err(Error::Conflict(format!(
                "call {call_sid} has already ended"
            )));
        }
        let agent = self.call_agent(&call).await?.ok_or_else(|| {
            Error::Conflict(format!("the agent of call {call_sid} no longer exists"))
        })?;
        let mut tools = Vec::with_capacity(agent.custom_tools.len());
        for tool_id in &agent.custom_tools {
            if let Some(tool) = self.repo.tool_get(&call.organization_id, tool_id).await? {
                tools.push(tool);
            }
        }
        Ok(RuntimeCall {
            dynamic_variables: call.dynamic_variables.clone(),
            call,
            agent,
            tools,
        })
    }

    /// Appends the runtime's messages to the call's transcript.
    pub async fn runtime_messages(
        &self,
        organization_id: &str,
        call_sid: &str,
        messages: Vec<NewMessage>,
    ) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        let messages = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| crate::service::calls::checked_message(i, m))
            .collect::<Result<Vec<_>>>()?;
        self.repo
            .call_message_append(organization_id, call_sid, &messages, self.now(), None)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        Ok(())
    }

    /// Charges the runtime's usage to the call, priced by the organization's book; an item
    /// whose id the call holds already is not charged again.
    pub async fn runtime_usage(
        &self,
        organization_id: &str,
        call_sid: &str,
        items: Vec<UsageItem>,
    ) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        self.call_usage_add(
            &runtime_actor(organization_id),
            call_sid,
            NewUsage { items },
        )
        .await
        .map(|_| ())
    }

    /// Stores the runtime's stereo WAV as the call's recording (`recording.ready`).
    pub async fn runtime_recording(
        &self,
        organization_id: &str,
        call_sid: &str,
        wav: Bytes,
    ) -> Result<()> {
        let body: crate::blob::ByteStream = Box::pin(once(wav));
        self.recording_upload(
            &runtime_actor(organization_id),
            call_sid,
            crate::service::AudioFormat::Wav,
            body,
        )
        .await
        .map(|_| ())
    }

    /// Whether the provider said a machine answered the call (Twilio's `AnsweredBy`, Telnyx's
    /// machine detection), as far as its reports have arrived.
    pub async fn runtime_answered_by(
        &self,
        organization_id: &str,
        call_sid: &str,
    ) -> Result<Option<AnsweredBy>> {
        Ok(self
            .repo
            .call_get(organization_id, call_sid)
            .await?
            .and_then(|c| c.answered_by))
    }

    /// Hangs the call up at its provider. A call the provider says is gone is fine: it ended.
    pub async fn runtime_hang_up(&self, organization_id: &str, call_sid: &str) -> Result<()> {
        let call = self
            .repo
            .call_get(organization_id, call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        let Some(provider_call_id) = call.provider_call_id.clone() else {
            return Ok(());
        };
        let (_, credentials) = self.call_credentials(&call).await?;
        let (gateway, _) = self.telephony_gateway()?;
        match gateway.hangup(&credentials, &provider_call_id, true).await {
            Ok(()) => Ok(()),
            Err(e) if e.call_is_gone() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Records how the runtime's call ended: its `end_reason` (which the provider's final
    /// report keeps), turns and latency. The call's status stays the provider's to report.
    pub async fn runtime_finish(
        &self,
        organization_id: &str,
        call_sid: &str,
        end: RuntimeEnd,
    ) -> Result<()> {
        let now = self.now();
        let stamp = self.event_stamp(EventType::CallUpdated, By::System);
        let change = Box::new(move |c: &mut Call| {
            c.end_reason = Some(end.reason);
            c.turn_count = end.turn_count;
            c.latency = end.latency;
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        self.after_write(
            self.repo
                .call_update(organization_id, call_sid, change, &stamp)
                .await,
        )?;
        Ok(())
    }

    /// The organization's document chunks that best match `query`, among `documents`.
    pub async fn runtime_search(
        &self,
        organization_id: &str,
        documents: &[String],
        query: &str,
    ) -> Result<Vec<SearchHit>> {
        let query: String = query.chars().take(1000).collect();
        self.document_search(
            &runtime_actor(organization_id),
            DocumentSearch {
                query,
                document_ids: Some(documents.to_vec()),
                limit: Some(3),
            },
        )
        .await
    }
}

/// The built-in runtime acting in `organization_id`, for the operations it shares with API
/// callers (usage, recordings, search): as an admin, never recorded in the audit log.
fn runtime_actor(organization_id: &str) -> Actor {
    Actor {
        organization_id: organization_id.to_owned(),
        user_id: "runtime".to_owned(),
        role: Role::Admin,
        principal: Principal::User,
        scopes: None,
        request: RequestContext::default(),
        versions: None,
    }
}

/// A stream of one chunk.
fn once(bytes: Bytes) -> impl futures_core::Stream<Item = Result<Bytes>> + Send {
    struct Once(Option<Bytes>);
    impl futures_core::Stream for Once {
        type Item = Result<Bytes>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.take().map(Ok))
        }
    }
    Once(Some(bytes))
}
