//! Calls that come in: Twilio's voice request, answered at once with TwiML, and Telnyx's
//! `call.initiated`, answered by a durable job. Each provider call is recorded once, however
//! often the provider repeats itself and whichever instance it reaches.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{TelnyxWebhook, TwilioWebhook, Verified};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob};
use crate::model::{Agent, Call, CallStatus, CallType, EventType};
use crate::service::{By, Service};
use crate::telephony::gateway::GatewayError;
use crate::telephony::{TelephonyProvider, twiml};

/// The job that answers an incoming Telnyx call, streaming it to the runtime.
pub const TELNYX_ANSWER: &str = "telnyx.answer";
/// The job that rejects an incoming Telnyx call voiceplane refuses.
pub const TELNYX_REJECT: &str = "telnyx.reject";

/// What an incoming call became.
enum Inbound {
    /// Recorded `ringing`; its media goes to `stream_url`.
    Connect {
        call_sid: String,
        agent_id: String,
        stream_url: String,
        /// The built-in runtime's token, a stream parameter.
        token: Option<String>,
    },
    /// Refused: recorded `failed` (`rejected`) when the number is the integration's, else
    /// not recorded at all.
    Reject,
}

/// The payload of [`TELNYX_ANSWER`] and [`TELNYX_REJECT`].
#[derive(Debug, Serialize, Deserialize)]
struct CallCommand {
    organization_id: String,
    call_sid: String,
    integration_id: String,
    call_control_id: String,
    /// Where the answer streams the call's media.
    #[serde(default)]
    stream_url: Option<String>,
}

/// Whether `call` was refused when it came in.
fn was_rejected(call: &Call) -> bool {
    call.status == CallStatus::Failed && call.end_reason.as_deref() == Some("rejected")
}

/// An E.164 number as a provider wrote it, or nothing (`anonymous`, a SIP address).
fn e164_or_none(number: Option<&str>) -> Option<String> {
    number.and_then(|n| crate::validate::e164("number", n).ok())
}

impl Service {
    /// Twilio's voice request for a call to one of the integration's numbers: the TwiML that
    /// streams it to the agent's runtime, or the one that rejects it. 403 unless Twilio signed
    /// it.
    pub async fn twilio_voice(&self, integration_id: &str, hook: &TwilioWebhook) -> Result<String> {
        let verified = self.verified_twilio(integration_id, hook).await?;
        let provider_call_id = hook
            .param("CallSid")
            .ok_or_else(|| Error::invalid("CallSid is required"))?;
        let inbound = self
            .inbound(
                &verified,
                TelephonyProvider::Twilio,
                provider_call_id,
                hook.param("From"),
                hook.param("To"),
                |_, _| Vec::new(),
            )
            .await?;
        Ok(match inbound {
            Inbound::Connect {
                call_sid,
                agent_id,
                stream_url,
                token,
            } => twiml::connect_stream(&stream_url, &call_sid, &agent_id, token.as_deref()),
            Inbound::Reject => twiml::reject(),
        })
    }

    /// Telnyx's `call.initiated` of an incoming call: recorded, and answered or rejected by a
    /// job written with it.
    pub(super) async fn telnyx_incoming(
        &self,
        verified: &Verified,
        payload: &serde_json::Value,
    ) -> Result<()> {
        let integration = &verified.route.integration;
        let Some(call_control_id) = payload["call_control_id"].as_str() else {
            return Ok(());
        };
        let command = |call: &Call, stream_url: Option<&str>| {
            let kind = if stream_url.is_some() {
                TELNYX_ANSWER
            } else {
                TELNYX_REJECT
            };
            let payload = CallCommand {
                organization_id: call.organization_id.clone(),
                call_sid: call.call_sid.clone(),
                integration_id: integration.integration_id.clone(),
                call_control_id: call_control_id.to_owned(),
                stream_url: stream_url.map(str::to_owned),
            };
            vec![NewJob {
                job_id: crate::jobs::new_job_id(),
                kind: kind.to_owned(),
                payload: serde_json::to_value(&payload).unwrap_or_default(),
                run_at: call.created_at,
                max_attempts: 5,
                unique_key: Some(format!("{kind}:{}", call.call_sid)),
            }]
        };
        self.inbound(
            verified,
            TelephonyProvider::Telnyx,
            call_control_id,
            payload["from"].as_str(),
            payload["to"].as_str(),
            command,
        )
        .await?;
        Ok(())
    }

