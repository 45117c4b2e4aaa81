//! API keys: create, list.

use super::*;

impl Service {
    /// Creates an API key acting with `input.role`, which may not exceed the caller's role.
    pub async fn api_key_create(&self, actor: &Actor, input: NewApiKey) -> Result<CreatedApiKey> {
        actor.require(Permission::ApiKeysCreate)?;
        let name = validate::text("name", &input.name, 100)?;
        if input.role > actor.role {
            return Err(Error::forbidden(format!(
                "you cannot create a key with role `{}` above your own role `{}`",
                input.role, actor.role
            )));
        }
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
            client_id: actor.organization_id.clone(),
            user_id: actor.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: input.expires_at,
        };
        self.repo.api_key_insert(&key, &secret.hash()).await?;
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
}
