//! Bootstrap: creating an organization with its first admin and an admin API key, for an
//! operator rather than through the API.

use super::Service;
use crate::auth::ApiKeySecret;
use crate::error::Result;
use crate::ids::IdKind;
use crate::model::{ApiKey, ApiKeyStatus, MemberStatus, Membership, Organization, User};
use crate::repo::BootstrapRecords;
use crate::role::Role;
use crate::validate;

/// Input of [`Service::organization_bootstrap`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    /// Organization name.
    pub org_name: String,
    /// E-mail of the first admin.
    pub admin_email: String,
    /// Display name of the first admin.
    pub admin_name: Option<String>,
}

/// What bootstrap created; `api_key` is the full secret, shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootstrapOutput {
    /// `org_…`
    pub organization_id: String,
    /// `user_…`
    pub user_id: String,
    /// `apikey_…`
    pub key_id: String,
    /// The admin key's secret.
    pub api_key: String,
}

impl Service {
    /// Creates an organization, its first admin (or reuses the user with that e-mail), the
    /// admin membership and an admin API key, atomically.
    pub async fn organization_bootstrap(&self, input: BootstrapInput) -> Result<BootstrapOutput> {
        let org_name = validate::text("org-name", &input.org_name, 200)?;
        let email = validate::email("admin-email", &input.admin_email)?;
        let admin_name = input
            .admin_name
            .as_deref()
            .map(|n| validate::text("admin-name", n, 200))
            .transpose()?;
        let now = self.now();
        let organization = Organization {
            organization_id: self.id(IdKind::Organization),
            name: org_name,
            created_at: now,
        };
        let (user, user_is_new) = match self.repo.user_find_by_email(&email).await? {
            Some(user) => (user, false),
            None => (
                User {
                    user_id: self.id(IdKind::User),
                    email,
                    name: admin_name,
                    created_at: now,
                    last_login: None,
                },
                true,
            ),
        };
        let membership = Membership {
            membership_id: self.id(IdKind::Membership),
            organization_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            role: Role::Admin,
            status: MemberStatus::Active,
            created_at: now,
        };
        let secret = ApiKeySecret::generate();
        let api_key = ApiKey {
            key_id: self.id(IdKind::ApiKey),
            name: "bootstrap admin key".to_owned(),
            role: Role::Admin,
            prefix: secret.prefix().to_owned(),
            organization_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: None,
            scopes: None,
        };
        let records = BootstrapRecords {
            organization,
            user,
            user_is_new,
            membership,
            api_key,
            secret_hash: secret.hash(),
        };
        self.repo.bootstrap(&records).await?;
        Ok(BootstrapOutput {
            organization_id: records.organization.organization_id,
            user_id: records.user.user_id,
            key_id: records.api_key.key_id,
            api_key: secret.expose().to_owned(),
        })
    }
}