    /// Records an incoming call to `to` once per `provider_call_id`, with the jobs `jobs`
    /// makes of it and its stream URL (`None` when refused), and says whether to connect it.
    async fn inbound(
        &self,
        verified: &Verified,
        provider: TelephonyProvider,
        provider_call_id: &str,
        from: Option<&str>,
        to: Option<&str>,
        jobs: impl FnOnce(&Call, Option<&str>) -> Vec<NewJob>,
    ) -> Result<Inbound> {
        let (route, version) = (&verified.route, verified.version);
        let integration = &route.integration;
        let org = &integration.organization_id;
        let Some(to) = e164_or_none(to) else {
            return Ok(Inbound::Reject);
        };
        let number = self
            .number_cached(org, &to, version)
            .await?
            .filter(|n| n.integration_id.as_deref() == Some(integration.integration_id.as_str()));
        let Some(number) = number else {
            // Not a number of this integration: refused, and nothing is recorded.
            tracing::info!(
                integration_id = %integration.integration_id,
                "an incoming call to a number voiceplane does not know was rejected"
            );
            return Ok(Inbound::Reject);
        };
        let call_sid = self.id(IdKind::Call);
        let drawn = match &number.assigned_agent_id {
            Some(id) => self.agent_cached_at(org, id, version).await?,
            None => None,
        };
        // The deployed version the call draws answers it.
        let version = drawn.as_ref().and_then(|a| a.version_for(&call_sid));
        let agent = match drawn {
            Some(agent) => Some(self.versioned(Agent::clone(&agent), version).await?),
            None => None,
        };
        // As `runtime_url`, with the organization's URL the route holds.
        let external = agent.as_ref().and_then(|agent| {
            (agent.runtime_stream_url.clone()).or_else(|| route.runtime_stream_url.clone())
        });
        let now = self.now();
        let target = |call_sid: &str| {
            agent
                .as_ref()
                .filter(|_| number.supports_inbound)
                .and_then(|_| self.media_target(external.as_deref(), provider, call_sid))
        };
        let stream = target(&call_sid);
        let refused = stream.is_none();
        let mut call = Call::new(call_sid, org, agent.as_ref(), CallType::Inbound, to, now);
        call.agent_version = version;
        call.from_number = e164_or_none(from);
        call.status = if refused {
            CallStatus::Failed
        } else {
            CallStatus::Ringing
        };
        call.end_time = refused.then_some(now);
        call.end_reason = refused.then(|| "rejected".to_owned());
        call.provider = Some(provider);
        call.provider_call_id = Some(provider_call_id.to_owned());
        call.phone_number_id = Some(number.phone_number_id.clone());
        call.runtime_token = stream
            .as_ref()
            .and_then(|s| s.token.as_deref())
            .map(crate::runtime::token_hash);
        let jobs = jobs(&call, stream.as_ref().map(|s| s.url.as_str()));
        let event = self.event(EventType::CallCreated, &call, By::System)?;
        let (call, created) =
            self.after_write(self.repo.call_open(&call, &event, &jobs, None).await)?;
        if created && refused {
            tracing::info!(
                call_sid = %call.call_sid,
                "an incoming call was rejected: its number has no agent, takes no inbound calls, \
                 or neither a runtime_stream_url nor the built-in runtime"
            );
        }
        // A repeated request answers what the first one did, for the call it recorded.
        Ok(match target(&call.call_sid) {
            Some(stream) if !was_rejected(&call) => Inbound::Connect {
                stream_url: stream.url,
                token: stream.token,
                call_sid: call.call_sid,
                agent_id: call.agent_id,
            },
            _ => Inbound::Reject,
        })
    }

    /// Telnyx's webhook for the integration `integration_id`: an incoming call, or news of a
    /// call it carries. Unknown events and calls are ignored. 403 unless Telnyx signed it.
    pub async fn telnyx_event(&self, integration_id: &str, hook: &TelnyxWebhook) -> Result<()> {
        let verified = self.verified_telnyx(integration_id, hook).await?;
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&hook.body) else {
            return Err(Error::invalid("the body must be a Telnyx event in JSON"));
        };
        let data = &body["data"];
        let payload = &data["payload"];
        match data["event_type"].as_str() {
            Some("call.initiated") if payload["direction"].as_str() == Some("incoming") => {
                self.telnyx_incoming(&verified, payload).await
            }
            Some(event_type) => {
                self.telnyx_progress(&verified.route.integration, event_type, payload)
                    .await
            }
            None => Ok(()),
        }
    }
}

/// Runs [`TELNYX_ANSWER`] and [`TELNYX_REJECT`].
pub(in crate::service) struct TelnyxCommand(pub(in crate::service) Service);

#[async_trait]
impl JobHandler for TelnyxCommand {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        let service = &self.0;
        let command: CallCommand = serde_json::from_value(job.payload.clone())
            .map_err(|e| JobError::Fail(format!("unreadable payload: {e}")))?;
        let Some(call) = service
            .repo
            .call_get(&command.organization_id, &command.call_sid)
            .await?
        else {
            return Ok(Done::Finished);
        };
        let Some((_, sealed)) = service
            .repo
            .integration_get_sealed(&command.organization_id, &command.integration_id)
            .await?
        else {
            return Err(JobError::Fail("the integration was deleted".to_owned()));
        };
        let credentials = service.open_credentials(&command.integration_id, &sealed)?;
        let (gateway, _) = service.telephony_gateway()?;
        let sent = match &command.stream_url {
            Some(stream_url) => {
                if crate::telephony::progress::is_terminal(call.status) {
                    // The caller hung up before the answer went out.
                    return Ok(Done::Finished);
                }
                // Derived again rather than kept in the job's payload: the database never
                // holds a token in the clear.
                let token = call
                    .runtime_token
                    .as_ref()
                    .and(service.runtime.as_ref())
                    .map(|r| r.token(&call.call_sid));
                gateway
                    .answer(
                        &credentials,
                        &command.call_control_id,
                        stream_url,
                        &call.call_sid,
                        token.as_deref(),
                    )
                    .await
            }
            None => {
                gateway
                    .reject(&credentials, &command.call_control_id, &call.call_sid)
                    .await
            }
        };
        match sent {
            Ok(()) => Ok(Done::Finished),
            // The caller is gone: nothing left to answer or reject.
            Err(e) if e.call_is_gone() => Ok(Done::Finished),
            // Telnyx deduplicates by `command_id`, so sending again is safe.
            Err(
                GatewayError::Unavailable(why)
                | GatewayError::Overloaded(why)
                | GatewayError::Unknown(why),
            ) => Err(JobError::Retry(why)),
            Err(GatewayError::Rejected { code, message }) => {
                Err(JobError::Fail(format!("{message} (code {code})")))
            }
            Err(GatewayError::NotFound(why)) => Err(JobError::Fail(why)),
        }
    }
}
