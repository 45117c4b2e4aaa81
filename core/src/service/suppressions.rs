//! The suppression (do-not-call) list: add (or change) a number, list, remove. Every outbound
//! call is checked against it inside the dial's own transaction (`TelephonyRepository::call_open`).

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{EventType, NewSuppression, Outcome, Suppression, SuppressionFilter};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::validate;

impl Service {
    /// Puts a number on the suppression list, or changes the reason and expiry of its entry;
    /// says which (`true`: new).
    pub async fn suppression_put(
        &self,
        actor: &Actor,
        input: NewSuppression,
    ) -> Result<(Suppression, bool)> {
        actor.require(Permission::SuppressionsWrite)?;
        let phone_number = validate::e164("phone_number", &input.phone_number)?;
        let reason = input
            .reason
            .as_deref()
            .map(|r| validate::text("reason", r, 500))
            .transpose()?;
        let now = self.now();
        if input.expires_at.is_some_and(|end| end <= now) {
            return Err(Error::invalid("expires_at must be in the future"));
        }
        let entry = Suppression {
            suppression_id: self.id(IdKind::Suppression),
            organization_id: actor.organization_id.clone(),
            phone_number,
            reason,
            expires_at: input.expires_at,
            created_at: now,
            updated_at: now,
        };
        let stamp = self.event_stamp(EventType::SuppressionCreated, By::Creating(actor));
        self.after_write(self.repo.suppression_put(&entry, &stamp).await)
    }

    /// The suppression list, newest first; only one number's entry with `phone_number`.
    pub async fn suppression_list(
        &self,
        actor: &Actor,
        filter: &SuppressionFilter,
        params: &PageParams,
    ) -> Result<Page<Suppression>> {
        actor.require(Permission::SuppressionsRead)?;
        let number = filter
            .phone_number
            .as_deref()
            .map(|n| validate::e164("phone_number", n))
            .transpose()?;
        let scope = number.clone().unwrap_or_default();
        let query = PageQuery::from_params_scoped(params, IdKind::Suppression, &scope)?;
        let rows = self
            .repo
            .suppression_list(&actor.organization_id, number.as_deref(), &query)
            .await?;
        Ok(Page::from_rows_by(rows, query.limit, |s| {
            cursor_of(s.created_at, &s.suppression_id).encode_scoped(&scope)
        }))
    }

    /// Takes `phone_number` off the suppression list.
    pub async fn suppression_delete(
        &self,
        actor: &Actor,
        phone_number: &str,
    ) -> Result<Outcome<Suppression>> {
        actor.require(Permission::SuppressionsWrite)?;
        let number = validate::e164("phone_number", phone_number)?;
        let stamp = self.event_stamp(EventType::SuppressionDeleted, By::Deleting(actor));
        let entry = self
            .after_write(
                self.repo
                    .suppression_delete(&actor.organization_id, &number, &stamp)
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("{number} is not on the suppression list")))?;
        Ok(Outcome::new(
            entry,
            "number removed from the suppression list",
        ))
    }
}
