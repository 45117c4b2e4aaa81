//! The repository traits of `voiceplane-core`, implemented once for every database SeaORM
//! speaks to: row conversions and shared query helpers here, one module per area.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Select, TransactionTrait,
};
use voiceplane_core::model::*;
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::*;
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::*;
use crate::entity::*;

mod agents;
mod api_keys;
mod calls;
mod documents;
mod integrations;
mod organizations;
mod phone_numbers;
mod tools;

/// Restricts `select` to the page after `page.after`, newest first: the row-value comparison
/// `(created_at, id) < (?, ?)` is a range scan on the `(organization_id, created_at, id)`
/// index, so a deep page costs what the first one does.
fn keyset<E: EntityTrait>(
    select: Select<E>,
    created_at: E::Column,
    id: E::Column,
    page: &PageQuery,
) -> Select<E> {
    let select = match &page.after {
        Some(after) => select.filter(Expr::tuple([Expr::col(created_at), Expr::col(id)]).lt(
            Expr::tuple([
                Expr::val(after.created_at.as_micros()),
                Expr::val(after.id.clone()),
            ]),
        )),
        None => select,
    };
    select
        .order_by_desc(created_at)
        .order_by_desc(id)
        .limit(page.fetch())
}

fn api_key_from(m: api_key::Model) -> Result<ApiKey> {
    Ok(ApiKey {
        role: parse_enum("api_keys.role", &m.role)?,
        status: parse_enum("api_keys.status", &m.status)?,
        key_id: m.key_id,
        name: m.name,
        prefix: m.prefix,
        client_id: m.organization_id,
        user_id: m.user_id,
        created_at: ts(m.created_at),
        last_used_at: ts_opt(m.last_used_at),
        expires_at: ts_opt(m.expires_at),
    })
}

fn api_key_row(k: &ApiKey, secret_hash: &str) -> api_key::ActiveModel {
    api_key::ActiveModel {
        key_id: Set(k.key_id.clone()),
        organization_id: Set(k.client_id.clone()),
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
    }
}

fn call_from(m: call::Model) -> Result<Call> {
    Ok(Call {
        call_type: parse_enum("calls.call_type", &m.call_type)?,
        status: parse_enum("calls.status", &m.status)?,
        call_sid: m.call_sid,
        to_number: m.to_number,
        from_number: m.from_number,
        agent_id: m.agent_id,
        agent_name: m.agent_name,
        client_id: m.organization_id,
        recording_enabled: m.recording_enabled,
        total_cost: m.total_cost,
        duration_seconds: m.duration_seconds,
        turn_count: m.turn_count,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
        start_time: ts_opt(m.start_time),
        end_time: ts_opt(m.end_time),
        end_reason: m.end_reason,
        billing_status: m.billing_status,
        recording: match (m.recording_key, m.recording_content_type, m.recording_size) {
            (Some(key), Some(content_type), Some(size)) => Some(Recording {
                key,
                content_type,
                size,
            }),
            _ => None,
        },
    })
}

fn call_row(c: &Call) -> call::ActiveModel {
    call::ActiveModel {
        call_sid: Set(c.call_sid.clone()),
        organization_id: Set(c.client_id.clone()),
        agent_id: Set(c.agent_id.clone()),
        agent_name: Set(c.agent_name.clone()),
        to_number: Set(c.to_number.clone()),
        from_number: Set(c.from_number.clone()),
        call_type: Set(c.call_type.as_str().to_owned()),
        status: Set(c.status.as_str().to_owned()),
        recording_enabled: Set(c.recording_enabled),
        total_cost: Set(c.total_cost),
        duration_seconds: Set(c.duration_seconds),
        turn_count: Set(c.turn_count),
        start_time: Set(c.start_time.map(Timestamp::as_micros)),
        end_time: Set(c.end_time.map(Timestamp::as_micros)),
        end_reason: Set(c.end_reason.clone()),
        billing_status: Set(c.billing_status.clone()),
        created_at: Set(c.created_at.as_micros()),
        updated_at: Set(c.updated_at.as_micros()),
        recording_key: Set(c.recording.as_ref().map(|r| r.key.clone())),
        recording_content_type: Set(c.recording.as_ref().map(|r| r.content_type.clone())),
        recording_size: Set(c.recording.as_ref().map(|r| r.size)),
    }
}

