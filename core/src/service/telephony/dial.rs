//! Outbound calls: `POST /api/calls/dial` checks everything it can before anything exists,
//! then records the call with a durable `call.dial` job in one transaction; the job places
//! it. A person is never called twice for one dial: the job marks the call
//! `dial_started_at` in its own commit before it sends, sends again only when the provider
//! certainly created nothing, and a job that finds the mark without the provider's call id (a
//! crash or a timeout while sending) does not send, but ends the call `dial_outcome_unknown`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::status::DIAL_OUTCOME_UNKNOWN;
use super::{ready_for_calls, stream_url};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::idempotency::KeyBinding;
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::{
    Agent, Call, CallStatus, CallType, Dial, EventType, PhoneNumber, ProviderError,
};
use crate::role::Permission;
use crate::service::{By, Service};
use crate::telephony::TelephonyProvider;
use crate::telephony::gateway::{DialRequest, GatewayError};
use crate::validate;

/// The job that places an outbound call.
pub const CALL_DIAL: &str = "call.dial";

/// Most `dynamic_variables` a dial carries.
const MAX_VARIABLES: usize = 50;
/// Largest `metadata`, as JSON.
const MAX_METADATA_BYTES: usize = 16 * 1024;

/// The payload of [`CALL_DIAL`].
#[derive(Debug, Serialize, Deserialize)]
struct DialJob {
    organization_id: String,
    call_sid: String,
}

/// Checks the `dynamic_variables` of a dial, a campaign or a recipient.
pub(in crate::service) fn variables(
    input: Option<BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>> {
    let vars = input.unwrap_or_default();
    if vars.len() > MAX_VARIABLES {
        return Err(Error::invalid(format!(
            "dynamic_variables holds {} names; at most {MAX_VARIABLES} are allowed",
            vars.len()
        )));
    }
    for (name, value) in &vars {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(Error::invalid(format!(
                "dynamic_variables: `{}` is not a name of 1 to 64 letters, digits or `_`",
                crate::ids::truncate(name, 40)
            )));
        }
        if value.chars().count() > 1000 {
            return Err(Error::invalid(format!(
                "dynamic_variables.{name} is longer than 1000 characters"
            )));
        }
    }
    Ok(vars)
}

/// What a dial asks for, its fields checked one by one.
pub(in crate::service) struct DialPlan {
    pub(in crate::service) agent_id: String,
    pub(in crate::service) number_id: String,
    pub(in crate::service) to_number: String,
    pub(in crate::service) dynamic_variables: BTreeMap<String, String>,
    pub(in crate::service) metadata: serde_json::Map<String, serde_json::Value>,
    pub(in crate::service) timezone: Option<String>,
    /// A published version to run instead of the deployed one.
    pub(in crate::service) agent_version: Option<i64>,
}

/// The integration that places `number`'s calls; a 422 saying why it cannot place any.
pub(in crate::service) fn outbound_integration(number: &PhoneNumber) -> Result<String> {
    let number_id = &number.phone_number_id;
    if !number.supports_outbound {
        return Err(Error::unprocessable(format!(
            "phone number {number_id} does not place calls (supports_outbound is false)"
        )));
    }
    number.integration_id.clone().ok_or_else(|| {
        Error::unprocessable(format!(
            "phone number {number_id} has no integration_id, so no provider can place its calls"
        ))
    })
}

impl Service {
    /// Places an outbound call from one of the organization's numbers, answered by `agent_id`:
    /// checks the agent, the number, its integration and the runtime URL, then records the
    /// call `queued` with the job that dials it. Nothing is recorded when a check fails.
    pub async fn call_dial(&self, actor: &Actor, input: Dial) -> Result<Call> {
        Ok(self.call_dial_keyed(actor, input, None).await?.0)
    }

    /// [`Service::call_dial`] under an `Idempotency-Key`, bound to the call in the
    /// transaction that records it: answers the call and whether the key had created it
    /// before (then nothing else happens, whatever the checks would say now).
    pub async fn call_dial_keyed(
        &self,
        actor: &Actor,
        input: Dial,
        key: Option<&KeyBinding>,
    ) -> Result<(Call, bool)> {
        actor.require(Permission::CallsWrite)?;
        let org = &actor.organization_id;
        if let Some(call) = self.bound_call(org, key).await? {
            return Ok((call, true));
        }
        let plan = DialPlan {
            agent_id: IdKind::Agent.parse(&input.agent_id)?,
            number_id: IdKind::PhoneNumber.parse(&input.from_phone_number_id)?,
            to_number: validate::e164("to_number", &input.to_number)?,
            dynamic_variables: variables(input.dynamic_variables)?,
            metadata: input.metadata.unwrap_or_default(),
            timezone: input
                .timezone
                .as_deref()
                .map(|tz| validate::timezone("timezone", tz))
                .transpose()?,
            agent_version: input.agent_version,
        };
        if serde_json::to_vec(&plan.metadata).map_or(0, |m| m.len()) > MAX_METADATA_BYTES {
            return Err(Error::invalid(format!(
                "metadata is larger than {} KiB of JSON",
                MAX_METADATA_BYTES / 1024
            )));
        }
        let settings = self
            .repo
            .organization_settings(org)
            .await?
            .ok_or_else(|| Error::not_found("this organization no longer exists"))?;
        // The callee's zone: the dial's, else their country's when it has only one, else
        // the organization's.
        let callee_zone = plan
            .timezone
            .as_deref()
            .or_else(|| super::country_zone(&plan.to_number))
            .unwrap_or(&settings.timezone);
        super::compliance::require_calling_hours(
            settings.calling_hours.as_ref(),
            callee_zone,
            self.now(),
        )?;
        let (call, job) = self.prepare_dial(org, plan, &settings).await?;
        let event = self.event(EventType::CallCreated, &call, By::Creating(actor))?;
        let (call, created) =
            self.after_write(self.repo.call_open(&call, &event, &[job], key).await)?;
        Ok((call, !created))
    }

