//! Roles, their order, and the permission table.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A member's or an API key's role. Ordered: `User < AgentManager < Admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads everything, changes nothing.
    User,
    /// Manages agents, tools, numbers, integrations and keys.
    AgentManager,
    /// Everything, including members and invitations.
    Admin,
}

impl Role {
    /// The wire name: `user`, `agent_manager` or `admin`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::AgentManager => "agent_manager",
            Self::Admin => "admin",
        }
    }

    /// Whether this role holds `permission`.
    pub fn allows(self, permission: Permission) -> bool {
        self >= permission.minimum_role()
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "user" => Ok(Self::User),
            "agent_manager" => Ok(Self::AgentManager),
            "admin" => Ok(Self::Admin),
            _ => Err(Error::invalid(format!(
                "role must be one of `admin`, `agent_manager`, `user`, not `{}`",
                crate::ids::truncate(s, 40)
            ))),
        }
    }
}

/// Declares [`Permission`] once: each variant with its `<resource>:<action>` name and the least
/// role holding it, so the enum, [`Permission::ALL`], the names, parsing and the role table
/// cannot disagree.
macro_rules! permissions {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $least:ident;)+) => {
        /// A permission, named `<resource>:read|write` (plus `integrations:delete`), as
        /// DESIGN §16 spells them. A role is the set of permissions whose least role it reaches;
        /// an API key may be narrowed to a subset of its role's (`scopes`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Permission {
            $($(#[$doc])* $variant,)+
        }

        impl Permission {
            /// Every permission, in the order of the permission table.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)+];

            /// The `<resource>:<action>` name, e.g. `tools:read`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// The least role that holds this permission.
            pub const fn minimum_role(self) -> Role {
                match self {
                    $(Self::$variant => Role::$least,)+
                }
            }
        }
    };
}

permissions! {
    /// Read API keys (never their secrets).
    ApiKeysRead => "api_keys:read", User;
    /// Create and revoke API keys (never one above the caller's role).
    ApiKeysWrite => "api_keys:write", AgentManager;
    /// Read calls, their transcripts, recordings and statistics.
    CallsRead => "calls:read", User;
    /// Record, update and delete calls, their transcripts and recordings. Importing a call
    /// with a past `created_at` also needs the `admin` role.
    CallsWrite => "calls:write", AgentManager;
    /// Read tools.
    ToolsRead => "tools:read", User;
    /// Create, update and delete tools.
    ToolsWrite => "tools:write", AgentManager;
    /// Read and search the knowledge base.
    KbRead => "kb:read", User;
    /// Add, reprocess and delete knowledge-base documents.
    KbWrite => "kb:write", AgentManager;
    /// Read agents.
    AgentsRead => "agents:read", User;
    /// Create, update and delete agents.
    AgentsWrite => "agents:write", AgentManager;
    /// Read integrations (never their credentials).
    IntegrationsRead => "integrations:read", User;
    /// Create and validate integrations.
    IntegrationsWrite => "integrations:write", AgentManager;
    /// Delete integrations with their credentials.
    IntegrationsDelete => "integrations:delete", AgentManager;
    /// Read phone numbers.
    PhoneNumbersRead => "phone_numbers:read", User;
    /// Add, update and delete phone numbers.
    PhoneNumbersWrite => "phone_numbers:write", AgentManager;
    /// Read the suppression (do-not-call) list.
    SuppressionsRead => "suppressions:read", User;
    /// Add numbers to the suppression list and remove them.
    SuppressionsWrite => "suppressions:write", AgentManager;
    /// Read campaigns and their recipients.
    CampaignsRead => "campaigns:read", User;
    /// Create, change, start, pause, cancel and delete campaigns; add recipients.
    CampaignsWrite => "campaigns:write", AgentManager;
    /// Read members and pending invitations.
    MembersRead => "members:read", User;
    /// Invite, change roles, remove members, withdraw invitations.
    MembersWrite => "members:write", Admin;
    /// Read webhook endpoints and their deliveries.
    WebhooksRead => "webhooks:read", AgentManager;
    /// Create, change, delete and test webhook endpoints, rotate their secrets, retry
    /// deliveries.
    WebhooksWrite => "webhooks:write", AgentManager;
    /// Read events.
    EventsRead => "events:read", AgentManager;
    /// Reserved: no operation writes events directly.
    EventsWrite => "events:write", Admin;
    /// Read the organization's settings (the retention policy).
    SettingsRead => "settings:read", Admin;
    /// Change the organization's settings.
    SettingsWrite => "settings:write", Admin;
    /// Read the audit log.
    AuditRead => "audit:read", Admin;
    /// Reserved: the audit log cannot be changed through the API.
    AuditWrite => "audit:write", Admin;
    /// Search voices.
    VoicesRead => "voices:read", User;
    /// Add shared voices to the provider's library.
    VoicesWrite => "voices:write", AgentManager;
}

