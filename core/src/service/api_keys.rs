//! API keys: create, list, view, revoke.

use super::{By, Service, cursor_of};
use crate::auth::{Actor, ApiKeySecret, Need};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{ApiKey, ApiKeyStatus, CreatedApiKey, EventType, NewApiKey, Outcome};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::{Permission, Role};
use crate::validate;

/// The scopes of a new key of `role` created by `actor`: each held by the role and by the
/// caller (a scoped caller included), so no key can do what its creator cannot; sorted, without
/// repeats. A scoped caller must name them: a key of all of its role's permissions would exceed
/// its creator's.
fn checked_scopes(
    actor: &Actor,
    role: Role,
    scopes: Option<Vec<Permission>>,
) -> Result<Option<Vec<Permission>>> {
    let Some(mut scopes) = scopes else {
        if actor.scopes.is_some() {
            return Err(Error::invalid(
                "a scoped API key can only create keys with `scopes`, each among its own",
            ));
        }
        return Ok(None);
    };
    if scopes.is_empty() {
        return Err(Error::invalid(
            "scopes must name at least one permission; leave it out for every permission of the role",
        ));
    }
    for scope in &scopes {
        if !role.allows(*scope) {
            return Err(Error::invalid(format!(
                "the scope `{scope}` is not allowed to the role `{role}`"
            )));
        }
        if !actor.holds(*scope) {
            return Err(Error::invalid(format!(
                "you cannot grant the scope `{scope}`: your own credential does not hold it"
            )));
        }
    }
    scopes.sort();
    scopes.dedup();
    Ok(Some(scopes))
}

impl Service {
    /// Creates an API key acting with `input.role`, which may not exceed the caller's role.
    pub async fn api_key_create(&self, actor: &Actor, input: NewApiKey) -> Result<CreatedApiKey> {
        actor.require(Permission::ApiKeysWrite)?;
        let name = validate::text("name", &input.name, 100)?;
        if input.role > actor.role {
            return Err(Error::forbidden(format!(
                "you cannot create a key with role `{}` above your own role `{}`",
                input.role, actor.role
            )));
        }
        let scopes = checked_scopes(actor, input.role, input.scopes)?;
        let now = self.now();
        if input.expires_at.is_some_and(|t| t <= now) {
            return Err(Error::invalid("expires_at must be in the future"));
        }
        let secret = ApiKeySecret::generate();
        let key = ApiKey {
            key_id: self.id(IdKind::ApiKey),
            name,
            role: input.role,
            prefix: secret.prefix().to_owned(),
            organization_id: actor.organization_id.clone(),
            user_id: actor.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: input.expires_at,
            scopes,
        };
        // The key without its secret: an event never carries one.
        let event = self.event(EventType::ApiKeyCreated, &key, By::Creating(actor))?;
        self.after_write(self.repo.api_key_insert(&key, &secret.hash(), &event).await)?;
        Ok(CreatedApiKey {
            key,
            api_key: secret.expose().to_owned(),
        })
    }

    /// The organization's API keys, newest first, revoked ones included.
    pub async fn api_key_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<ApiKey>> {
        actor.require(Permission::ApiKeysRead)?;
        let query = PageQuery::from_params(params, IdKind::ApiKey)?;
        let rows = self
            .repo
            .api_key_list(&actor.organization_id, &query)
            .await?;
        let now = self.now();
        let mut page = Page::from_rows(rows, &query, |k| cursor_of(k.created_at, &k.key_id));
        for key in &mut page.items {
            key.status = key.status_at(now);
        }
        Ok(page)
    }

    /// One key of the organization, without its secret (the same shape as a list item);
    /// 404 for an unknown key or one of another organization.
    pub async fn api_key_view(&self, actor: &Actor, key_id: &str) -> Result<ApiKey> {
        actor.require(Permission::ApiKeysRead)?;
        let key_id = IdKind::ApiKey.parse(key_id)?;
        let mut key = self
            .repo
            .api_key_get(&actor.organization_id, &key_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("API key {key_id} not found")))?;
        key.status = key.status_at(self.now());
        Ok(key)
    }

    /// Revokes a key of the organization (admins and agent managers, never a key whose role is
    /// above the caller's). The key stops authenticating at once and stays listed as
    /// `revoked`. Revoking a revoked key changes nothing and says so.
    pub async fn api_key_revoke(&self, actor: &Actor, key_id: &str) -> Result<Outcome<ApiKey>> {
        const FORBIDDEN: &str = "only admins and agent managers can revoke API keys";
        const NOT_FOUND: &str = "key not found or not in this organization";
        actor.require(Need::refusing_with(Permission::ApiKeysWrite, FORBIDDEN))?;
        let key_id = IdKind::ApiKey.parse(key_id)?;
        let org = &actor.organization_id;
        let key = self
            .repo
            .api_key_get(org, &key_id)
            .await?
            .ok_or_else(|| Error::not_found(NOT_FOUND))?;
        if key.role > actor.role {
            return Err(Error::forbidden(FORBIDDEN));
        }
        let revoked_now = self.after_write(
            self.repo
                .api_key_revoke(
                    org,
                    &key_id,
                    self.now(),
                    &self.event_stamp(EventType::ApiKeyRevoked, By::changing(actor)),
                )
                .await,
        )?;
        self.keys.forget(|k| k.key_id == key_id);
        let key = self
            .repo
            .api_key_get(org, &key_id)
            .await?
            .ok_or_else(|| Error::not_found(NOT_FOUND))?;
        Ok(Outcome {
            data: key,
            message: if revoked_now {
                "API key revoked".to_owned()
            } else {
                "API key was already revoked".to_owned()
            },
        })
    }
}
