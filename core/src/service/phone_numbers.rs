//! Phone numbers.

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    EventType, Integration, NewPhoneNumber, Outcome, PhoneNumber, PhoneNumberFilter,
    PhoneNumberStatus, PhoneNumberUpdate,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::validate;

fn agent_ref(id: &str) -> Result<String> {
    if IdKind::Agent.matches(id) {
        Ok(id.to_owned())
    } else {
        Err(Error::invalid(format!(
            "assigned_agent_id `{}` is not a valid agent id",
            crate::ids::truncate(id, 80)
        )))
    }
}

/// The provider a number gets: the integration's when there is one (a different explicit
/// provider is a 400), else the explicit one, which is then required.
fn provider_for(explicit: Option<&str>, integration_provider: Option<&str>) -> Result<String> {
    match (explicit, integration_provider) {
        (Some(p), Some(i)) if p.trim() != i => Err(Error::invalid(format!(
            "provider `{}` does not match the integration's provider `{i}`",
            crate::ids::truncate(p, 40),
        ))),
        (_, Some(i)) => Ok(i.to_owned()),
        (Some(p), None) => validate::text("provider", p, 50),
        (None, None) => Err(Error::invalid(
            "provider is required when no integration_id is given",
        )),
    }
}

fn status_for(assigned_agent_id: &Option<String>) -> PhoneNumberStatus {
    if assigned_agent_id.is_some() {
        PhoneNumberStatus::Assigned
    } else {
        PhoneNumberStatus::Unassigned
    }
}

impl Service {
    /// The integration a body names, which must exist in the organization (else 400).
    async fn integration_ref(&self, actor: &Actor, id: &str) -> Result<Integration> {
        if !IdKind::Integration.matches(id) {
            return Err(Error::invalid(format!(
                "integration_id `{}` is not a valid integration id",
                crate::ids::truncate(id, 80)
            )));
        }
        self.repo
            .integration_get(&actor.organization_id, id)
            .await?
            .ok_or_else(|| {
                Error::invalid(format!(
                    "integration_id: integration {id} not found in this organization"
                ))
            })
    }