    /// The call `plan` asks for and the job that dials it, once the agent, the number, its
    /// integration and the runtime URL can place it; nothing is written.
    pub(in crate::service) async fn prepare_dial(
        &self,
        org: &str,
        plan: DialPlan,
        settings: &crate::model::OrganizationSettings,
    ) -> Result<(Call, NewJob)> {
        let DialPlan {
            agent_id,
            number_id,
            to_number,
            dynamic_variables,
            metadata,
            timezone,
            agent_version,
        } = plan;
        let draft = self
            .agent_cached(org, &agent_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("agent {agent_id} not found")))?;
        // The version the call runs (pinned, or drawn from its id) decides what it runs with.
        let call_sid = self.id(IdKind::Call);
        let version = crate::service::agents::call_version(&draft, &call_sid, agent_version)?;
        let agent = self.versioned(Agent::clone(&draft), version).await?;
        let number = self
            .repo
            .phone_number_get(org, &number_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("phone number {number_id} not found")))?;
        let integration_id = outbound_integration(&number)?;
        let (integration, sealed) = self
            .repo
            .integration_get_sealed(org, &integration_id)
            .await?
            .ok_or_else(|| {
                Error::unprocessable(format!("integration {integration_id} no longer exists"))
            })?;
        let credentials = self.open_credentials(&integration_id, &sealed)?;
        ready_for_calls(&integration_id, &credentials)?;
        if agent.runtime_stream_url.is_none() && settings.runtime_stream_url.is_none() {
            return Err(Error::unprocessable(format!(
                "no runtime_stream_url: set it in the organization settings or on agent \
                 {agent_id}, so that the call's media has somewhere to go"
            )));
        }
        self.telephony_gateway()?;
        let provider = TelephonyProvider::parse(&integration.provider)?;
        let mut call = Call::new(
            call_sid,
            org,
            Some(&agent),
            CallType::Outbound,
            to_number,
            self.now(),
        );
        call.agent_version = version;
        call.from_number = Some(number.phone_number.clone());
        call.provider = Some(provider);
        call.phone_number_id = Some(number.phone_number_id.clone());
        call.dynamic_variables = dynamic_variables;
        call.metadata = metadata;
        call.timezone = timezone;
        let job = NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: CALL_DIAL.to_owned(),
            payload: serde_json::to_value(DialJob {
                organization_id: org.to_owned(),
                call_sid: call.call_sid.clone(),
            })
            .map_err(|e| Error::Internal(format!("encoding a dial job: {e}")))?,
            run_at: call.created_at,
            // Only failures before the mark are retried (the database, say); after it, the
            // job ends the call instead.
            max_attempts: 5,
            unique_key: Some(format!("{CALL_DIAL}:{}", call.call_sid)),
        };
        Ok((call, job))
    }

    /// Ends a call the job could not place: `failed`, with why, unless a report moved it
    /// meanwhile.
    async fn dial_failed(
        &self,
        call: &Call,
        end_reason: &str,
        provider_error: Option<ProviderError>,
    ) -> Result<()> {
        let now = self.now();
        let end_reason = end_reason.to_owned();
        self.change_call(call, move |c| {
            if c.status == CallStatus::Queued && c.provider_call_id.is_none() {
                c.status = CallStatus::Failed;
                c.end_reason = Some(end_reason);
                c.end_time = Some(now);
                c.provider_error = provider_error;
                c.updated_at = now.max(c.updated_at);
            }
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// Places `call`, once at most; see the module's documentation.
    async fn dial_once(&self, call: Call) -> std::result::Result<Done, JobError> {
        if call.provider_call_id.is_some() || call.status != CallStatus::Queued {
            // Placed already, or canceled before it was.
            return Ok(Done::Finished);
        }
        if call.dial_started_at.is_some() {
            tracing::warn!(
                call_sid = %call.call_sid,
                "a dial was started but its outcome was never recorded; it is not sent again"
            );
            self.dial_failed(&call, DIAL_OUTCOME_UNKNOWN, None).await?;
            return Ok(Done::Finished);
        }
        let (credentials, request) = match self.dial_request(&call).await {
            Ok(ready) => ready,
            Err(e) => {
                tracing::info!(call_sid = %call.call_sid, error = %e, "a dial could not be placed");
                let why = ProviderError {
                    code: "not_placed".to_owned(),
                    message: e.to_string(),
                };
                self.dial_failed(&call, "failed", Some(why)).await?;
                return Ok(Done::Finished);
            }
        };
        // The mark, in its own commit, before anything is sent.
        let now = self.now();
        let marked = self
            .change_call(&call, move |c| {
                if c.status != CallStatus::Queued
                    || c.dial_started_at.is_some()
                    || c.provider_call_id.is_some()
                {
                    return Err(Error::Conflict("no longer to be dialed".to_owned()));
                }
                c.dial_started_at = Some(now);
                Ok(())
            })
            .await;
        match marked {
            Ok(Some(_)) => {}
            Ok(None) | Err(Error::Conflict(_)) => return Ok(Done::Finished),
            Err(e) => return Err(e.into()),
        }
        let (gateway, _) = self.telephony_gateway()?;
        let mut delay = self.dialing.retry_delay;
        let mut attempt = 1;
        let outcome = loop {
            match gateway.dial(&credentials, &request).await {
                // Nothing was created: sending again cannot call anyone twice.
                Err(GatewayError::Unavailable(why)) if attempt < self.dialing.attempts => {
                    tracing::info!(call_sid = %call.call_sid, attempt, reason = %why, "dial not placed; trying again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                    attempt += 1;
                }
                other => break other,
            }
        };
        match outcome {
            Ok(provider_call_id) => {
                self.change_call(&call, move |c| {
                    if c.provider_call_id.is_none() {
                        c.provider_call_id = Some(provider_call_id);
                    }
                    Ok(())
                })
                .await?;
            }
            Err(GatewayError::Unknown(why)) => {
                tracing::warn!(call_sid = %call.call_sid, reason = %why, "the outcome of a dial is unknown; it is not sent again");
                self.dial_failed(&call, DIAL_OUTCOME_UNKNOWN, None).await?;
            }
            Err(GatewayError::Unavailable(why)) => {
                let why = ProviderError {
                    code: "unavailable".to_owned(),
                    message: why,
                };
                self.dial_failed(&call, "provider_unavailable", Some(why))
                    .await?;
            }
            Err(GatewayError::Rejected { code, message }) => {
                let why = ProviderError { code, message };
                self.dial_failed(&call, "provider_rejected", Some(why))
                    .await?;
            }
            Err(GatewayError::NotFound(message)) => {
                let why = ProviderError {
                    code: "not_found".to_owned(),
                    message,
                };
                self.dial_failed(&call, "provider_rejected", Some(why))
                    .await?;
            }
        }
        Ok(Done::Finished)
    }

    /// The credentials and request that place `call`, from its number, integration and agent
    /// as they are now.
    async fn dial_request(
        &self,
        call: &Call,
    ) -> Result<(crate::telephony::TelephonyCredentials, DialRequest)> {
        let (integration_id, credentials) = self.call_credentials(call).await?;
        ready_for_calls(&integration_id, &credentials)?;
        let agent = self
            .call_agent(call)
            .await?
            .ok_or_else(|| Error::Conflict(format!("agent {} was deleted", call.agent_id)))?;
        let runtime = self
            .runtime_url(&agent)
            .await?
            .ok_or_else(|| Error::unprocessable("no runtime_stream_url is set"))?;
        let (_, urls) = self.telephony_gateway()?;
        let request = DialRequest {
            call_sid: call.call_sid.clone(),
            agent_id: agent.agent_id.clone(),
            to: call.to_number.clone(),
            from: call.from_number.clone().unwrap_or_default(),
            stream_url: stream_url(&runtime, &call.call_sid),
            status_url: urls.call_status_url(&integration_id, &call.call_sid),
            events_url: urls.number_webhooks(&integration_id).telnyx_events_url,
            ring_timeout_secs: self.dialing.ring_timeout_secs,
            machine_detection: agent.voicemail_detection,
        };
        Ok((credentials, request))
    }
}

/// Runs [`CALL_DIAL`].
pub(in crate::service) struct DialCall(pub(in crate::service) Service);

#[async_trait]
impl JobHandler for DialCall {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        let dial: DialJob = serde_json::from_value(job.payload.clone())
            .map_err(|e| JobError::Fail(format!("unreadable payload: {e}")))?;
        match self
            .0
            .repo
            .call_get(&dial.organization_id, &dial.call_sid)
            .await?
        {
            Some(call) => self.0.dial_once(call).await,
            None => Ok(Done::Finished),
        }
    }
}
