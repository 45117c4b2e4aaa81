//! Telephony integrations: stored, encrypted provider credentials.

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::crypto::CredentialCipher;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    EventType, Integration, IntegrationFilter, IntegrationStatus, IntegrationUpdate,
    NewIntegration, Outcome, REDACTED,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::repo::IntegrationDeletion;
use crate::role::Permission;
use crate::telephony::{ProbeOutcome, TelephonyCredentials, TelephonyProvider};
use crate::validate;

fn category(value: &str) -> Result<String> {
    Ok(validate::text("category", value, 50)?.to_lowercase())
}

impl Service {
    pub(super) fn cipher(&self) -> Result<&CredentialCipher> {
        self.cipher.as_deref().ok_or_else(|| {
            Error::Unavailable(
                "integration credentials cannot be stored or read: secrets.master_key is not configured"
                    .to_owned(),
            )
        })
    }

    fn seal(&self, credentials: &TelephonyCredentials, integration_id: &str) -> Result<String> {
        let plain = serde_json::to_vec(credentials)
            .map_err(|e| Error::Internal(format!("encoding credentials: {e}")))?;
        self.cipher()?.seal(&plain, integration_id.as_bytes())
    }

    /// The credentials `sealed` holds for the integration `integration_id`.
    pub(super) fn open_credentials(
        &self,
        integration_id: &str,
        sealed: &str,
    ) -> Result<TelephonyCredentials> {
        let plain = self.cipher()?.open(sealed, integration_id.as_bytes())?;
        serde_json::from_slice(&plain).map_err(|_| {
            Error::Internal(format!(
                "stored credentials of {integration_id} are not readable"
            ))
        })
    }

    /// Stores provider credentials, encrypted, under a new integration (status `active` until a
    /// validation says otherwise). The credentials are never returned.
    pub async fn integration_create(
        &self,
        actor: &Actor,
        input: NewIntegration,
    ) -> Result<Integration> {
        actor.require(Permission::IntegrationsWrite)?;
        let name = validate::text("name", &input.name, 200)?;
        let provider = TelephonyProvider::parse(input.provider.trim())?;
        let category = category(&input.category)?;
        let credentials = TelephonyCredentials::parse(provider, &input.credentials)?;
        let now = self.now();
        let integration = Integration {
            integration_id: self.id(IdKind::Integration),
            organization_id: actor.organization_id.clone(),
            name,
            provider: provider.as_str().to_owned(),
            category,
            status: IntegrationStatus::Active,
            created_at: now,
            updated_at: now,
        };
        let sealed = self.seal(&credentials, &integration.integration_id)?;
        let event = self.event(
            EventType::IntegrationCreated,
            &integration,
            By::Creating(actor),
        )?;
        self.after_write(
            self.repo
                .integration_insert(&integration, &sealed, &event)
                .await,
        )?;
        Ok(integration)
    }

