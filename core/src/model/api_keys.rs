//! API keys: the stored key (never its secret), its status, and the create body and answer.

use serde::{Deserialize, Serialize};

use crate::role::{Permission, Role};
use crate::time::Timestamp;

/// Status of an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyStatus {
    /// Usable.
    Active,
    /// Past its `expires_at`; no longer authenticates.
    Expired,
    /// Revoked; no longer authenticates.
    Revoked,
}

/// An API key. The secret itself is never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ApiKey {
    /// `apikey_` + 12 hex digits.
    pub key_id: String,
    /// Human label.
    pub name: String,
    /// The role the key acts with.
    pub role: Role,
    /// First 12 characters of the secret, for recognising it.
    pub prefix: String,
    /// Owning organization.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// User who created the key.
    pub user_id: String,
    /// `active`, `expired` or `revoked`.
    pub status: ApiKeyStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last time it authenticated a request (updated at most once a minute).
    pub last_used_at: Option<Timestamp>,
    /// When it stops working, if ever.
    pub expires_at: Option<Timestamp>,
    /// The permissions the key is narrowed to, a subset of its role's; `null`: all of its
    /// role's.
    pub scopes: Option<Vec<Permission>>,
}

impl ApiKey {
    /// The status as seen at `now`: an active key past `expires_at` is `expired`.
    pub fn status_at(&self, now: Timestamp) -> ApiKeyStatus {
        match (self.status, self.expires_at) {
            (ApiKeyStatus::Active, Some(exp)) if exp <= now => ApiKeyStatus::Expired,
            (status, _) => status,
        }
    }
}

/// Body of `POST /api/api-keys`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    /// Human label, 1–100 characters.
    pub name: String,
    /// Role of the key; not above the caller's.
    pub role: Role,
    /// Optional expiry, in the future.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    /// Optional: narrows the key to these permissions, each held by its role and by the
    /// caller (else 400). Left out or `null`: every permission of its role.
    #[serde(default)]
    pub scopes: Option<Vec<Permission>>,
}

/// A new key and its secret, shown once.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct CreatedApiKey {
    /// The stored key.
    #[serde(flatten)]
    pub key: ApiKey,
    /// The full secret (`vpk_…`); never retrievable again.
    pub api_key: String,
}
