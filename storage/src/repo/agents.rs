//! Agents. The numbers assigned to an agent are stored once, on the numbers, and read back
//! with the agent; tool and document references are id lists on the agent row, kept free of
//! dangling ids by checking and cleaning them under the organization lock.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait, TransactionTrait,
};
use voiceplane_core::model::{
    Agent, AgentVersion, DeploymentEntry, Event, EventStamp, PhoneNumberStatus,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{AgentRepository, Change};
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::{all, keyset, lock_org, one, record_event, require_existing};
use crate::SeaRepository;
use crate::convert::{db_err, enum_str, from_json, parse_enum, to_json, ts};
use crate::direct;
use crate::entity::{agent, agent_version, document, phone_number, tool};

fn agent_from(m: agent::Model, mut numbers: Vec<phone_number::Model>) -> Result<Agent> {
    numbers.sort_by(|a, b| {
        (a.created_at, &a.phone_number_id).cmp(&(b.created_at, &b.phone_number_id))
    });
    Ok(Agent {
        tts_provider: parse_enum("agents.tts_provider", &m.tts_provider)?,
        custom_tools: from_json("agents.custom_tools", &m.custom_tools)?,
        kb_document_ids: from_json("agents.kb_document_ids", &m.kb_document_ids)?,
        assigned_phone_number_ids: numbers.into_iter().map(|n| n.phone_number_id).collect(),
        agent_id: m.agent_id,
        organization_id: m.organization_id,
        agent_name: m.agent_name,
        language: m.language,
        stt_provider: m.stt_provider,
        tts_voice: m.tts_voice,
        llm_provider: m.llm_provider,
        llm_model: m.llm_model,
        system_prompt: m.system_prompt,
        speak_first: m.speak_first,
        end_call_tool: m.end_call_tool,
        llm_temperature: m.llm_temperature,
        recording_enabled: m.recording_enabled,
        voicemail_detection: m.voicemail_detection,
        voicemail_response_delay: m.voicemail_response_delay,
        runtime_stream_url: m.runtime_stream_url,
        analysis: m
            .analysis
            .as_deref()
            .map(|a| from_json("agents.analysis", a))
            .transpose()?,
        analysis_key: m.analysis_key,
        published_version: m.published_version,
        deployment: m
            .deployment
            .as_deref()
            .map(|d| from_json("agents.deployment", d))
            .transpose()?
            .unwrap_or_default(),
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

/// The id lists an agent row holds.
#[derive(Debug, Clone, Copy)]
pub(super) enum Refs {
    /// `custom_tools`
    Tools,
    /// `kb_document_ids`
    Documents,
}

impl Refs {
    fn column(self) -> agent::Column {
        match self {
            Self::Tools => agent::Column::CustomTools,
            Self::Documents => agent::Column::KbDocumentIds,
        }
    }
}

/// Removes `id` from the `refs` list of every agent of the organization that holds it. Runs
/// inside the deleting transaction.
pub(super) async fn remove_reference<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    refs: Refs,
    id: &str,
) -> Result<()> {
    let column = refs.column();
    // Ids are `[a-z0-9_]`, so the quoted id cannot hold LIKE wildcards of its own (`_` matches
    // itself too); the exact check happens on the parsed list below.
    let holders = agent::Entity::find()
        .filter(agent::Column::OrganizationId.eq(organization_id))
        .filter(column.like(format!("%\"{id}\"%")))
        .all(db)
        .await
        .map_err(db_err)?;
    for holder in holders {
        let text = match refs {
            Refs::Tools => &holder.custom_tools,
            Refs::Documents => &holder.kb_document_ids,
        };
        let mut ids: Vec<String> = from_json("agents id list", text)?;
        let before = ids.len();
        ids.retain(|x| x != id);
        if ids.len() != before {
            agent::Entity::update_many()
                .col_expr(column, Expr::val(to_json(&ids)?))
                .filter(agent::Column::AgentId.eq(&holder.agent_id))
                .exec(db)
                .await
                .map_err(db_err)?;
        }
    }
    Ok(())
}

fn agent_row(a: &Agent) -> Result<agent::ActiveModel> {
    Ok(agent::ActiveModel {
        agent_id: Set(a.agent_id.clone()),
        organization_id: Set(a.organization_id.clone()),
        agent_name: Set(a.agent_name.clone()),
        language: Set(a.language.clone()),
        stt_provider: Set(a.stt_provider.clone()),
        tts_provider: Set(enum_str(&a.tts_provider)),
        tts_voice: Set(a.tts_voice.clone()),
        llm_provider: Set(a.llm_provider.clone()),
        llm_model: Set(a.llm_model.clone()),
        system_prompt: Set(a.system_prompt.clone()),
        speak_first: Set(a.speak_first),
        end_call_tool: Set(a.end_call_tool),
        llm_temperature: Set(a.llm_temperature),
        recording_enabled: Set(a.recording_enabled),
        voicemail_detection: Set(a.voicemail_detection),
        voicemail_response_delay: Set(a.voicemail_response_delay),
        custom_tools: Set(to_json(&a.custom_tools)?),
        kb_document_ids: Set(to_json(&a.kb_document_ids)?),
        runtime_stream_url: Set(a.runtime_stream_url.clone()),
        analysis: Set(a.analysis.as_ref().map(to_json).transpose()?),
        analysis_key: Set(a.analysis_key.clone()),
        published_version: Set(a.published_version),
        deployment: Set(if a.deployment.is_empty() {
            None
        } else {
            Some(to_json(&a.deployment)?)
        }),
        created_at: Set(a.created_at.as_micros()),
        updated_at: Set(a.updated_at.as_micros()),
    })
}

/// Checks, inside the writing transaction, that every id the agent references exists in its
/// organization.
async fn check_references<C: ConnectionTrait>(db: &C, a: &Agent) -> Result<()> {
    let org = a.organization_id.as_str();
    require_existing(
        db,
        tool::Entity::find().filter(tool::Column::OrganizationId.eq(org)),
        tool::Column::ToolId,
        &a.custom_tools,
        "custom_tools",
    )
    .await?;
    require_existing(
        db,
        document::Entity::find().filter(document::Column::OrganizationId.eq(org)),
        document::Column::DocumentationId,
        &a.kb_document_ids,
        "kb_document_ids",
    )
    .await?;
    require_existing(
        db,
        phone_number::Entity::find().filter(phone_number::Column::OrganizationId.eq(org)),
        phone_number::Column::PhoneNumberId,
        &a.assigned_phone_number_ids,
        "assigned_phone_number_ids",
    )
    .await
}

/// Points the listed numbers at the agent (taking them from any other agent).
async fn assign_numbers<C: ConnectionTrait>(db: &C, a: &Agent) -> Result<()> {
    if a.assigned_phone_number_ids.is_empty() {
        return Ok(());
    }
    phone_number::Entity::update_many()
        .col_expr(
            phone_number::Column::AssignedAgentId,
            Expr::val(a.agent_id.clone()),
        )
        .col_expr(
            phone_number::Column::Status,
            Expr::val(enum_str(&PhoneNumberStatus::Assigned)),
        )
        .col_expr(
            phone_number::Column::UpdatedAt,
            Expr::val(a.updated_at.as_micros()),
        )
        .filter(phone_number::Column::OrganizationId.eq(&a.organization_id))
        .filter(
            phone_number::Column::PhoneNumberId.is_in(a.assigned_phone_number_ids.iter().cloned()),
        )
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Unassigns the agent's numbers except those in `keep`.
async fn unassign_numbers<C: ConnectionTrait>(
    db: &C,
    agent_id: &str,
    keep: &[String],
    now: i64,
) -> Result<()> {
    let mut update = phone_number::Entity::update_many()
        .col_expr(
            phone_number::Column::AssignedAgentId,
            Expr::val(Option::<String>::None),
        )
        .col_expr(
            phone_number::Column::Status,
            Expr::val(enum_str(&PhoneNumberStatus::Unassigned)),
        )
        .col_expr(phone_number::Column::UpdatedAt, Expr::val(now))
        .filter(phone_number::Column::AssignedAgentId.eq(agent_id));
    if !keep.is_empty() {
        update = update.filter(phone_number::Column::PhoneNumberId.is_not_in(keep.iter().cloned()));
    }
    update.exec(db).await.map_err(db_err)?;
    Ok(())
}

async fn get<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    agent_id: &str,
) -> Result<Option<Agent>> {
    let mut rows = agent::Entity::find_by_id(agent_id.to_owned())
        .filter(agent::Column::OrganizationId.eq(organization_id))
        .find_with_related(phone_number::Entity)
        .all(db)
        .await
        .map_err(db_err)?;
    rows.pop()
        .map(|(a, numbers)| agent_from(a, numbers))
        .transpose()
}

fn version_from(m: agent_version::Model) -> Result<AgentVersion> {
    Ok(AgentVersion {
        config: from_json("agent_versions.config", &m.config)?,
        agent_id: m.agent_id,
        version: m.version,
        description: m.description,
        published_at: ts(m.published_at),
    })
}

fn versions_of(organization_id: &str, agent_id: &str) -> sea_orm::Select<agent_version::Entity> {
    agent_version::Entity::find()
        .filter(agent_version::Column::AgentId.eq(agent_id))
        .filter(agent_version::Column::OrganizationId.eq(organization_id))
}

#[async_trait]
impl AgentRepository for SeaRepository {
    async fn agent_insert(&self, a: &Agent, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, &a.organization_id).await?;
        check_references(&txn, a).await?;
        agent::Entity::insert(agent_row(a)?)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        assign_numbers(&txn, a).await?;
        record_event(&txn, &a.organization_id, event).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(())
    }

    async fn agent_get(&self, organization_id: &str, agent_id: &str) -> Result<Option<Agent>> {
        let Some(direct) = self.direct() else {
            return get(&self.db, organization_id, agent_id).await;
        };
        let agent = agent::Entity::find_by_id(agent_id.to_owned())
            .filter(agent::Column::OrganizationId.eq(organization_id))
            .build(DbBackend::Sqlite);
        let numbers = phone_number::Entity::find()
            .filter(phone_number::Column::AssignedAgentId.eq(agent_id))
            .build(DbBackend::Sqlite);
        // Both statements in one hand-off to a reader thread.
        let read = direct
            .run(move |reads| {
                let Some(agent) = reads.one(&agent, &direct::AGENT)? else {
                    return Ok(None);
                };
                Ok(Some((agent, reads.all(&numbers, &direct::PHONE_NUMBER)?)))
            })
            .await?;
        read.map(|(agent, numbers)| agent_from(agent, numbers))
            .transpose()
    }

    async fn agent_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Agent>> {
        let select =
            agent::Entity::find().filter(agent::Column::OrganizationId.eq(organization_id));
        let agents = keyset(
            select,
            agent::Column::CreatedAt,
            agent::Column::AgentId,
            page,
        )
        .all(&self.db)
        .await
        .map_err(db_err)?;
        if agents.is_empty() {
            return Ok(Vec::new());
        }
        // One more indexed query for the whole page's numbers, not one per agent.
        let numbers = phone_number::Entity::find()
            .filter(
                phone_number::Column::AssignedAgentId
                    .is_in(agents.iter().map(|a| a.agent_id.clone())),
            )
            .all(&self.db)
            .await
            .map_err(db_err)?;
        agents
            .into_iter()
            .map(|a| {
                let mine = numbers
                    .iter()
                    .filter(|n| n.assigned_agent_id.as_deref() == Some(a.agent_id.as_str()))
                    .cloned()
                    .collect();
                agent_from(a, mine)
            })
            .collect()
    }

    async fn agent_update(
        &self,
        organization_id: &str,
        agent_id: &str,
        change: Change<'_, Agent>,
        event: &EventStamp,
    ) -> Result<Option<Agent>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // The organization lock keeps the references checked below from being deleted before
        // the commit, and orders this write after any other of the organization in flight.
        lock_org(&txn, organization_id).await?;
        let Some(before) = get(&txn, organization_id, agent_id).await? else {
            return Ok(None);
        };
        let a = event.change(&before, change)?;
        check_references(&txn, &a).await?;
        let mut row = agent_row(&a)?;
        row.created_at = sea_orm::ActiveValue::NotSet;
        agent::Entity::update_many()
            .set(row)
            .filter(agent::Column::AgentId.eq(&a.agent_id))
            .filter(agent::Column::OrganizationId.eq(&a.organization_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        unassign_numbers(
            &txn,
            &a.agent_id,
            &a.assigned_phone_number_ids,
            a.updated_at.as_micros(),
        )
        .await?;
        assign_numbers(&txn, &a).await?;
        // The agent as the write left it, numbers in the order a read returns them.
        let updated = get(&txn, organization_id, agent_id)
            .await?
            .ok_or_else(|| Error::Internal("an updated agent vanished".into()))?;
        record_event(&txn, organization_id, &event.updated(&before, &updated)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(updated))
    }

    async fn agent_delete(
        &self,
        organization_id: &str,
        agent_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<Option<Agent>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let Some(agent) = get(&txn, organization_id, agent_id).await? else {
            return Ok(None);
        };
        unassign_numbers(&txn, agent_id, &[], now.as_micros()).await?;
        agent::Entity::delete_by_id(agent_id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        agent_version::Entity::delete_many()
            .filter(agent_version::Column::AgentId.eq(agent_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, organization_id, &event.with(&agent)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(agent))
    }

    async fn agent_publish(
        &self,
        organization_id: &str,
        agent_id: &str,
        description: Option<String>,
        event: &EventStamp,
    ) -> Result<Option<AgentVersion>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // Ordered with the agent's other writes (updates lock the organization too).
        lock_org(&txn, organization_id).await?;
        let Some(agent) = get(&txn, organization_id, agent_id).await? else {
            return Ok(None);
        };
        let config = agent.config();
        let latest = one(
            &txn,
            versions_of(organization_id, agent_id)
                .order_by_desc(agent_version::Column::Version)
                .limit(1),
            version_from,
        )
        .await?;
        if let Some(latest) = &latest
            && latest.config == config
        {
            return Err(Error::Conflict(format!(
                "agent {agent_id} has not changed since version {}; change it before \
                 publishing again",
                latest.version
            )));
        }
        let published = AgentVersion {
            agent_id: agent_id.to_owned(),
            version: latest.map_or(1, |l| l.version + 1),
            description,
            published_at: event.created_at,
            config,
        };
        agent_version::Entity::insert(agent_version::ActiveModel {
            agent_id: Set(published.agent_id.clone()),
            version: Set(published.version),
            organization_id: Set(organization_id.to_owned()),
            description: Set(published.description.clone()),
            published_at: Set(published.published_at.as_micros()),
            config: Set(to_json(&published.config)?),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        let deployment = [DeploymentEntry {
            version: published.version,
            weight: 100,
        }];
        agent::Entity::update_many()
            .col_expr(
                agent::Column::PublishedVersion,
                Expr::val(published.version),
            )
            .col_expr(agent::Column::Deployment, Expr::val(to_json(&deployment)?))
            .col_expr(
                agent::Column::UpdatedAt,
                Expr::val(event.created_at.max(agent.updated_at).as_micros()),
            )
            .filter(agent::Column::AgentId.eq(agent_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, organization_id, &event.with(&published)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(published))
    }

    async fn agent_version_list(
        &self,
        organization_id: &str,
        agent_id: &str,
        before: Option<i64>,
        limit: u64,
    ) -> Result<Vec<AgentVersion>> {
        let mut select = versions_of(organization_id, agent_id);
        if let Some(before) = before {
            select = select.filter(agent_version::Column::Version.lt(before));
        }
        all(
            &self.db,
            select
                .order_by_desc(agent_version::Column::Version)
                .limit(limit),
            version_from,
        )
        .await
    }

    async fn agent_version_get(
        &self,
        organization_id: &str,
        agent_id: &str,
        version: i64,
    ) -> Result<Option<AgentVersion>> {
        one(
            &self.db,
            versions_of(organization_id, agent_id)
                .filter(agent_version::Column::Version.eq(version)),
            version_from,
        )
        .await
    }
}
