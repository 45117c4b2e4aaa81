//! The audit log: who changed what, when and from where. One entry per state change made by a
//! caller through the API, written in the transaction of the change (through the event of the
//! change, [`EventStamp`](super::EventStamp)'s `audit`, or beside it for the few writes that
//! record no event), with field-level `changes` whose secrets are elided.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::EventType;
use crate::auth::{Actor, Principal};
use crate::error::{Error, Result};
use crate::precondition::Preconditions;
use crate::repo::Change;
use crate::time::Timestamp;

/// What `changes` shows in place of a secret's value: that the field changed, not to what.
pub const REDACTED: &str = "[redacted]";

/// Field names whose values are never recorded, at any depth (compared case-insensitively,
/// `-` read as `_`): credentials, key and webhook secrets, and the usual names of tokens and
/// passwords in a tool's headers.
const SECRET_FIELDS: &[&str] = &[
    "api_key",
    "api_secret",
    "auth_token",
    "authorization",
    "credentials",
    "password",
    "previous_secret",
    "secret",
    "secret_hash",
    "token",
    "x_api_key",
];

fn is_secret(field: &str) -> bool {
    let field = field.to_ascii_lowercase().replace('-', "_");
    SECRET_FIELDS.contains(&field.as_str())
}

/// `value` with the value of every secret field, at any depth, replaced by [`REDACTED`].
fn redacted(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redacted(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

/// How the caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AuditActorType {
    /// With an API key (`key_id`).
    ApiKey,
    /// With a JWT (`user_id`).
    User,
}

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AuditActor {
    /// `api_key` or `user`.
    #[serde(rename = "type")]
    pub actor_type: AuditActorType,
    /// The API key that made the change (`api_key` actors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The user who made the change with a JWT (`user` actors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

impl AuditActor {
    /// The actor behind `actor`'s credential.
    pub fn of(actor: &Actor) -> Self {
        match &actor.principal {
            Principal::ApiKey(key_id) => Self {
                actor_type: AuditActorType::ApiKey,
                key_id: Some(key_id.clone()),
                user_id: None,
            },
            Principal::User => Self::user(&actor.user_id),
        }
    }

    /// A user acting with a JWT.
    pub fn user(user_id: &str) -> Self {
        Self {
            actor_type: AuditActorType::User,
            key_id: None,
            user_id: Some(user_id.to_owned()),
        }
    }
}

/// One entry of the audit log, as `GET /api/audit-log` shows it. Entries are never changed or
/// deleted through the API; `audit.retention_days` bounds how long they are kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AuditEntry {
    /// `aud_` + 16 hex digits.
    pub audit_id: String,
    /// Who made the change.
    pub actor: AuditActor,
    /// `<resource>.<verb>`, e.g. `agent.update`, `api_key.revoke`.
    pub action: String,
    /// The kind of resource changed, e.g. `agent`.
    pub resource_type: String,
    /// The id of the resource changed (the organization's id for its settings).
    pub resource_id: String,
    /// The fields that changed, each as `[old, new]` (`null` before a create and after a
    /// delete). A secret's value is never recorded: it shows as `"[redacted]"`.
    #[cfg_attr(feature = "openapi", schemars(schema_with = "changes_schema"))]
    pub changes: Map<String, Value>,
    /// The `X-Request-Id` of the request that made the change.
    pub request_id: Option<String>,
    /// The client's address.
    pub ip: Option<String>,
    /// When the change was made.
    pub created_at: Timestamp,
}

/// `changes` as an object of arrays of any values. Written out because schemars says "any
/// value" with the boolean schema `true`, which OpenAPI client generators (openapi-python-client)
/// refuse as `items`; `{}` says the same.
#[cfg(feature = "openapi")]
fn changes_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"type": "array", "items": {}},
    })
}

