//! Phone numbers.

use super::*;

impl Service {
    /// Adds a phone number, optionally owned by an integration and assigned to an agent.
    pub async fn phone_number_create(
        &self,
        actor: &Actor,
        input: NewPhoneNumber,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersWrite)?;
        let phone_number = validate::e164("phone_number", &input.phone_number)?;
        let org = &actor.organization_id;
        let integration = match input.integration_id.as_deref() {
            Some(id) => {
                if !IdKind::Integration.matches(id) {
                    return Err(Error::invalid(format!(
                        "integration_id `{}` is not a valid integration id",
                        crate::ids::truncate(id, 80)
                    )));
                }
                Some(self.repo.integration_get(org, id).await?.ok_or_else(|| {
                    Error::invalid(format!(
                        "integration_id: integration {id} not found in this organization"
                    ))
                })?)
            }
            None => None,
        };
        let provider = match (input.provider.as_deref(), &integration) {
            (Some(p), Some(i)) if p.trim() != i.provider => {
                return Err(Error::invalid(format!(
                    "provider `{}` does not match the integration's provider `{}`",
                    crate::ids::truncate(p, 40),
                    i.provider
                )));
            }
            (_, Some(i)) => i.provider.clone(),
            (Some(p), None) => validate::text("provider", p, 50)?,
            (None, None) => {
                return Err(Error::invalid(
                    "provider is required when no integration_id is given",
                ));
            }
        };
        let assigned_agent_id = match input.assigned_agent_id.as_deref() {
            Some(id) => Some(self.referenced_agent(actor, id).await?.agent_id),
            None => None,
        };
        let now = self.now();
        let number = PhoneNumber {
            phone_number_id: self.id(IdKind::PhoneNumber),
            phone_number,
            client_id: org.clone(),
            provider,
            status: if assigned_agent_id.is_some() {
                PhoneNumberStatus::Assigned
            } else {
                PhoneNumberStatus::Unassigned
            },
            supports_inbound: input.supports_inbound.unwrap_or(true),
            supports_outbound: input.supports_outbound.unwrap_or(true),
            assigned_agent_id,
            integration_id: integration.map(|i| i.integration_id),
            created_at: now,
            updated_at: now,
        };
        self.repo.phone_number_insert(&number).await?;
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
}
