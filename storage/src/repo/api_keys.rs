//! API keys.

use super::*;

#[async_trait]
impl ApiKeyRepository for SeaRepository {
    async fn api_key_insert(&self, key: &ApiKey, secret_hash: &str) -> Result<()> {
        api_key::Entity::insert(api_key_row(key, secret_hash))
            .exec_without_returning(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn api_key_find_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>> {
        one(
            &self.db,
            api_key::Entity::find().filter(api_key::Column::SecretHash.eq(secret_hash)),
            api_key_from,
        )
        .await
    }

    async fn api_key_touch(
        &self,
        key_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()> {
        api_key::Entity::update_many()
            .col_expr(api_key::Column::LastUsedAt, Expr::val(now.as_micros()))
            .filter(api_key::Column::KeyId.eq(key_id))
            .filter(
                api_key::Column::LastUsedAt
                    .is_null()
                    .or(api_key::Column::LastUsedAt.lt(not_before.as_micros())),
            )
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn api_key_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<ApiKey>> {
        let select =
            api_key::Entity::find().filter(api_key::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(
                select,
                api_key::Column::CreatedAt,
                api_key::Column::KeyId,
                page,
            ),
            api_key_from,
        )
        .await
    }

    async fn api_key_get(&self, organization_id: &str, key_id: &str) -> Result<Option<ApiKey>> {
        one(
            &self.db,
            api_key::Entity::find_by_id(key_id.to_owned())
                .filter(api_key::Column::OrganizationId.eq(organization_id)),
            api_key_from,
        )
        .await
    }

    async fn api_key_revoke(
        &self,
        organization_id: &str,
        key_id: &str,
        now: Timestamp,
    ) -> Result<bool> {
        // One conditional write: of any number of concurrent revocations exactly one matches.
        let result = api_key::Entity::update_many()
            .col_expr(
                api_key::Column::Status,
                Expr::val(enum_str(&ApiKeyStatus::Revoked)),
            )
            .col_expr(api_key::Column::RevokedAt, Expr::val(now.as_micros()))
            .filter(api_key::Column::KeyId.eq(key_id))
            .filter(api_key::Column::OrganizationId.eq(organization_id))
            .filter(api_key::Column::Status.eq(enum_str(&ApiKeyStatus::Active)))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(result.rows_affected == 1)
    }
}