/// How an entry's `changes` are read from the resource the event carries.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeKind {
    /// Every field, `[null, new]`.
    Created,
    /// Every field, `[old, null]`.
    Deleted,
    /// The fields that differ from this value of the resource before the change.
    Updated(Value),
}

/// Who is changing something and from where, taken before the write: the repository turns it
/// into an [`AuditEntry`] with the data of the change, inside the write's transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditStamp {
    /// `aud_` + 16 hex digits.
    pub audit_id: String,
    /// Who.
    pub actor: AuditActor,
    /// The request's id.
    pub request_id: Option<String>,
    /// The client's address.
    pub ip: Option<String>,
    /// The time of the change.
    pub created_at: Timestamp,
    /// How `changes` are computed, when the entry comes from an event.
    pub change: ChangeKind,
}

/// `(resource_type, verb, id field)` of the change an event records, for the events a caller
/// causes; `None` for those only the system causes.
fn described(event_type: EventType) -> Option<(&'static str, &'static str, &'static str)> {
    use EventType::*;
    Some(match event_type {
        CallCreated => ("call", "create", "call_sid"),
        CallUpdated => ("call", "update", "call_sid"),
        CallDeleted => ("call", "delete", "call_sid"),
        RecordingReady => ("recording", "upload", "call_sid"),
        RecordingDeleted => ("recording", "delete", "call_sid"),
        DocumentCreated => ("document", "create", "documentation_id"),
        DocumentProcessed => return None,
        DocumentDeleted => ("document", "delete", "documentation_id"),
        AgentCreated => ("agent", "create", "agent_id"),
        AgentUpdated => ("agent", "update", "agent_id"),
        AgentDeleted => ("agent", "delete", "agent_id"),
        AgentPublished => ("agent", "publish", "agent_id"),
        CallAnalyzed => return None,
        ToolCreated => ("tool", "create", "tool_id"),
        ToolUpdated => ("tool", "update", "tool_id"),
        ToolDeleted => ("tool", "delete", "tool_id"),
        PhoneNumberCreated => ("phone_number", "create", "phone_number_id"),
        PhoneNumberUpdated => ("phone_number", "update", "phone_number_id"),
        PhoneNumberDeleted => ("phone_number", "delete", "phone_number_id"),
        IntegrationCreated => ("integration", "create", "integration_id"),
        IntegrationValidated => ("integration", "validate", "integration_id"),
        IntegrationDeleted => ("integration", "delete", "integration_id"),
        ApiKeyCreated => ("api_key", "create", "key_id"),
        ApiKeyRevoked => ("api_key", "revoke", "key_id"),
        MemberAdded => ("member", "add", "membership_id"),
        MemberUpdated => ("member", "update", "membership_id"),
        MemberRemoved => ("member", "remove", "membership_id"),
        InvitationCreated => ("invitation", "create", "invite_id"),
        InvitationAccepted => ("invitation", "accept", "invite_id"),
        InvitationRevoked => ("invitation", "revoke", "invite_id"),
        SuppressionCreated => ("suppression", "put", "suppression_id"),
        SuppressionDeleted => ("suppression", "delete", "suppression_id"),
        CampaignStarted => ("campaign", "start", "campaign_id"),
        CampaignPaused => ("campaign", "pause", "campaign_id"),
        CampaignCompleted => return None,
        CampaignCanceled => ("campaign", "cancel", "campaign_id"),
        WebhookTest => ("webhook", "test", "webhook_id"),
    })
}

/// `{field: [old, new]}` of the fields that differ between `before` and `after` (objects),
/// secrets redacted.
pub fn audit_changes(before: &Value, after: &Value) -> Map<String, Value> {
    let empty = Map::new();
    let before = before.as_object().unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let mut changes = Map::new();
    for (field, new) in after {
        let old = before.get(field).unwrap_or(&Value::Null);
        if old != new {
            changes.insert(field.clone(), pair(field, old, new));
        }
    }
    for (field, old) in before {
        if !after.contains_key(field) {
            changes.insert(field.clone(), pair(field, old, &Value::Null));
        }
    }
    changes
}

