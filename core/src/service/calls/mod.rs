//! Calls: record, view, update; the list and its filters (`queries`), the transcript
//! (`transcripts`) and the recording (`recordings`) are in the modules beside this one.

use super::{By, Service};
use crate::auth::{Actor, Need};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{Call, CallStatus, CallUpdate, EventType, NewCall};
use crate::role::{Permission, Role};
use crate::validate;

mod queries;
mod recordings;
mod transcripts;
pub(super) use transcripts::checked_message;

pub use recordings::{AudioFormat, RecordingDownload, STREAM_URL_TTL_SECS, SignedRead};

impl Service {
    /// Records a call handled by one of the organization's agents.
    pub async fn call_create(&self, actor: &Actor, input: NewCall) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let now = self.now();
        let created_at = match input.created_at {
            Some(at) => {
                // Back-dating decides how long retention keeps the call: an import, not a write.
                actor.require(Need::at_least(
                    Permission::CallsWrite,
                    Role::Admin,
                    "importing a call with `created_at`",
                ))?;
                if at > now {
                    return Err(Error::invalid("created_at must not be in the future"));
                }
                at
            }
            None => now,
        };
        let agent = self.referenced_agent(actor, &input.agent_id).await?;
        let call_sid = self.id(IdKind::Call);
        // A published agent's call runs the deployed version its id draws, with its settings.
        let version = agent.version_for(&call_sid);
        let agent = self.versioned(agent, version).await?;
        let to_number = validate::e164("to_number", &input.to_number)?;
        let from_number = input
            .from_number
            .as_deref()
            .map(|n| validate::e164("from_number", n))
            .transpose()?;
        let mut call = Call::new(
            call_sid,
            &actor.organization_id,
            Some(&agent),
            input.call_type,
            to_number,
            now,
        );
        call.agent_version = version;
        call.from_number = from_number;
        call.created_at = created_at;
        call.status = input.status.unwrap_or(CallStatus::Queued);
        call.recording_enabled = input.recording_enabled.unwrap_or(agent.recording_enabled);
        let event = self.event(EventType::CallCreated, &call, By::Creating(actor))?;
        self.after_write(self.repo.call_insert(&call, &event).await)?;
        Ok(call)
    }

    /// One call of the organization.
    pub async fn call_view(&self, actor: &Actor, call_sid: &str) -> Result<Call> {
        actor.require(Permission::CallsRead)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        self.repo
            .call_get(&actor.organization_id, &call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// Changes status, end reason, times, cost, turns or billing status of a call.
    pub async fn call_update(
        &self,
        actor: &Actor,
        call_sid: &str,
        input: CallUpdate,
    ) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let now = self.now();
        let change = Box::new(move |call: &mut Call| {
            if let Some(status) = input.status {
                call.status = status;
            }
            if let Some(reason) = &input.end_reason {
                call.end_reason = Some(validate::text("end_reason", reason, 100)?);
            }
            if let Some(billing) = &input.billing_status {
                call.billing_status = Some(validate::text("billing_status", billing, 50)?);
            }
            if let Some(t) = input.start_time {
                call.start_time = Some(t);
            }
            if let Some(t) = input.end_time {
                call.end_time = Some(t);
            }
            if let (Some(start), Some(end)) = (call.start_time, call.end_time) {
                if end < start {
                    return Err(Error::invalid("end_time must not be before start_time"));
                }
                if input.duration_seconds.is_none()
                    && (input.start_time.is_some() || input.end_time.is_some())
                {
                    call.duration_seconds = Some(start.seconds_until(end));
                }
            }
            if let Some(d) = input.duration_seconds {
                call.duration_seconds = Some(validate::number("duration_seconds", d, 0.0, 1e9)?);
            }
            if let Some(c) = input.total_cost {
                if !call.cost_breakdown.is_empty() {
                    return Err(Error::conflict(format!(
                        "call {} has usage: its total_cost is the sum of its cost_breakdown \
                         and cannot be set",
                        call.call_sid
                    )));
                }
                call.total_cost = validate::number("total_cost", c, 0.0, 1e12)?;
            }
            if let Some(t) = input.turn_count {
                if t < 0 {
                    return Err(Error::invalid("turn_count must not be negative"));
                }
                call.turn_count = t;
            }
            call.updated_at = now.max(call.updated_at);
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
}
