//! API keys.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DbBackend, EntityTrait, QueryFilter, QuerySelect, QueryTrait,
    TransactionTrait,
};
use voiceplane_core::model::{ApiKey, ApiKeyStatus, Event, EventStamp};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::ApiKeyRepository;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::changes::ChangeFeed;
use super::{all, keyset, one, record_event, touch};
use crate::SeaRepository;
use crate::convert::{db_err, enum_str, from_json, parse_enum, to_json, ts, ts_opt};
use crate::direct;
use crate::entity::api_key;

fn api_key_from(m: api_key::Model) -> Result<ApiKey> {
    Ok(ApiKey {
        role: parse_enum("api_keys.role", &m.role)?,
        status: parse_enum("api_keys.status", &m.status)?,
        key_id: m.key_id,
        name: m.name,
        prefix: m.prefix,
        organization_id: m.organization_id,
        user_id: m.user_id,
        created_at: ts(m.created_at),
        last_used_at: ts_opt(m.last_used_at),
        expires_at: ts_opt(m.expires_at),
        scopes: m
            .scopes
            .as_deref()
            .map(|s| from_json("api_keys.scopes", s))
            .transpose()?,
    })
}

pub(super) fn api_key_row(k: &ApiKey, secret_hash: &str) -> Result<api_key::ActiveModel> {
    Ok(api_key::ActiveModel {
        key_id: Set(k.key_id.clone()),
        organization_id: Set(k.organization_id.clone()),
        user_id: Set(k.user_id.clone()),
        name: Set(k.name.clone()),
        role: Set(k.role.as_str().to_owned()),
        prefix: Set(k.prefix.clone()),
        secret_hash: Set(secret_hash.to_owned()),
        status: Set(enum_str(&k.status)),
        created_at: Set(k.created_at.as_micros()),
        last_used_at: Set(k.last_used_at.map(Timestamp::as_micros)),
        expires_at: Set(k.expires_at.map(Timestamp::as_micros)),
        revoked_at: Set(None),
        scopes: Set(k.scopes.as_ref().map(to_json).transpose()?),
    })
}

#[async_trait]
impl ApiKeyRepository for SeaRepository {
    async fn api_key_insert(&self, key: &ApiKey, secret_hash: &str, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        api_key::Entity::insert(api_key_row(key, secret_hash)?)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, &key.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn api_key_find_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>> {
        let select = api_key::Entity::find().filter(api_key::Column::SecretHash.eq(secret_hash));
        if let Some(direct) = self.direct() {
            let select = select.build(DbBackend::Sqlite);
            return direct
                .run(move |reads| reads.one(&select, &direct::API_KEY))
                .await?
                .map(api_key_from)
                .transpose();
        }
        one(&self.db, select, api_key_from).await
    }

    async fn api_key_touch(
        &self,
        key_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()> {
        touch::<api_key::Entity, _>(
            &self.db,
            api_key::Column::KeyId,
            key_id,
            api_key::Column::LastUsedAt,
            now,
            not_before,
        )
        .await
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
        event: &EventStamp,
    ) -> Result<bool> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            api_key::Entity::find_by_id(key_id.to_owned())
                .filter(api_key::Column::OrganizationId.eq(organization_id))
                .lock_exclusive(),
            api_key_from,
        )
        .await?
        else {
            return Ok(false);
        };
        event.preconditions.check(&before)?;
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
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if result.rows_affected != 1 {
            return Ok(false);
        }
        let key = one(
            &txn,
            api_key::Entity::find_by_id(key_id.to_owned()),
            api_key_from,
        )
        .await?
        .ok_or_else(|| Error::Internal("revoked key vanished".to_owned()))?;
        record_event(&txn, organization_id, &event.updated(&before, &key)?).await?;
        let versions = ChangeFeed::raise_credentials(&txn).await?;
        txn.commit().await.map_err(db_err)?;
        self.changes.committed(versions).await;
        Ok(true)
    }
}
