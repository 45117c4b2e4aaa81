//! Outbound calls: `POST /api/calls/dial` checks everything it can before anything exists,
//! then records the call with a durable `call.dial` job in one transaction; the job places
//! it. A person is never called twice for one dial, nor called when they may no longer be
//! (DESIGN §23): the job checks everything again and marks the call `dial_started_at` in one
//! commit before it sends; it sends again only when nothing reached the provider (a refused
//! connection, a name that did not resolve, a 429), or after a 503 once the provider shows no
//! call of this dial. After any other failure, and whenever it finds the mark without the
//! provider's call id (an instance that died while sending), it never sends: it asks the
//! provider for the call the dial may have made, adopts it when found, and otherwise ends the
//! call `dial_outcome_unknown`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::ready_for_calls;
use super::status::DIAL_OUTCOME_UNKNOWN;
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::idempotency::KeyBinding;
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::{
    Agent, Call, CallStatus, CallType, Dial, EventType, PhoneNumber, ProviderError, Unsent,
};
use crate::repo::{DialFacts, DialMark};
use crate::role::Permission;
use crate::service::{By, Service};
use crate::telephony::TelephonyProvider;
use crate::telephony::gateway::{DialLookup, DialRequest, GatewayError, ProviderCall};
use crate::time::Timestamp;
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
        let zones = super::callee_zones(
            plan.timezone.as_deref(),
            &plan.to_number,
            &settings.timezone,
        );
        super::compliance::require_calling_hours_in(
            settings.calling_hours.as_ref(),
            &zones,
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
        self.telephony_gateway()?;
        let provider = TelephonyProvider::parse(&integration.provider)?;
        let external =
            (agent.runtime_stream_url.as_deref()).or(settings.runtime_stream_url.as_deref());
        let Some(target) = self.media_target(external, provider, &call_sid) else {
            return Err(Error::unprocessable(format!(
                "no runtime_stream_url: set it in the organization settings or on agent \
                 {agent_id}, or enable the built-in runtime (runtime.enabled), so that the \
                 call's media has somewhere to go"
            )));
        };
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
        call.runtime_token = target.token.as_deref().map(crate::runtime::token_hash);
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

    /// Marks `call` as being sent, after checking again, in the same transaction, everything
    /// that may have changed since it was requested (DESIGN §23): its deadline, its campaign,
    /// the suppression list, the credit limit and the calling hours in the callee's zone.
    async fn mark_dial(&self, call: &Call) -> Result<DialMark> {
        let now = self.now();
        let deadline = call.created_at.plus(self.dialing.dial_deadline);
        let check = Box::new(move |facts: &DialFacts<'_>| {
            use crate::model::CampaignStatus;
            match facts.campaign {
                Some(CampaignStatus::Running) | None => {}
                Some(CampaignStatus::Paused | CampaignStatus::Draft) => {
                    return Some(Unsent::CampaignPaused);
                }
                Some(_) => return Some(Unsent::CampaignCanceled),
            }
            if now > deadline {
                return Some(Unsent::Expired);
            }
            if facts.suppressed {
                return Some(Unsent::Suppressed);
            }
            if facts.out_of_credit {
                return Some(Unsent::OutOfCredit);
            }
            let zones = super::callee_zones(
                facts.call.timezone.as_deref(),
                &facts.call.to_number,
                &facts.settings.timezone,
            );
            super::compliance::require_calling_hours_in(
                facts.settings.calling_hours.as_ref(),
                &zones,
                now,
            )
            .err()
            .map(|_| Unsent::OutsideCallingHours)
        });
        let stamp = self.event_stamp(EventType::CallUpdated, By::System);
        let mark = self
            .repo
            .call_dial_mark(&call.organization_id, &call.call_sid, now, check, &stamp)
            .await;
        let mark = self.after_write(mark.map(Some))?;
        Ok(mark.unwrap_or(DialMark::Skip))
    }

    /// Places `call`, once at most; see the module's documentation.
    async fn dial_once(&self, call: Call) -> std::result::Result<Done, JobError> {
        if call.provider_call_id.is_some() || call.status != CallStatus::Queued {
            // Placed already, or canceled before it was.
            return Ok(Done::Finished);
        }
        if let Some(started) = call.dial_started_at {
            // Sent before, by an earlier run or an instance that died while sending: never
            // again; what it made is asked of the provider.
            return self.reconcile_dial(&call, started).await;
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
        let call = match self.mark_dial(&call).await? {
            DialMark::Marked(call) => call,
            DialMark::Unsent(call, why) => {
                tracing::info!(call_sid = %call.call_sid, end_reason = why.end_reason(), "a dial was stopped before it was sent");
                return Ok(Done::Finished);
            }
            DialMark::Skip => return Ok(Done::Finished),
        };
        let started = call.dial_started_at.unwrap_or(call.created_at);
        let (gateway, _) = self.telephony_gateway()?;
        let mut delay = self.dialing.retry_delay;
        let mut attempt = 1;
        let outcome = loop {
            let outcome = gateway.dial(&credentials, &request).await;
            let again = match &outcome {
                // Nothing reached the provider: sending again cannot call anyone twice.
                Err(GatewayError::Unavailable(_)) => true,
                // An edge's 503 may have passed the request on: sent again only once the
                // provider has no call of this dial.
                Err(GatewayError::Overloaded(_)) if attempt < self.dialing.attempts => {
                    match self.find_dialed(&call, &credentials, started).await {
                        Ok(Some(found)) => {
                            self.adopt(&call, found).await?;
                            return Ok(Done::Finished);
                        }
                        Ok(None) => true,
                        Err(_) => false,
                    }
                }
                _ => false,
            };
            if !again || attempt >= self.dialing.attempts {
                break outcome;
            }
            if let Err(why) = &outcome {
                tracing::info!(call_sid = %call.call_sid, attempt, reason = %why.sentence(), "dial not placed; trying again");
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
            attempt += 1;
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
            Err(GatewayError::Unknown(why) | GatewayError::Overloaded(why)) => {
                tracing::warn!(call_sid = %call.call_sid, reason = %why, "the outcome of a dial is unknown; it is not sent again, the provider is asked");
                return self.reconcile_dial(&call, started).await;
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

    /// A dial that was sent without a clear answer: the provider is asked for the call it may
    /// have made, now and every `check_every` until `reconcile` has passed since the dial was
    /// sent; what it has is adopted (its reports then apply), and a dial it never shows ends
    /// `dial_outcome_unknown`. Nothing is ever sent again.
    async fn reconcile_dial(
        &self,
        call: &Call,
        started: Timestamp,
    ) -> std::result::Result<Done, JobError> {
        let now = self.now();
        let found = match self.call_credentials(call).await {
            Ok((_, credentials)) => self.find_dialed(call, &credentials, started).await,
            Err(e) => Err(e),
        };
        match found {
            Ok(Some(found)) => {
                self.adopt(call, found).await?;
                return Ok(Done::Finished);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::info!(call_sid = %call.call_sid, error = %e, "could not ask the provider about a dial");
            }
        }
        if now < started.plus(self.dialing.reconcile) {
            return Ok(Done::RunAgainAt(now.plus(self.dialing.check_every)));
        }
        tracing::warn!(call_sid = %call.call_sid, "the provider never showed a call of this dial; its outcome is unknown");
        self.dial_failed(call, DIAL_OUTCOME_UNKNOWN, None).await?;
        Ok(Done::Finished)
    }

    /// The provider's call that `call`'s dial, sent at `started`, made, if it shows one: the
    /// first of the calls it matches that no other call of this organization holds.
    async fn find_dialed(
        &self,
        call: &Call,
        credentials: &crate::telephony::TelephonyCredentials,
        started: Timestamp,
    ) -> Result<Option<ProviderCall>> {
        let (gateway, _) = self.telephony_gateway()?;
        let lookup = DialLookup {
            call_sid: call.call_sid.clone(),
            to: call.to_number.clone(),
            from: call.from_number.clone().unwrap_or_default(),
            since: started.add_seconds(-60),
        };
        let candidates = gateway
            .find_dialed(credentials, &lookup)
            .await
            .map_err(|e| Error::Upstream(e.sentence().to_owned()))?;
        let Some(provider) = call.provider else {
            return Ok(None);
        };
        for candidate in candidates {
            let holder = self
                .repo
                .call_find_provider(&call.organization_id, provider, &candidate.provider_call_id)
                .await?;
            if holder.is_none_or(|other| other.call_sid == call.call_sid) {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
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
        let (_, urls) = self.telephony_gateway()?;
        let provider = call
            .provider
            .ok_or_else(|| Error::Internal("a dialed call has no provider".to_owned()))?;
        // The call keeps the runtime it was created for: one created for the built-in
        // runtime is streamed there even if a runtime URL was set since, since its token
        // was made for it.
        let external = match call.runtime_token {
            Some(_) => None,
            None => self.runtime_url(&agent).await?,
        };
        let target = self
            .media_target(external.as_deref(), provider, &call.call_sid)
            .ok_or_else(|| Error::unprocessable("no runtime_stream_url is set"))?;
        let request = DialRequest {
            call_sid: call.call_sid.clone(),
            agent_id: agent.agent_id.clone(),
            to: call.to_number.clone(),
            from: call.from_number.clone().unwrap_or_default(),
            stream_url: target.url,
            stream_token: target.token,
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
