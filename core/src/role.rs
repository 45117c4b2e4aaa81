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

/// A permission, named `<resource>:<action>` in the messages that refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// `api_keys:read`
    ApiKeysRead,
    /// `api_keys:create`
    ApiKeysCreate,
    /// `api_keys:revoke`
    ApiKeysRevoke,
    /// `calls:read`
    CallsRead,
    /// `calls:write`
    CallsWrite,
    /// `calls:delete` (a call with its transcript and recording, or only its recording)
    CallsDelete,
    /// `calls:import` (record a call with a `created_at` in the past)
    CallsImport,
    /// `settings:manage` (the organization's retention policy)
    SettingsManage,
    /// `tools:read`
    ToolsRead,
    /// `tools:write`
    ToolsWrite,
    /// `kb:read`
    KbRead,
    /// `kb:write`
    KbWrite,
    /// `agents:read`
    AgentsRead,
    /// `agents:write`
    AgentsWrite,
    /// `integrations:read`
    IntegrationsRead,
    /// `integrations:write`
    IntegrationsWrite,
    /// `integrations:delete`
    IntegrationsDelete,
    /// `phone_numbers:read`
    PhoneNumbersRead,
    /// `phone_numbers:write`
    PhoneNumbersWrite,
    /// `voices:read`
    VoicesRead,
    /// `voices:write`
    VoicesWrite,
    /// `members:read`
    MembersRead,
    /// `members:manage` (change roles, remove members)
    MembersManage,
    /// `invitations:read`
    InvitationsRead,
    /// `invitations:manage` (invite, revoke invitations)
    InvitationsManage,
    /// `events:read`
    EventsRead,
    /// `webhooks:manage` (endpoints, their secrets and deliveries)
    WebhooksManage,
}

impl Permission {
    /// The least role that holds this permission. Reads: every role. Writes: agent managers
    /// and admins. Membership changes, the retention policy and
    /// back-dated calls: admins.
    pub const fn minimum_role(self) -> Role {
        use Permission::*;
        match self {
            ApiKeysRead | CallsRead | ToolsRead | KbRead | AgentsRead | IntegrationsRead
            | PhoneNumbersRead | VoicesRead | MembersRead | InvitationsRead => Role::User,
            ApiKeysCreate | ApiKeysRevoke | CallsWrite | ToolsWrite | KbWrite | AgentsWrite
            | IntegrationsWrite | IntegrationsDelete | PhoneNumbersWrite | VoicesWrite
            | EventsRead | WebhooksManage | CallsDelete => Role::AgentManager,
            MembersManage | InvitationsManage | CallsImport | SettingsManage => Role::Admin,
        }
    }

    /// The `<resource>:<action>` name, e.g. `tools:read`.
    pub const fn name(self) -> &'static str {
        use Permission::*;
        match self {
            ApiKeysRead => "api_keys:read",
            ApiKeysCreate => "api_keys:create",
            ApiKeysRevoke => "api_keys:revoke",
            CallsRead => "calls:read",
            CallsWrite => "calls:write",
            CallsDelete => "calls:delete",
            CallsImport => "calls:import",
            SettingsManage => "settings:manage",
            ToolsRead => "tools:read",
            ToolsWrite => "tools:write",
            KbRead => "kb:read",
            KbWrite => "kb:write",
            AgentsRead => "agents:read",
            AgentsWrite => "agents:write",
            IntegrationsRead => "integrations:read",
            IntegrationsWrite => "integrations:write",
            IntegrationsDelete => "integrations:delete",
            PhoneNumbersRead => "phone_numbers:read",
            PhoneNumbersWrite => "phone_numbers:write",
            VoicesRead => "voices:read",
            VoicesWrite => "voices:write",
            MembersRead => "members:read",
            MembersManage => "members:manage",
            InvitationsRead => "invitations:read",
            InvitationsManage => "invitations:manage",
            EventsRead => "events:read",
            WebhooksManage => "webhooks:manage",
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
        assert!(!Role::User.allows(Permission::ApiKeysRevoke));
        assert!(!Role::AgentManager.allows(Permission::InvitationsManage));
        assert!(Role::Admin.allows(Permission::InvitationsManage));
        assert!(!Role::User.allows(Permission::EventsRead));
        assert!(Role::AgentManager.allows(Permission::EventsRead));
        assert!(!Role::User.allows(Permission::WebhooksManage));
        assert!(Role::AgentManager.allows(Permission::WebhooksManage));
        assert!(!Role::User.allows(Permission::CallsDelete));
        assert!(Role::AgentManager.allows(Permission::CallsDelete));
        for p in [Permission::CallsImport, Permission::SettingsManage] {
            assert!(
                !Role::AgentManager.allows(p) && Role::Admin.allows(p),
                "{p}"
            );
        }
        assert_eq!("agent_manager".parse::<Role>().unwrap(), Role::AgentManager);
        assert!("owner".parse::<Role>().is_err());
    }
}
