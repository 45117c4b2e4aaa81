//! Events: the record of every state change, written in the same transaction as the change, and
//! the query of the events list.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{AuditEntry, AuditStamp, ChangeKind, audit_snapshot};
use crate::error::{Error, Result};
use crate::precondition::Preconditions;
use crate::repo::Change;
use crate::time::Timestamp;

/// Declares [`EventType`] once: each variant with its dotted wire name, so the enum, its
/// serialization, [`EventType::ALL`], [`EventType::as_str`] and parsing cannot disagree.
macro_rules! event_types {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)+) => {
        /// The type of an event, serialized with its dotted name (`call.created`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
        pub enum EventType {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)+
        }

        impl EventType {
            /// Every event type, in catalogue order.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+];

            /// The dotted wire name, e.g. `call.created`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }
        }
    };
}

event_types! {
    /// A call was recorded.
    CallCreated => "call.created",
    /// A call changed.
    CallUpdated => "call.updated",
    /// A call was deleted.
    CallDeleted => "call.deleted",
    /// A call's recording was stored.
    RecordingReady => "recording.ready",
    /// A call's recording was deleted.
    RecordingDeleted => "recording.deleted",
    /// A knowledge-base document was added.
    DocumentCreated => "document.created",
    /// A document's processing completed or failed.
    DocumentProcessed => "document.processed",
    /// A document was deleted.
    DocumentDeleted => "document.deleted",
    /// An agent was created.
    AgentCreated => "agent.created",
    /// An agent changed.
    AgentUpdated => "agent.updated",
    /// An agent was deleted.
    AgentDeleted => "agent.deleted",
    /// A tool was created.
    ToolCreated => "tool.created",
    /// A tool changed.
    ToolUpdated => "tool.updated",
    /// A tool was deleted.
    ToolDeleted => "tool.deleted",
    /// A phone number was added.
    PhoneNumberCreated => "phone_number.created",
    /// A phone number changed.
    PhoneNumberUpdated => "phone_number.updated",
    /// A phone number was deleted.
    PhoneNumberDeleted => "phone_number.deleted",
    /// Telephony credentials were stored.
    IntegrationCreated => "integration.created",
    /// An integration's credentials were tested with its provider.
    IntegrationValidated => "integration.validated",
    /// An integration was deleted with its credentials.
    IntegrationDeleted => "integration.deleted",
    /// An API key was created (the data never holds its secret).
    ApiKeyCreated => "api_key.created",
    /// An API key was revoked.
    ApiKeyRevoked => "api_key.revoked",
    /// Someone became a member.
    MemberAdded => "member.added",
    /// A member's role changed.
    MemberUpdated => "member.updated",
    /// A member was removed.
    MemberRemoved => "member.removed",
    /// Someone was invited.
    InvitationCreated => "invitation.created",
    /// An invitation was accepted.
    InvitationAccepted => "invitation.accepted",
    /// An invitation was withdrawn.
    InvitationRevoked => "invitation.revoked",
    /// A number was added to the suppression list (or its entry changed).
    SuppressionCreated => "suppression.created",
    /// A number was taken off the suppression list.
    SuppressionDeleted => "suppression.deleted",
    /// A campaign started, or resumed after a pause.
    CampaignStarted => "campaign.started",
    /// A campaign was paused: it dials no one until it is started again.
    CampaignPaused => "campaign.paused",
    /// A campaign has nothing left to do.
    CampaignCompleted => "campaign.completed",
    /// A campaign was canceled: its pending recipients will not be called.
    CampaignCanceled => "campaign.canceled",
    /// A version of an agent was published.
    AgentPublished => "agent.published",
    /// A call's post-call analysis ended: `analysis_status` is `completed` (with `analysis`)
    /// or `failed` (with `analysis_error`).
    CallAnalyzed => "call.analyzed",
    /// A test event sent to a webhook endpoint.
    WebhookTest => "webhook.test",
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown event type `{}`",
                    crate::ids::truncate(s, 60)
                ))
            })
    }
}

// By hand rather than derived so that an unknown type is refused with a sentence naming it,
// not serde's list of the whole catalogue.
impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.public_message()))
    }
}

/// A state change, as `GET /api/events` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Event {
    /// `evt_` + 16 hex digits.
    pub event_id: String,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// When it happened: the time of the change.
    pub created_at: Timestamp,
    /// The resource as the API returns it after the change (for deletes: as it was).
    pub data: serde_json::Value,
    /// The audit-log entry of the change, when a caller made it: recorded with the event.
    #[serde(skip)]
    pub audit: Option<AuditEntry>,
}