    /// Adds a phone number, optionally owned by an integration and assigned to an agent.
    pub async fn phone_number_create(
        &self,
        actor: &Actor,
        input: NewPhoneNumber,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersWrite)?;
        let phone_number = validate::e164("phone_number", &input.phone_number)?;
        let integration = match input.integration_id.as_deref() {
            Some(id) => Some(self.integration_ref(actor, id).await?),
            None => None,
        };
        let provider = provider_for(
            input.provider.as_deref(),
            integration.as_ref().map(|i| i.provider.as_str()),
        )?;
        let assigned_agent_id = input
            .assigned_agent_id
            .as_deref()
            .map(agent_ref)
            .transpose()?;
        let now = self.now();
        let number = PhoneNumber {
            phone_number_id: self.id(IdKind::PhoneNumber),
            phone_number,
            organization_id: actor.organization_id.clone(),
            provider,
            status: status_for(&assigned_agent_id),
            supports_inbound: input.supports_inbound.unwrap_or(true),
            supports_outbound: input.supports_outbound.unwrap_or(true),
            assigned_agent_id,
            integration_id: integration.map(|i| i.integration_id),
            provider_number_id: None,
            connected_at: None,
            created_at: now,
            updated_at: now,
        };
        let event = self.event(EventType::PhoneNumberCreated, &number, By::Creating(actor))?;
        self.after_write(self.repo.phone_number_insert(&number, &event).await)?;
        Ok(number)
    }

    /// One phone number of the organization.
    pub async fn phone_number_view(
        &self,
        actor: &Actor,
        phone_number_id: &str,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersRead)?;
        let id = IdKind::PhoneNumber.parse(phone_number_id)?;
        self.repo
            .phone_number_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))
    }

    /// The organization's phone numbers, newest first; with `agent_id`, only that agent's
    /// (none for an agent of another organization or no agent at all).
    pub async fn phone_number_list(
        &self,
        actor: &Actor,
        filter: &PhoneNumberFilter,
        params: &PageParams,
    ) -> Result<Page<PhoneNumber>> {
        actor.require(Permission::PhoneNumbersRead)?;
        let query = PageQuery::from_params(params, IdKind::PhoneNumber)?;
        let filter = PhoneNumberFilter {
            agent_id: filter
                .agent_id
                .as_deref()
                .map(|id| IdKind::Agent.parse(id))
                .transpose()?,
        };
        let rows = self
            .repo
            .phone_number_list(&actor.organization_id, &filter, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |n| {
            cursor_of(n.created_at, &n.phone_number_id)
        }))
    }

    /// Assigns or unassigns the agent, attaches or detaches the integration, or changes the
    /// capabilities of a number.
    pub async fn phone_number_update(
        &self,
        actor: &Actor,
        phone_number_id: &str,
        input: PhoneNumberUpdate,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersWrite)?;
        let id = IdKind::PhoneNumber.parse(phone_number_id)?;
        let assigned = input
            .assigned_agent_id
            .map(|agent| agent.as_deref().map(agent_ref).transpose())
            .transpose()?;
        // `Some(None)` detaches the integration; whether a named one still exists is checked
        // again inside the write.
        let integration = match &input.integration_id {
            Some(Some(id)) => Some(Some(self.integration_ref(actor, id).await?)),
            Some(None) => Some(None),
            None => None,
        };
        let now = self.now();
        let change = Box::new(move |number: &mut PhoneNumber| {
            if let Some(agent) = assigned {
                number.assigned_agent_id = agent;
                number.status = status_for(&number.assigned_agent_id);
            }
            if integration.is_some() || input.provider.is_some() {
                // A number attached to an integration has that integration's provider (an
                // integration never changes provider), so the current one stands for it.
                let (integration_id, integration_provider) = match integration {
                    Some(Some(i)) => (Some(i.integration_id), Some(i.provider)),
                    Some(None) => (None, None),
                    None => (
                        number.integration_id.clone(),
                        number
                            .integration_id
                            .as_ref()
                            .map(|_| number.provider.clone()),
                    ),
                };
                // Without an integration the number keeps its provider unless a new one is
                // given.
                let fallback = integration_provider
                    .is_none()
                    .then(|| number.provider.clone());
                number.provider = provider_for(
                    input.provider.as_deref().or(fallback.as_deref()),
                    integration_provider.as_deref(),
                )?;
                number.integration_id = integration_id;
            }
            if let Some(v) = input.supports_inbound {
                number.supports_inbound = v;
            }
            if let Some(v) = input.supports_outbound {
                number.supports_outbound = v;
            }
            number.updated_at = now.max(number.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::PhoneNumberUpdated, By::changing(actor));
        self.after_write(
            self.repo
                .phone_number_update(&actor.organization_id, &id, change, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))
    }

    /// Configures the number at its provider so that its calls reach this server: finds it
    /// on the integration's account (exactly that number) and points it at voiceplane's
    /// webhooks (Twilio: its voice and status URLs; Telnyx: its Call Control application and
    /// that application's event URL), then records the provider's id of the number and when
    /// it was connected. Doing it again does it again, harmlessly.
    ///
    /// 422 when the number has no integration, the Telnyx integration lacks `connection_id`
    /// or `public_key`, or the provider does not have the number; 502 when the provider
    /// refuses or cannot be reached (nothing is recorded then); 503 when this server has no
    /// telephony configured.
    pub async fn phone_number_connect(
        &self,
        actor: &Actor,
        phone_number_id: &str,
    ) -> Result<PhoneNumber> {
        use crate::telephony::gateway::GatewayError;

        actor.require(Permission::PhoneNumbersWrite)?;
        let id = IdKind::PhoneNumber.parse(phone_number_id)?;
        let number = self
            .repo
            .phone_number_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))?;
        let integration_id = number.integration_id.clone().ok_or_else(|| {
            Error::unprocessable(format!(
                "phone number {id} has no integration_id: attach the integration whose account \
                 owns the number, then connect it"
            ))
        })?;
        let (_, sealed) = self
            .repo
            .integration_get_sealed(&actor.organization_id, &integration_id)
            .await?
            .ok_or_else(|| {
                Error::unprocessable(format!("integration {integration_id} no longer exists"))
            })?;
        let credentials = self.open_credentials(&integration_id, &sealed)?;
        super::telephony::ready_for_calls(&integration_id, &credentials)?;
        let (gateway, urls) = self.gateway.as_ref().ok_or_else(|| {
            Error::Unavailable("telephony is not configured on this server".to_owned())
        })?;
        let provider_error = |e: GatewayError| match e {
            GatewayError::NotFound(sentence) => Error::unprocessable(sentence),
            GatewayError::Rejected { code, message } => {
                Error::Upstream(format!("{message} (code {code})"))
            }
            GatewayError::Unavailable(sentence)
            | GatewayError::Overloaded(sentence)
            | GatewayError::Unknown(sentence) => Error::Upstream(sentence),
        };
        let provider_number_id = gateway
            .find_number(&credentials, &number.phone_number)
            .await
            .map_err(provider_error)?;
        gateway
            .connect_number(
                &credentials,
                &provider_number_id,
                &urls.number_webhooks(&integration_id),
            )
            .await
            .map_err(provider_error)?;
        let now = self.now();
        let change = Box::new(move |number: &mut PhoneNumber| {
            number.provider_number_id = Some(provider_number_id);
            number.connected_at = Some(now);
            number.updated_at = now.max(number.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::PhoneNumberUpdated, By::changing(actor));
        self.after_write(
            self.repo
                .phone_number_update(&actor.organization_id, &id, change, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))
    }

    /// Deletes a phone number.
    pub async fn phone_number_delete(
        &self,
        actor: &Actor,
        phone_number_id: &str,
    ) -> Result<Outcome<PhoneNumber>> {
        actor.require(Permission::PhoneNumbersWrite)?;
        let id = IdKind::PhoneNumber.parse(phone_number_id)?;
        let number = self
            .after_write(
                self.repo
                    .phone_number_delete(
                        &actor.organization_id,
                        &id,
                        &self.event_stamp(EventType::PhoneNumberDeleted, By::Deleting(actor)),
                    )
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))?;
        Ok(Outcome::new(number, "phone number deleted"))
    }
}
