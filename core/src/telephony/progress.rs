//! How a provider's reports move a call forward: the status each provider's words map to, and
//! the rule that a call only ever moves forward (`queued` → `ringing` → `in_progress` → a
//! terminal status), so that a late, repeated or reordered callback changes nothing.

use serde::{Deserialize, Serialize};

use crate::model::CallStatus;

/// Who answered an outbound call, as the provider's machine detection tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// A person.
    Human,
    /// A voicemail, an answering machine or a fax.
    Machine,
    /// The detection could not tell.
    Unknown,
}

impl AnsweredBy {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Machine => "machine",
            Self::Unknown => "unknown",
        }
    }

    /// Reads a stored wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "human" => Some(Self::Human),
            "machine" => Some(Self::Machine),
            "unknown" => Some(Self::Unknown),
            _ => None,
        }
    }
}

/// Where `status` stands on the way forward: the three live steps, then every terminal
/// status at the same, last step.
const fn step(status: CallStatus) -> u8 {
    match status {
        CallStatus::Queued => 0,
        CallStatus::Ringing => 1,
        CallStatus::InProgress => 2,
        CallStatus::Completed
        | CallStatus::Failed
        | CallStatus::Busy
        | CallStatus::NoAnswer
        | CallStatus::Canceled => 3,
    }
}

/// Whether `status` ends a call.
pub const fn is_terminal(status: CallStatus) -> bool {
    step(status) == 3
}

/// Whether a report of `to` moves a call that is `from` forward. A terminal status is final;
/// `dial_outcome_unknown` (a failed call whose dial may or may not have reached the
/// provider) is the one exception, and the caller decides that before asking.
pub const fn moves_forward(from: CallStatus, to: CallStatus) -> bool {
    step(to) > step(from)
}

/// The `end_reason` a terminal status gives a call the runtime did not give one.
pub const fn end_reason_of(status: CallStatus) -> Option<&'static str> {
    match status {
        CallStatus::Completed => Some("hangup"),
        CallStatus::Busy => Some("busy"),
        CallStatus::NoAnswer => Some("no_answer"),
        CallStatus::Failed => Some("failed"),
        CallStatus::Canceled => Some("canceled"),
        CallStatus::Queued | CallStatus::Ringing | CallStatus::InProgress => None,
    }
}

/// Twilio's `CallStatus`: `initiated` → `queued`, `in-progress` → `in_progress`, `no-answer`
/// → `no_answer`, the others by name; `None` for a word Twilio does not use.
pub fn twilio_status(call_status: &str) -> Option<CallStatus> {
    Some(match call_status {
        "initiated" | "queued" => CallStatus::Queued,
        "ringing" => CallStatus::Ringing,
        "in-progress" | "answered" => CallStatus::InProgress,
        "completed" => CallStatus::Completed,
        "busy" => CallStatus::Busy,
        "no-answer" => CallStatus::NoAnswer,
        "failed" => CallStatus::Failed,
        "canceled" => CallStatus::Canceled,
        _ => return None,
    })
}

/// Twilio's `AnsweredBy`: `human`, `machine_*` and `fax` are a machine, `unknown`.
pub fn twilio_answered_by(answered_by: &str) -> Option<AnsweredBy> {
    match answered_by {
        "human" => Some(AnsweredBy::Human),
        "fax" => Some(AnsweredBy::Machine),
        "unknown" => Some(AnsweredBy::Unknown),
        other if other.starts_with("machine") => Some(AnsweredBy::Machine),
        _ => None,
    }
}

/// The status a Telnyx `call.hangup` with `hangup_cause` ends a call in, given whether it was
/// answered.
pub fn telnyx_hangup(hangup_cause: &str, answered: bool) -> CallStatus {
    match hangup_cause {
        "normal_clearing" if answered => CallStatus::Completed,
        "user_busy" => CallStatus::Busy,
        "no_answer" | "timeout" if !answered => CallStatus::NoAnswer,
        "originator_cancel" => CallStatus::Canceled,
        _ => CallStatus::Failed,
    }
}

/// Telnyx's `call.machine.detection.ended` `result`: `human`, `machine`, `not_sure`.
pub fn telnyx_answered_by(result: &str) -> Option<AnsweredBy> {
    match result {
        "human" => Some(AnsweredBy::Human),
        "machine" | "fax_detected" => Some(AnsweredBy::Machine),
        "not_sure" => Some(AnsweredBy::Unknown),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallStatus::*;

    #[test]
    fn calls_only_move_forward_and_terminal_statuses_are_final() {
        assert!(moves_forward(Queued, Ringing));
        assert!(moves_forward(Queued, Completed));
        assert!(moves_forward(InProgress, NoAnswer));
        assert!(!moves_forward(InProgress, Ringing));
        assert!(!moves_forward(Ringing, Ringing));
        assert!(!moves_forward(Completed, Failed));
        assert!(!moves_forward(Busy, InProgress));
    }

    #[test]
    fn twilio_words_map_as_pinned() {
        assert_eq!(twilio_status("initiated"), Some(Queued));
        assert_eq!(twilio_status("in-progress"), Some(InProgress));
        assert_eq!(twilio_status("no-answer"), Some(NoAnswer));
        assert_eq!(twilio_status("canceled"), Some(Canceled));
        assert_eq!(twilio_status("exploded"), None);
        assert_eq!(
            twilio_answered_by("machine_end_beep"),
            Some(AnsweredBy::Machine)
        );
        assert_eq!(twilio_answered_by("fax"), Some(AnsweredBy::Machine));
        assert_eq!(twilio_answered_by("human"), Some(AnsweredBy::Human));
    }

    #[test]
    fn telnyx_hangup_causes_map_as_pinned() {
        assert_eq!(telnyx_hangup("normal_clearing", true), Completed);
        assert_eq!(telnyx_hangup("normal_clearing", false), Failed);
        assert_eq!(telnyx_hangup("user_busy", false), Busy);
        assert_eq!(telnyx_hangup("timeout", false), NoAnswer);
        assert_eq!(telnyx_hangup("no_answer", true), Failed);
        assert_eq!(telnyx_hangup("originator_cancel", false), Canceled);
        assert_eq!(telnyx_hangup("call_rejected", false), Failed);
    }
}