fn tool_from(m: tool::Model) -> Result<Tool> {
    Ok(Tool {
        headers: from_json("tools.headers", &m.headers)?,
        parameters: from_json("tools.parameters", &m.parameters)?,
        tool_id: m.tool_id,
        client_id: m.organization_id,
        tool_name: m.tool_name,
        tool_description: m.tool_description,
        http_method: m.http_method,
        url: m.url,
        timeout_seconds: m.timeout_seconds,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn document_from(m: document::Model) -> Result<Document> {
    Ok(Document {
        doc_type: parse_enum("kb_documents.doc_type", &m.doc_type)?,
        processing_status: parse_enum("kb_documents.processing_status", &m.processing_status)?,
        documentation_id: m.documentation_id,
        name: m.name,
        client_id: m.organization_id,
        storage_key: m.storage_key,
        storage_uri: m.storage_uri,
        content_type: m.content_type,
        size: m.size,
        filename: m.filename,
        page_count: m.page_count,
        vector_count: m.vector_count,
        last_processed_at: ts_opt(m.last_processed_at),
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

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
        client_id: m.organization_id,
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
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn phone_number_from(m: phone_number::Model) -> Result<PhoneNumber> {
    Ok(PhoneNumber {
        status: parse_enum("phone_numbers.status", &m.status)?,
        phone_number_id: m.phone_number_id,
        phone_number: m.phone_number,
        client_id: m.organization_id,
        provider: m.provider,
        supports_inbound: m.supports_inbound,
        supports_outbound: m.supports_outbound,
        assigned_agent_id: m.assigned_agent_id,
        integration_id: m.integration_id,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn integration_from(m: integration::Model) -> Result<Integration> {
    Ok(Integration {
        status: parse_enum("integrations.status", &m.status)?,
        integration_id: m.integration_id,
        client_id: m.organization_id,
        name: m.name,
        provider: m.provider,
        category: m.category,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn invitation_from(m: invitation::Model) -> Result<Invitation> {
    Ok(Invitation {
        role: parse_enum("invitations.role", &m.role)?,
        status: parse_enum("invitations.status", &m.status)?,
        invite_id: m.invite_id,
        email: m.email,
        client_id: m.organization_id,
        invited_by: m.invited_by,
        created_at: ts(m.created_at),
        expires_at: ts(m.expires_at),
    })
}

fn user_from(m: user::Model) -> User {
    User {
        user_id: m.user_id,
        email: m.email,
        name: m.name,
        created_at: ts(m.created_at),
        last_login: ts_opt(m.last_login),
    }
}

fn membership_from(m: membership::Model) -> Result<Membership> {
    Ok(Membership {
        role: parse_enum("memberships.role", &m.role)?,
        status: parse_enum("memberships.status", &m.status)?,
        membership_id: m.membership_id,
        organization_id: m.organization_id,
        user_id: m.user_id,
        created_at: ts(m.created_at),
    })
}

/// The row `select` finds, converted; `None` when there is none.
async fn one<E, T, C>(
    db: &C,
    select: Select<E>,
    convert: impl FnOnce(E::Model) -> Result<T>,
) -> Result<Option<T>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    select
        .one(db)
        .await
        .map_err(db_err)?
        .map(convert)
        .transpose()
}

/// Every row `select` finds, converted.
async fn all<E, T, C>(
    db: &C,
    select: Select<E>,
    convert: impl FnMut(E::Model) -> Result<T>,
) -> Result<Vec<T>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    select
        .all(db)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(convert)
        .collect()
}

/// Ids among `ids` found by `select` (already filtered by organization) in column `col`.
async fn existing_ids<E, C>(
    db: &C,
    select: Select<E>,
    col: E::Column,
    ids: &[String],
) -> Result<Vec<String>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    select
        .select_only()
        .column(col)
        .filter(col.is_in(ids.iter().cloned()))
        .into_tuple::<String>()
        .all(db)
        .await
        .map_err(db_err)
}

/// Serializes writes that must see a stable view of an organization's rows (reference checks,
/// the last-admin rule, integration deletion): a no-op write of the organization row takes its
/// row lock on Postgres and the database write lock on SQLite, so concurrent such
/// transactions of one organization run one after the other.
async fn lock_org<C: ConnectionTrait>(db: &C, organization_id: &str) -> Result<()> {
    organization::Entity::update_many()
        .col_expr(
            organization::Column::Name,
            Expr::col(organization::Column::Name),
        )
        .filter(organization::Column::OrganizationId.eq(organization_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Fails with a 400 naming the ids of `ids` that `select` (filtered by organization) does not
/// find in `col`.
async fn require_existing<E, C>(
    db: &C,
    select: Select<E>,
    col: E::Column,
    ids: &[String],
    field: &str,
) -> Result<()>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    let found = existing_ids(db, select, col, ids).await?;
    let missing: Vec<&str> = ids
        .iter()
        .filter(|id| !found.contains(id))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{field}: {} not found in this organization",
            missing.join(", ")
        )))
    }
}
