//! Tools.

use async_trait::async_trait;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QuerySelect, TransactionTrait,
};
use voiceplane_core::Result;
use voiceplane_core::model::{Event, EventStamp, Tool};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{Change, ToolRepository};

use super::{agents, all, keyset, lock_org, one, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, db_err_unique, from_json, to_json, ts};
use crate::entity::tool;

fn tool_from(m: tool::Model) -> Result<Tool> {
    Ok(Tool {
        headers: from_json("tools.headers", &m.headers)?,
        parameters: from_json("tools.parameters", &m.parameters)?,
        tool_id: m.tool_id,
        organization_id: m.organization_id,
        tool_name: m.tool_name,
        tool_description: m.tool_description,
        http_method: m.http_method,
        url: m.url,
        timeout_seconds: m.timeout_seconds,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn tool_row(t: &Tool) -> Result<tool::ActiveModel> {
    Ok(tool::ActiveModel {
        tool_id: Set(t.tool_id.clone()),
        organization_id: Set(t.organization_id.clone()),
        tool_name: Set(t.tool_name.clone()),
        tool_description: Set(t.tool_description.clone()),
        http_method: Set(t.http_method.clone()),
        url: Set(t.url.clone()),
        headers: Set(to_json(&t.headers)?),
        parameters: Set(to_json(&t.parameters)?),
        timeout_seconds: Set(t.timeout_seconds),
        created_at: Set(t.created_at.as_micros()),
        updated_at: Set(t.updated_at.as_micros()),
    })
}

fn duplicate_name(t: &Tool) -> impl FnOnce() -> String + '_ {
    || format!("a tool named {} already exists", t.tool_name)
}

#[async_trait]
impl ToolRepository for SeaRepository {
    async fn tool_insert(&self, t: &Tool, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        tool::Entity::insert(tool_row(t)?)
            .exec_without_returning(&txn)
            .await
            .map_err(|e| db_err_unique(e, duplicate_name(t)))?;
        record_event(&txn, &t.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn tool_get(&self, organization_id: &str, tool_id: &str) -> Result<Option<Tool>> {
        one(
            &self.db,
            tool::Entity::find_by_id(tool_id.to_owned())
                .filter(tool::Column::OrganizationId.eq(organization_id)),
            tool_from,
        )
        .await
    }

    async fn tool_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Tool>> {
        let select = tool::Entity::find().filter(tool::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(select, tool::Column::CreatedAt, tool::Column::ToolId, page),
            tool_from,
        )
        .await
    }

    async fn tool_count(&self, organization_id: &str) -> Result<u64> {
        use sea_orm::PaginatorTrait;
        tool::Entity::find()
            .filter(tool::Column::OrganizationId.eq(organization_id))
            .count(&self.db)
            .await
            .map_err(db_err)
    }

    async fn tool_update(
        &self,
        organization_id: &str,
        tool_id: &str,
        change: Change<'_, Tool>,
        event: &EventStamp,
    ) -> Result<Option<Tool>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = one(
            &txn,
            tool::Entity::find_by_id(tool_id.to_owned())
                .filter(tool::Column::OrganizationId.eq(organization_id))
                .lock_exclusive(),
            tool_from,
        )
        .await?
        else {
            return Ok(None);
        };
        let t = event.change(&before, change)?;
        tool::Entity::update_many()
            .set(tool_row(&t)?)
            .filter(tool::Column::ToolId.eq(&t.tool_id))
            .filter(tool::Column::OrganizationId.eq(&t.organization_id))
            .exec(&txn)
            .await
            .map_err(|e| db_err_unique(e, duplicate_name(&t)))?;
        record_event(&txn, organization_id, &event.updated(&before, &t)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(t))
    }

    async fn tool_delete(
        &self,
        organization_id: &str,
        tool_id: &str,
        event: &EventStamp,
    ) -> Result<Option<Tool>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let Some(tool) = one(
            &txn,
            tool::Entity::find_by_id(tool_id.to_owned())
                .filter(tool::Column::OrganizationId.eq(organization_id)),
            tool_from,
        )
        .await?
        else {
            return Ok(None);
        };
        tool::Entity::delete_by_id(tool_id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        agents::remove_reference(&txn, organization_id, agents::Refs::Tools, tool_id).await?;
        record_event(&txn, organization_id, &event.with(&tool)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(tool))
    }
}
