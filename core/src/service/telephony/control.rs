//! What callers and the voice runtime do with a live call: hang it up, and read in one
//! request everything the runtime needs to run it.

use serde::Serialize;

use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{Agent, Call, CallStatus, EventType, Tool};
use crate::role::Permission;
use crate::service::{By, Service};
use crate::telephony::progress::is_terminal;

/// The answer of `GET /api/calls/{call_sid}/session`: what the runtime needs to run a call.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CallSession {
    /// The call.
    pub call: Call,
    /// The configuration of the agent the call runs with: the version it was given, else
    /// the agent as it is.
    pub agent: Agent,
    /// The full records of the agent's `custom_tools`, in its order (tools deleted since are
    /// left out).
    pub tools: Vec<Tool>,
    /// The values to fill into the agent's prompt.
    pub dynamic_variables: std::collections::BTreeMap<String, String>,
    /// The caller's own data about the call.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl Service {
    /// Ends a call: one not yet dialed is `canceled` and never dialed; a live one is hung up
    /// at its provider, which then reports how it ended; one the provider says is gone ends at
    /// once, `provider_lost`. 409 when it has ended already, 502 when the provider cannot be
    /// reached.
    pub async fn call_hangup(&self, actor: &Actor, call_sid: &str) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let org = &actor.organization_id;
        let call = self
            .repo
            .call_get(org, &call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        let ended = || Error::Conflict(format!("call {call_sid} has already ended"));
        if is_terminal(call.status) && !call.ended_provisionally() {
            return Err(ended());
        }
        if call.provider.is_none() {
            return Err(Error::unprocessable(format!(
                "call {call_sid} was recorded through the API, not placed through a provider; \
                 PATCH its status instead"
            )));
        }
        let Some(provider_call_id) = call.provider_call_id.clone() else {
            return self.cancel_undialed(actor, &call).await;
        };
        let (_, credentials) = self.call_credentials(&call).await?;
        let (gateway, _) = self.telephony_gateway()?;
        // Twilio answers an incoming call before it asks for the TwiML that streams it, and
        // reports nothing until it ends: such a call is live whatever its stored status.
        let answered = call.status == CallStatus::InProgress
            || call.call_type == crate::model::CallType::Inbound;
        match gateway
            .hangup(&credentials, &provider_call_id, answered)
            .await
        {
            Ok(()) => Ok(call),
            // Its end was never reported: it ends now, as the provider says.
            Err(e) if e.call_is_gone() => Ok(self.lose_call(&call).await?.unwrap_or(call)),
            Err(e) => Err(e.into()),
        }
    }

    /// Cancels a call whose dial has not started: it will never be sent. 409 when the dial
    /// started meanwhile (its outcome is on the way) or the call ended.
    async fn cancel_undialed(&self, actor: &Actor, call: &Call) -> Result<Call> {
        let call_sid = call.call_sid.clone();
        let now = self.now();
        let sid = call_sid.clone();
        let change = Box::new(move |c: &mut Call| {
            if c.status != CallStatus::Queued || c.dial_started_at.is_some() {
                return Err(Error::Conflict(format!(
                    "call {sid} is being placed right now; hang it up again in a moment"
                )));
            }
            c.status = CallStatus::Canceled;
            c.end_reason = Some("canceled".to_owned());
            c.end_time = Some(now);
            c.updated_at = now.max(c.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::CallUpdated, By::changing(actor));
        self.after_write(
            self.repo
                .call_update(&actor.organization_id, &call_sid, change, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// What the voice runtime needs to run a call, in one read: the call, its agent's
    /// configuration, the agent's tools, and the dial's variables and metadata.
    pub async fn call_session(&self, actor: &Actor, call_sid: &str) -> Result<CallSession> {
        actor.require(Permission::CallsRead)?;
        actor.require(Permission::AgentsRead)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let org = &actor.organization_id;
        let call = self
            .repo
            .call_get(org, &call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        let agent = self.call_agent(&call).await?.ok_or_else(|| {
            Error::not_found(format!(
                "the agent of call {call_sid} ({}) no longer exists",
                call.agent_id
            ))
        })?;
        let mut tools = Vec::with_capacity(agent.custom_tools.len());
        for tool_id in &agent.custom_tools {
            if let Some(tool) = self.repo.tool_get(org, tool_id).await? {
                tools.push(tool);
            }
        }
        Ok(CallSession {
            dynamic_variables: call.dynamic_variables.clone(),
            metadata: call.metadata.clone(),
            call,
            agent,
            tools,
        })
    }
}