/// `[old, new]` of `field`, a secret's values redacted (a `null` stays `null`: that a secret
/// was set or removed is no secret).
fn pair(field: &str, old: &Value, new: &Value) -> Value {
    let hide = |v: &Value| {
        if v.is_null() {
            Value::Null
        } else if is_secret(field) {
            Value::String(REDACTED.to_owned())
        } else {
            redacted(v)
        }
    };
    Value::Array(vec![hide(old), hide(new)])
}

/// A change a caller makes that records no event, only its audit entry: the repository reads
/// the resource inside its write, checks the caller's preconditions against it, and records
/// the entry from the resource as it was and as the write left it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedChange {
    /// Who and from where.
    pub stamp: AuditStamp,
    /// `<resource_type>.<verb>`, e.g. `webhook.update`.
    pub action: String,
    /// e.g. `webhook`.
    pub resource_type: String,
    /// The caller's `If-Match`/`If-None-Match`.
    pub preconditions: Preconditions,
    /// Changes the two states do not show (a replaced secret), recorded as given.
    pub extra: Map<String, Value>,
}

impl AuditedChange {
    /// `before` with `change` applied; a 412 first when `before` fails the preconditions.
    pub fn change<T: Serialize + Clone>(&self, before: &T, change: Change<'_, T>) -> Result<T> {
        self.preconditions.apply(before, change)
    }

    /// Fails with a 412 when `current` does not satisfy the preconditions (for a delete).
    pub fn check<T: Serialize>(&self, current: &T) -> Result<()> {
        self.preconditions.check(current)
    }

    /// The entry of the change of `resource_id` from `before` to `after` (`None` before a
    /// create, after a delete).
    pub fn entry<T: Serialize>(
        &self,
        resource_id: &str,
        before: Option<&T>,
        after: Option<&T>,
    ) -> Result<AuditEntry> {
        let value = |v: Option<&T>| v.map(audit_snapshot).transpose();
        let mut changes = audit_changes(
            &value(before)?.unwrap_or_default(),
            &value(after)?.unwrap_or_default(),
        );
        changes.extend(self.extra.clone());
        Ok(self
            .stamp
            .entry(&self.action, &self.resource_type, resource_id, changes))
    }
}

/// The value of a resource as the API returns it, for [`ChangeKind::Updated`].
pub fn audit_snapshot<T: Serialize>(resource: &T) -> Result<Value> {
    serde_json::to_value(resource)
        .map_err(|e| Error::Internal(format!("encoding a resource for the audit log: {e}")))
}

impl AuditStamp {
    /// The entry of a change with explicit `changes` (secrets in them redacted).
    pub fn entry(
        &self,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        changes: Map<String, Value>,
    ) -> AuditEntry {
        let changes = changes
            .into_iter()
            .map(|(field, v)| {
                let v = match v {
                    Value::Array(pair) if pair.len() == 2 => {
                        Value::Array(vec![hidden(&field, &pair[0]), hidden(&field, &pair[1])])
                    }
                    other => hidden(&field, &other),
                };
                (field, v)
            })
            .collect();
        AuditEntry {
            audit_id: self.audit_id.clone(),
            actor: self.actor.clone(),
            action: action.to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id: resource_id.to_owned(),
            changes,
            request_id: self.request_id.clone(),
            ip: self.ip.clone(),
            created_at: self.created_at,
        }
    }

    /// The entry of the change `event_type` records, `data` being the resource the event
    /// carries (after the change; as it was for a delete). `None` for an event no caller
    /// causes.
    pub fn for_event(&self, event_type: EventType, data: &Value) -> Option<AuditEntry> {
        let (resource_type, verb, id_field) = described(event_type)?;
        let changes = match &self.change {
            ChangeKind::Created => audit_changes(&Value::Null, data),
            ChangeKind::Deleted => audit_changes(data, &Value::Null),
            ChangeKind::Updated(before) => audit_changes(before, data),
        };
        let resource_id = data.get(id_field).and_then(Value::as_str).unwrap_or("");
        let mut entry = self.entry("", resource_type, resource_id, Map::new());
        entry.action = format!("{resource_type}.{verb}");
        entry.changes = changes;
        Some(entry)
    }
}