impl Permission {
    /// Whether a key narrowed to `scopes` may use this permission: it is named, or it reads a
    /// resource whose write is named (every write answers with the resource it changed, so
    /// writing includes reading).
    pub fn granted_by(self, scopes: &[Self]) -> bool {
        scopes.contains(&self)
            || self.name().strip_suffix(":read").is_some_and(|resource| {
                scopes
                    .iter()
                    .any(|s| s.name().strip_suffix(":write") == Some(resource))
            })
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Permission {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown permission `{}`: permissions are named `<resource>:read` or \
                     `<resource>:write`, e.g. `agents:read`",
                    crate::ids::truncate(s, 60)
                ))
            })
    }
}

impl Serialize for Permission {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

// By hand so that an unknown name is refused with a sentence naming it.
impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.public_message()))
    }
}

#[cfg(feature = "openapi")]
impl schemars::JsonSchema for Permission {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::ALL.iter().map(|p| p.name()).collect();
        schemars::json_schema!({
            "type": "string",
            "description": "A permission, `<resource>:read|write` (plus `integrations:delete`).",
            "enum": names,
        })
    }
}

impl Role {
    /// The permissions this role holds: its set in the permission table.
    pub fn permissions(self) -> impl Iterator<Item = Permission> {
        Permission::ALL
            .iter()
            .copied()
            .filter(move |p| self.allows(*p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_order_and_spec_table() {
        assert!(Role::User < Role::AgentManager && Role::AgentManager < Role::Admin);
        for role in [Role::User, Role::AgentManager, Role::Admin] {
            for p in [
                Permission::ToolsRead,
                Permission::KbRead,
                Permission::AgentsRead,
                Permission::IntegrationsRead,
                Permission::PhoneNumbersRead,
            ] {
                assert!(role.allows(p), "{role} should hold {p}");
            }
        }
        assert!(!Role::User.allows(Permission::IntegrationsDelete));
        assert!(Role::AgentManager.allows(Permission::IntegrationsDelete));
        assert!(!Role::User.allows(Permission::ApiKeysWrite));
        assert!(!Role::AgentManager.allows(Permission::MembersWrite));
        assert!(Role::Admin.allows(Permission::MembersWrite));
        assert!(!Role::User.allows(Permission::EventsRead));
        assert!(Role::AgentManager.allows(Permission::EventsRead));
        assert!(!Role::User.allows(Permission::WebhooksWrite));
        assert!(Role::AgentManager.allows(Permission::WebhooksWrite));
        assert!(!Role::User.allows(Permission::CallsWrite));
        assert!(Role::AgentManager.allows(Permission::CallsWrite));
        for p in [
            Permission::SettingsRead,
            Permission::SettingsWrite,
            Permission::AuditRead,
        ] {
            assert!(
                !Role::AgentManager.allows(p) && Role::Admin.allows(p),
                "{p}"
            );
        }
        assert_eq!("agent_manager".parse::<Role>().unwrap(), Role::AgentManager);
        assert!("owner".parse::<Role>().is_err());
    }

    /// The names are DESIGN §16's: `<resource>:read|write` for each resource, plus
    /// `integrations:delete`, and nothing else.
    #[test]
    fn names_are_the_designed_ones_and_round_trip() {
        let mut expected = Vec::new();
        for resource in [
            "api_keys",
            "calls",
            "tools",
            "kb",
            "agents",
            "integrations",
            "phone_numbers",
            "members",
            "webhooks",
            "events",
            "settings",
            "audit",
            "voices",
            "suppressions",
            "campaigns",
        ] {
            expected.push(format!("{resource}:read"));
            expected.push(format!("{resource}:write"));
        }
        expected.push("integrations:delete".to_owned());
        let mut names: Vec<String> = Permission::ALL
            .iter()
            .map(|p| p.name().to_owned())
            .collect();
        names.sort();
        expected.sort();
        assert_eq!(names, expected);
        for p in Permission::ALL {
            assert_eq!(p.name().parse::<Permission>().unwrap(), *p);
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(serde_json::from_value::<Permission>(json).unwrap(), *p);
        }
        let err = "calls:import".parse::<Permission>().unwrap_err();
        assert!(err.public_message().contains("`calls:import`"), "{err}");
        // Roles are nested sets: every permission of a role is one of the next role's.
        let user: Vec<_> = Role::User.permissions().collect();
        let manager: Vec<_> = Role::AgentManager.permissions().collect();
        assert!(user.iter().all(|p| manager.contains(p)));
        assert_eq!(Role::Admin.permissions().count(), Permission::ALL.len());
    }
}
