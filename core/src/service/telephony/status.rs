//! What providers report about calls they carry: Twilio's status callbacks and Telnyx's call
//! events, applied so that a call only ever moves forward.

use super::TwilioWebhook;
use crate::error::Result;
use crate::ids::IdKind;
use crate::model::{Call, CallStatus, Integration, UsageComponent};
use crate::service::Service;
use crate::telephony::TelephonyProvider;
use crate::telephony::progress::{self, AnsweredBy};
use crate::time::Timestamp;

pub(super) use crate::model::DIAL_OUTCOME_UNKNOWN;
use crate::model::PROVIDER_LOST;
use crate::telephony::gateway::ProviderCall;

/// What one report says about a call.
#[derive(Debug, Clone, Default)]
struct Report {
    /// The provider's id of the call, learnt when the dial's answer was lost.
    provider_call_id: Option<String>,
    /// Where the call stands now.
    status: Option<Move>,
    /// Who answered.
    answered_by: Option<AnsweredBy>,
    /// The provider's duration, for a call that ended.
    duration_seconds: Option<f64>,
}

/// A status report: a status, or a Telnyx hangup whose status depends on whether the call
/// was answered (which only the call as stored knows).
#[derive(Debug, Clone)]
enum Move {
    To(CallStatus),
    TelnyxHangup(String),
}

/// `report` applied to `call` at `now`: forward only; a terminal status is final, except
/// after a dial of unknown outcome.
fn apply(call: &mut Call, report: Report, now: Timestamp) {
    let before = call.clone();
    if call.provider_call_id.is_none() {
        call.provider_call_id = report.provider_call_id;
    }
    if let Some(answered_by) = report.answered_by {
        call.answered_by = Some(answered_by);
    }
    let to = report.status.map(|m| match m {
        Move::To(status) => status,
        Move::TelnyxHangup(cause) => {
            progress::telnyx_hangup(&cause, call.status == CallStatus::InProgress)
        }
    });
    if let Some(to) = to {
        let unknown = call.ended_provisionally();
        if unknown || progress::moves_forward(call.status, to) {
            if unknown {
                call.end_reason = None;
                call.end_time = None;
            }
            call.status = to;
            if to == CallStatus::InProgress && call.start_time.is_none() {
                call.start_time = Some(now);
            }
            if progress::is_terminal(to) {
                let end = *call.end_time.get_or_insert(now);
                call.duration_seconds = report
                    .duration_seconds
                    .or_else(|| call.start_time.map(|start| start.seconds_until(end)))
                    .or(call.duration_seconds);
                if call.end_reason.is_none() {
                    call.end_reason = progress::end_reason_of(to).map(str::to_owned);
                }
            }
        }
    }
    if *call != before {
        call.updated_at = now.max(call.updated_at);
    }
}

impl Service {
    /// Twilio's status callback for a call of the integration `integration_id`: `call_sid`
    /// names voiceplane's call (outbound calls' callbacks carry it in their URL), else the
    /// call is found by Twilio's `CallSid`. Unknown calls are ignored. 403 unless Twilio
    /// signed it.
    pub async fn twilio_status(
        &self,
        integration_id: &str,
        call_sid: Option<&str>,
        hook: &TwilioWebhook,
    ) -> Result<()> {
        let verified = self.verified_twilio(integration_id, hook).await?;
        let provider_call_id = hook.param("CallSid");
        let report = Report {
            provider_call_id: provider_call_id.map(str::to_owned),
            status: hook
                .param("CallStatus")
                .and_then(progress::twilio_status)
                .map(Move::To),
            answered_by: hook
                .param("AnsweredBy")
                .and_then(progress::twilio_answered_by),
            duration_seconds: hook
                .param("CallDuration")
                .and_then(|d| d.parse::<f64>().ok())
                .filter(|d| d.is_finite() && *d >= 0.0),
        };
        let call = self
            .reported_call(
                &verified.route.integration,
                TelephonyProvider::Twilio,
                call_sid,
                provider_call_id,
            )
            .await?;
        match call {
            Some(call) => self.apply_report(&call, report).await,
            None => Ok(()),
        }
    }