/// `v` as recorded for `field`: redacted when the field is a secret (unless `null`).
fn hidden(field: &str, v: &Value) -> Value {
    if is_secret(field) && !v.is_null() {
        Value::String(REDACTED.to_owned())
    } else {
        redacted(v)
    }
}

/// The filters of `GET /api/audit-log`, beside the page parameters; combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AuditFilter {
    /// Only entries of this action, e.g. `agent.update`.
    #[serde(default)]
    pub action: Option<String>,
    /// Only entries about this resource, e.g. `agent_3f9a0c1d2e4b5a6c`.
    #[serde(default)]
    pub resource_id: Option<String>,
    /// Only changes made with this API key.
    #[serde(default)]
    pub actor_key_id: Option<String>,
    /// Only changes made by this user with a JWT.
    #[serde(default)]
    pub actor_user_id: Option<String>,
    /// Only entries created at or after this instant (RFC 3339).
    #[serde(default)]
    pub created_after: Option<Timestamp>,
    /// Only entries created before this instant (RFC 3339).
    #[serde(default)]
    pub created_before: Option<Timestamp>,
}

impl AuditFilter {
    /// A short digest of the filters, empty when there are none: what binds a cursor to them.
    pub fn digest(&self) -> String {
        if *self == Self::default() {
            return String::new();
        }
        let micros = |t: Option<Timestamp>| t.map(|t| t.as_micros().to_string());
        let canonical = serde_json::json!([
            self.action,
            self.resource_id,
            self.actor_key_id,
            self.actor_user_id,
            micros(self.created_after),
            micros(self.created_before),
        ]);
        crate::page::filter_digest(&canonical)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stamp(change: ChangeKind) -> AuditStamp {
        AuditStamp {
            audit_id: "aud_0123456789abcdef".into(),
            actor: AuditActor::user("user_1"),
            request_id: Some("req-1".into()),
            ip: Some("127.0.0.1".into()),
            created_at: Timestamp::from_micros(1),
            change,
        }
    }

    #[test]
    fn changes_are_field_pairs_and_secrets_never_appear() {
        let before = json!({"agent_id": "agent_1", "agent_name": "a", "language": "EN"});
        let after = json!({"agent_id": "agent_1", "agent_name": "b", "language": "EN"});
        let entry = stamp(ChangeKind::Updated(before))
            .for_event(EventType::AgentUpdated, &after)
            .unwrap();
        assert_eq!(entry.action, "agent.update");
        assert_eq!(entry.resource_id, "agent_1");
        assert_eq!(json!(entry.changes), json!({"agent_name": ["a", "b"]}));

        let created = stamp(ChangeKind::Created)
            .for_event(
                EventType::ToolCreated,
                &json!({"tool_id": "tool_1", "headers": {"Authorization": "Bearer s3cret"}}),
            )
            .unwrap();
        let text = serde_json::to_string(&created).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
        assert_eq!(
            json!(created.changes),
            json!({"tool_id": [null, "tool_1"], "headers": [null, {"Authorization": REDACTED}]})
        );

        let explicit = stamp(ChangeKind::Created).entry(
            "webhook.rotate_secret",
            "webhook",
            "whk_1",
            Map::from_iter([("secret".to_owned(), json!(["whsec_old", "whsec_new"]))]),
        );
        assert_eq!(
            json!(explicit.changes),
            json!({"secret": [REDACTED, REDACTED]})
        );
        assert!(
            stamp(ChangeKind::Created)
                .for_event(EventType::DocumentProcessed, &json!({}))
                .is_none()
        );
    }
}