    /// One integration of the organization.
    pub async fn integration_view(
        &self,
        actor: &Actor,
        integration_id: &str,
    ) -> Result<Integration> {
        actor.require(Permission::IntegrationsRead)?;
        let id = IdKind::Integration.parse(integration_id)?;
        self.repo
            .integration_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("integration {id} not found")))
    }

    /// The organization's integrations, newest first.
    pub async fn integration_list(
        &self,
        actor: &Actor,
        filter: &IntegrationFilter,
        params: &PageParams,
    ) -> Result<Page<Integration>> {
        actor.require(Permission::IntegrationsRead)?;
        let query = PageQuery::from_params(params, IdKind::Integration)?;
        let rows = self
            .repo
            .integration_list(&actor.organization_id, filter, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |i| {
            cursor_of(i.created_at, &i.integration_id)
        }))
    }

    /// Renames, recategorizes, or replaces the credentials of an integration (same provider).
    /// New credentials reset the status to `active` until validated.
    pub async fn integration_update(
        &self,
        actor: &Actor,
        integration_id: &str,
        input: IntegrationUpdate,
    ) -> Result<Integration> {
        actor.require(Permission::IntegrationsWrite)?;
        let id = IdKind::Integration.parse(integration_id)?;
        let name = input
            .name
            .as_deref()
            .map(|v| validate::text("name", v, 200))
            .transpose()?;
        let new_category = input.category.as_deref().map(category).transpose()?;
        let mut audit = self.audited_change(actor, "integration.update", "integration");
        let sealed = match &input.credentials {
            Some(value) => {
                // The provider never changes, so reading it before the write is safe.
                let current = self.integration_view(actor, &id).await?;
                let provider = TelephonyProvider::parse(&current.provider)?;
                let credentials = TelephonyCredentials::parse(provider, value)?;
                // That the credentials were replaced, never what they are.
                audit.extra.insert(
                    "credentials".to_owned(),
                    serde_json::json!([REDACTED, REDACTED]),
                );
                Some(self.seal(&credentials, &id)?)
            }
            None => None,
        };
        let replaced = sealed.is_some();
        let now = self.now();
        let change = Box::new(move |integration: &mut Integration| {
            if let Some(v) = name {
                integration.name = v;
            }
            if let Some(v) = new_category {
                integration.category = v;
            }
            if replaced {
                integration.status = IntegrationStatus::Active;
            }
            integration.updated_at = now.max(integration.updated_at);
            Ok(())
        });
        self.repo
            .integration_update(
                &actor.organization_id,
                &id,
                change,
                sealed.as_deref(),
                &audit,
            )
            .await?
            .ok_or_else(|| Error::not_found(format!("integration {id} not found")))
    }

    /// Makes a test call to the provider with the stored credentials and stores the outcome
    /// in `status` (`active` or `invalid`).
    ///
    /// When the provider cannot say (unreachable, timeout, 5xx, 429), the integration is left
    /// as it was (`status`, `updated_at`, no event) and the call fails with
    /// [`Error::Upstream`] naming the provider (HTTP 502).
    pub async fn integration_validate(
        &self,
        actor: &Actor,
        integration_id: &str,
    ) -> Result<Outcome<Integration>> {
        actor.require(Permission::IntegrationsRead)?;
        let id = IdKind::Integration.parse(integration_id)?;
        let (integration, sealed) = self
            .repo
            .integration_get_sealed(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("integration {id} not found")))?;
        let validator = self.telephony.as_ref().ok_or_else(|| {
            Error::Unavailable("telephony validation is not configured on this server".to_owned())
        })?;
        let credentials = self.open_credentials(&id, &sealed)?;
        let outcome = validator.probe(&credentials).await;
        let (status, message) = match &outcome {
            ProbeOutcome::Valid => (
                IntegrationStatus::Active,
                format!("{} accepted the credentials", integration.provider),
            ),
            ProbeOutcome::Invalid(reason) => {
                tracing::info!(integration_id = %id, %reason, "integration validation failed");
                (
                    IntegrationStatus::Invalid,
                    format!(
                        "{} did not accept the credentials: {reason}",
                        integration.provider
                    ),
                )
            }
            ProbeOutcome::Unavailable(reason) => {
                return Err(Error::Upstream(format!(
                    "{reason}; the credentials could not be checked and the integration is unchanged, try again later"
                )));
            }
        };
        // Only the status is the probe's to write: a rename meanwhile stands.
        let now = self.now();
        let change = Box::new(move |integration: &mut Integration| {
            integration.status = status;
            integration.updated_at = now.max(integration.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::IntegrationValidated, By::changing(actor));
        let integration = self
            .after_write(
                self.repo
                    .integration_validated(&actor.organization_id, &id, change, &stamp)
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("integration {id} not found")))?;
        Ok(Outcome {
            data: integration,
            message,
        })
    }

    /// Deletes an integration and its credentials; refused (409) while phone numbers
    /// reference it.
    pub async fn integration_delete(
        &self,
        actor: &Actor,
        integration_id: &str,
    ) -> Result<Outcome<Integration>> {
        actor.require(Permission::IntegrationsDelete)?;
        let id = IdKind::Integration.parse(integration_id)?;
        match self.after_write(
            self.repo
                .integration_delete(
                    &actor.organization_id,
                    &id,
                    &self.event_stamp(EventType::IntegrationDeleted, By::Deleting(actor)),
                )
                .await,
        )? {
            IntegrationDeletion::Deleted(integration) => Ok(Outcome {
                data: integration,
                message: "integration and its stored credentials deleted".to_owned(),
            }),
            IntegrationDeletion::Referenced(numbers) => {
                let list: Vec<String> = numbers
                    .iter()
                    .map(|n| format!("{} ({})", n.phone_number, n.phone_number_id))
                    .collect();
                Err(Error::conflict(format!(
                    "integration is still referenced by phone numbers {}; remove or reassign them first",
                    list.join(", ")
                )))
            }
            IntegrationDeletion::NotFound => {
                Err(Error::not_found(format!("integration {id} not found")))
            }
        }
    }
}