/// The id, type and time of an event whose data the repository reads inside the write's own
/// transaction: the resource as it was deleted, or as the write left it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventStamp {
    /// `evt_` + 16 hex digits.
    pub event_id: String,
    /// What happens.
    pub event_type: EventType,
    /// The time of the change.
    pub created_at: Timestamp,
    /// Who makes the change, when a caller does: the event then also records an audit entry.
    pub audit: Option<AuditStamp>,
    /// The caller's `If-Match`/`If-None-Match`, checked against the resource as the write's
    /// transaction reads it (see [`change`](Self::change) and [`with`](Self::with)).
    pub preconditions: Preconditions,
}

impl EventStamp {
    /// `before`, the resource as the write's transaction reads it (its row locked), with
    /// `change` applied: the fields the caller names, on top of whatever other writers
    /// committed. Fails with a 412 first when `before` does not satisfy the preconditions.
    pub fn change<T: Serialize + Clone>(&self, before: &T, change: Change<'_, T>) -> Result<T> {
        self.preconditions.apply(before, change)
    }

    /// The event of an update from `before` to `after` (both as the API returns them, read in
    /// the write's transaction): the audit entry compares the two.
    pub fn updated<T: Serialize>(&self, before: &T, after: &T) -> Result<Event> {
        let mut stamp = self.clone();
        if let Some(audit) = &mut stamp.audit {
            audit.change = ChangeKind::Updated(audit_snapshot(before)?);
        }
        stamp.event(after)
    }

    /// The event carrying `data` serialized as the API returns it: the resource as the write
    /// left it, or as it was for a delete. For a delete, `data` is checked against the
    /// preconditions first (412).
    pub fn with<T: Serialize>(&self, data: &T) -> Result<Event> {
        if matches!(
            self.audit.as_ref().map(|a| &a.change),
            Some(ChangeKind::Deleted)
        ) {
            self.preconditions.check(data)?;
        }
        self.event(data)
    }

    fn event<T: Serialize>(&self, data: &T) -> Result<Event> {
        let data = serde_json::to_value(data)
            .map_err(|e| Error::Internal(format!("encoding the data of an event: {e}")))?;
        let audit = self
            .audit
            .as_ref()
            .and_then(|a| a.for_event(self.event_type, &data));
        Ok(Event {
            event_id: self.event_id.clone(),
            event_type: self.event_type,
            created_at: self.created_at,
            data,
            audit,
        })
    }
}

/// The filter of `GET /api/events`, beside the page parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct EventFilter {
    /// Only events of these types; repeat the parameter for several. Every type when omitted.
    #[serde(rename = "type", default)]
    pub types: Vec<EventType>,
    /// Only events about this resource: the id its data carries (`call_…`, `agent_…`, …).
    #[serde(default, deserialize_with = "crate::page::empty_as_none")]
    pub resource_id: Option<String>,
}

impl EventType {
    /// The field of the data that names the resource an event of this type is about.
    pub fn resource_field(self) -> &'static str {
        use EventType::*;
        match self {
            CallCreated | CallUpdated | CallDeleted | CallAnalyzed | RecordingReady
            | RecordingDeleted => "call_sid",
            DocumentCreated | DocumentProcessed | DocumentDeleted => "documentation_id",
            AgentCreated | AgentUpdated | AgentDeleted | AgentPublished => "agent_id",
            ToolCreated | ToolUpdated | ToolDeleted => "tool_id",
            PhoneNumberCreated | PhoneNumberUpdated | PhoneNumberDeleted => "phone_number_id",
            IntegrationCreated | IntegrationValidated | IntegrationDeleted => "integration_id",
            ApiKeyCreated | ApiKeyRevoked => "key_id",
            MemberAdded | MemberUpdated | MemberRemoved => "membership_id",
            InvitationCreated | InvitationAccepted | InvitationRevoked => "invite_id",
            SuppressionCreated | SuppressionDeleted => "suppression_id",
            CampaignStarted | CampaignPaused | CampaignCompleted | CampaignCanceled => {
                "campaign_id"
            }
            WebhookTest => "webhook_id",
        }
    }
}

impl Event {
    /// The id of the resource the event is about, as its data names it.
    pub fn resource_id(&self) -> Option<&str> {
        self.data
            .get(self.event_type.resource_field())
            .and_then(serde_json::Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_and_unknown_ones_are_named() {
        for t in EventType::ALL {
            let json = serde_json::to_value(t).unwrap();
            assert_eq!(json, t.as_str());
            assert_eq!(serde_json::from_value::<EventType>(json).unwrap(), *t);
        }
        assert_eq!(EventType::ALL.len(), 37);
        let err = serde_json::from_value::<EventType>("call.exploded".into()).unwrap_err();
        assert!(err.to_string().contains("`call.exploded`"), "{err}");
    }
}