    /// A Telnyx event about a call it carries.
    pub(super) async fn telnyx_progress(
        &self,
        integration: &Integration,
        event_type: &str,
        payload: &serde_json::Value,
    ) -> Result<()> {
        let status = match event_type {
            "call.answered" => Some(Move::To(CallStatus::InProgress)),
            "call.hangup" => Some(Move::TelnyxHangup(
                payload["hangup_cause"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )),
            "call.initiated" | "call.machine.detection.ended" => None,
            _ => return Ok(()),
        };
        let answered_by = (event_type == "call.machine.detection.ended")
            .then(|| {
                payload["result"]
                    .as_str()
                    .and_then(progress::telnyx_answered_by)
            })
            .flatten();
        let provider_call_id = payload["call_control_id"].as_str();
        // Calls voiceplane placed carry their call_sid as `client_state`, base64.
        let call_sid = payload["client_state"]
            .as_str()
            .and_then(crate::telephony::call_sid_of_client_state);
        let call = self
            .reported_call(
                integration,
                TelephonyProvider::Telnyx,
                call_sid.as_deref(),
                provider_call_id,
            )
            .await?;
        let report = Report {
            provider_call_id: provider_call_id.map(str::to_owned),
            status,
            answered_by,
            duration_seconds: None,
        };
        match call {
            Some(call) => self.apply_report(&call, report).await,
            None => Ok(()),
        }
    }

    /// The call a report is about: by voiceplane's id when the report carries it, else by
    /// the provider's; only calls of the integration's organization and provider.
    async fn reported_call(
        &self,
        integration: &Integration,
        provider: TelephonyProvider,
        call_sid: Option<&str>,
        provider_call_id: Option<&str>,
    ) -> Result<Option<Call>> {
        let org = &integration.organization_id;
        let call = match (
            call_sid.filter(|s| IdKind::Call.matches(s)),
            provider_call_id,
        ) {
            (Some(sid), _) => self.repo.call_get(org, sid).await?,
            (None, Some(id)) => self.repo.call_find_provider(org, provider, id).await?,
            (None, None) => None,
        };
        Ok(call.filter(|c| c.provider == Some(provider)))
    }

    /// Applies `report` to `call` in one locked read-change-write; records `call.updated`
    /// when anything the API shows changed. A report that ends the call with the provider's
    /// duration adds the call's `telephony` usage item, once.
    /// Applies what the provider says of its call `found`, asked rather than reported: its
    /// id becomes `call`'s when it has none, and its status moves the call as a report does.
    pub(super) async fn adopt(&self, call: &Call, found: ProviderCall) -> Result<()> {
        let report = Report {
            provider_call_id: Some(found.provider_call_id),
            status: found.status.map(Move::To),
            answered_by: None,
            duration_seconds: found.duration_seconds,
        };
        self.apply_report(call, report).await
    }

    /// Ends `call`, which its provider no longer knows, `failed` with `provider_lost`: a later
    /// report still moves it.
    pub(super) async fn lose_call(&self, call: &Call) -> Result<Option<Call>> {
        let now = self.now();
        self.change_call(call, move |c| {
            if !progress::is_terminal(c.status) {
                c.status = CallStatus::Failed;
                c.end_reason = Some(PROVIDER_LOST.to_owned());
                c.end_time = Some(now);
                c.updated_at = now.max(c.updated_at);
            }
            Ok(())
        })
        .await
    }

    async fn apply_report(&self, call: &Call, report: Report) -> Result<()> {
        let now = self.now();
        let charge = match (call.provider, report.duration_seconds) {
            (Some(provider), Some(seconds)) if seconds > 0.0 => Some(
                self.telephony_charge(&call.organization_id, provider, seconds)
                    .await?,
            ),
            _ => None,
        };
        self.change_call(call, move |call| {
            apply(call, report, now);
            if let Some(charge) = charge
                && progress::is_terminal(call.status)
                && !call.cost_breakdown.iter().any(|c| {
                    c.component == UsageComponent::Telephony && c.provider == charge.provider
                })
            {
                crate::service::usage::append_charges(call, vec![charge])?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(status: CallStatus) -> Call {
        let mut call = Call::new(
            "call_1".into(),
            "org_1",
            None,
            crate::model::CallType::Outbound,
            "+14155550100".into(),
            Timestamp::from_micros(0),
        );
        call.status = status;
        call.provider = Some(TelephonyProvider::Twilio);
        call
    }

    fn to(status: CallStatus) -> Report {
        Report {
            status: Some(Move::To(status)),
            ..Report::default()
        }
    }

    #[test]
    fn a_call_moves_forward_and_times_itself() {
        let mut c = call(CallStatus::Queued);
        apply(
            &mut c,
            to(CallStatus::InProgress),
            Timestamp::from_micros(1_000_000),
        );
        assert_eq!(c.start_time, Some(Timestamp::from_micros(1_000_000)));
        // A late `ringing` changes nothing.
        let before = c.clone();
        apply(
            &mut c,
            to(CallStatus::Ringing),
            Timestamp::from_micros(2_000_000),
        );
        assert_eq!(c, before);
        apply(
            &mut c,
            to(CallStatus::Completed),
            Timestamp::from_micros(31_000_000),
        );
        assert_eq!(c.status, CallStatus::Completed);
        assert_eq!(c.duration_seconds, Some(30.0));
        assert_eq!(c.end_reason.as_deref(), Some("hangup"));
        // Final.
        apply(
            &mut c,
            to(CallStatus::Failed),
            Timestamp::from_micros(40_000_000),
        );
        assert_eq!(c.status, CallStatus::Completed);
    }

    #[test]
    fn an_unknown_dial_outcome_is_moved_by_what_the_provider_reports() {
        let mut c = call(CallStatus::Failed);
        c.end_reason = Some(DIAL_OUTCOME_UNKNOWN.into());
        c.end_time = Some(Timestamp::from_micros(5));
        apply(&mut c, to(CallStatus::Ringing), Timestamp::from_micros(9));
        assert_eq!(c.status, CallStatus::Ringing);
        assert_eq!((c.end_reason, c.end_time), (None, None));
    }

    #[test]
    fn the_runtimes_end_reason_stands_and_a_telnyx_hangup_reads_the_stored_status() {
        let mut c = call(CallStatus::InProgress);
        c.start_time = Some(Timestamp::from_micros(0));
        c.end_reason = Some("tool_end_call".into());
        let hangup = Report {
            status: Some(Move::TelnyxHangup("normal_clearing".into())),
            ..Report::default()
        };
        apply(&mut c, hangup.clone(), Timestamp::from_micros(3_000_000));
        assert_eq!(c.status, CallStatus::Completed);
        assert_eq!(c.end_reason.as_deref(), Some("tool_end_call"));
        let mut unanswered = call(CallStatus::Ringing);
        apply(&mut unanswered, hangup, Timestamp::from_micros(1));
        assert_eq!(unanswered.status, CallStatus::Failed);
    }
}
