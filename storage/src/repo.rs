//! The repository traits of `voiceplane-core`, implemented once for every database SeaORM
//! speaks to.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Select, TransactionTrait,
};
use voiceplane_core::model::*;
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::*;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::*;
use crate::entity::*;

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

#[async_trait]
impl HealthRepository for SeaRepository {
    async fn ping(&self) -> Result<()> {
        self.db.ping().await.map_err(|e| {
            tracing::warn!(error = %e, "database ping failed");
            Error::Unavailable("the database is unavailable".to_owned())
        })
    }
}

#[async_trait]
impl OrganizationRepository for SeaRepository {
    async fn bootstrap(&self, r: &BootstrapRecords) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        organization::Entity::insert(organization::ActiveModel {
            organization_id: Set(r.organization.organization_id.clone()),
            name: Set(r.organization.name.clone()),
            created_at: Set(r.organization.created_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        if r.user_is_new {
            user::Entity::insert(user::ActiveModel {
                user_id: Set(r.user.user_id.clone()),
                email: Set(r.user.email.clone()),
                name: Set(r.user.name.clone()),
                created_at: Set(r.user.created_at.as_micros()),
                last_login: Set(r.user.last_login.map(Timestamp::as_micros)),
            })
            .exec_without_returning(&txn)
            .await
            .map_err(|e| {
                db_err_unique(e, || {
                    format!("a user with e-mail {} already exists", r.user.email)
                })
            })?;
        }
        membership::Entity::insert(membership::ActiveModel {
            membership_id: Set(r.membership.membership_id.clone()),
            organization_id: Set(r.membership.organization_id.clone()),
            user_id: Set(r.membership.user_id.clone()),
            role: Set(r.membership.role.as_str().to_owned()),
            status: Set(enum_str(&r.membership.status)),
            created_at: Set(r.membership.created_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        api_key::Entity::insert(api_key_row(&r.api_key, &r.secret_hash))
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        txn.commit().await.map_err(db_err)
    }

    async fn user_find_by_email(&self, email: &str) -> Result<Option<User>> {
        Ok(user::Entity::find()
            .filter(user::Column::Email.eq(email))
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(user_from))
    }

    async fn membership_find(
        &self,
        organization_id: &str,
        user_id: &str,
    ) -> Result<Option<Membership>> {
        one(
            &self.db,
            membership::Entity::find()
                .filter(membership::Column::OrganizationId.eq(organization_id))
                .filter(membership::Column::UserId.eq(user_id)),
            membership_from,
        )
        .await
    }

    async fn member_list(&self, organization_id: &str) -> Result<Vec<Member>> {
        let rows = membership::Entity::find()
            .filter(membership::Column::OrganizationId.eq(organization_id))
            .find_also_related(user::Entity)
            .order_by_asc(membership::Column::CreatedAt)
            .order_by_asc(membership::Column::MembershipId)
            .all(&self.db)
            .await
            .map_err(db_err)?;
        rows.into_iter()
            .map(|(m, u)| {
                let u = u.ok_or_else(|| {
                    Error::Internal(format!("membership {} has no user", m.membership_id))
                })?;
                let m = membership_from(m)?;
                Ok(Member {
                    membership_id: m.membership_id,
                    user_id: m.user_id,
                    email: u.email,
                    name: u.name,
                    role: m.role,
                    status: m.status,
                    joined_at: m.created_at,
                    last_login: ts_opt(u.last_login),
                })
            })
            .collect()
    }

    async fn invitation_insert(&self, inv: &Invitation, now: Timestamp) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // A pending invitation past its expiry no longer blocks a new one.
        invitation::Entity::update_many()
            .col_expr(invitation::Column::Status, Expr::val("expired"))
            .filter(invitation::Column::OrganizationId.eq(&inv.client_id))
            .filter(invitation::Column::Email.eq(&inv.email))
            .filter(invitation::Column::Status.eq("pending"))
            .filter(invitation::Column::ExpiresAt.lte(now.as_micros()))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        invitation::Entity::insert(invitation::ActiveModel {
            invite_id: Set(inv.invite_id.clone()),
            organization_id: Set(inv.client_id.clone()),
            email: Set(inv.email.clone()),
            role: Set(inv.role.as_str().to_owned()),
            invited_by: Set(inv.invited_by.clone()),
            status: Set(enum_str(&inv.status)),
            created_at: Set(inv.created_at.as_micros()),
            expires_at: Set(inv.expires_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(|e| {
            db_err_unique(e, || {
                format!("a pending invitation for {} already exists", inv.email)
            })
        })?;
        txn.commit().await.map_err(db_err)
    }

    async fn invitation_list_pending(
        &self,
        organization_id: &str,
        now: Timestamp,
    ) -> Result<Vec<Invitation>> {
        all(
            &self.db,
            invitation::Entity::find()
                .filter(invitation::Column::OrganizationId.eq(organization_id))
                .filter(invitation::Column::Status.eq("pending"))
                .filter(invitation::Column::ExpiresAt.gt(now.as_micros()))
                .order_by_desc(invitation::Column::CreatedAt)
                .order_by_desc(invitation::Column::InviteId),
            invitation_from,
        )
        .await
    }
}

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
}

#[async_trait]
impl CallRepository for SeaRepository {
    async fn call_insert(&self, call: &Call) -> Result<()> {
        call::Entity::insert(call_row(call))
            .exec_without_returning(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn call_get(&self, organization_id: &str, call_sid: &str) -> Result<Option<Call>> {
        one(
            &self.db,
            call::Entity::find_by_id(call_sid.to_owned())
                .filter(call::Column::OrganizationId.eq(organization_id)),
            call_from,
        )
        .await
    }

    async fn call_update(&self, c: &Call) -> Result<()> {
        call::Entity::update_many()
            .col_expr(call::Column::Status, Expr::val(c.status.as_str()))
            .col_expr(call::Column::EndReason, Expr::val(c.end_reason.clone()))
            .col_expr(
                call::Column::BillingStatus,
                Expr::val(c.billing_status.clone()),
            )
            .col_expr(
                call::Column::StartTime,
                Expr::val(c.start_time.map(Timestamp::as_micros)),
            )
            .col_expr(
                call::Column::EndTime,
                Expr::val(c.end_time.map(Timestamp::as_micros)),
            )
            .col_expr(call::Column::DurationSeconds, Expr::val(c.duration_seconds))
            .col_expr(call::Column::TotalCost, Expr::val(c.total_cost))
            .col_expr(call::Column::TurnCount, Expr::val(c.turn_count))
            .col_expr(call::Column::UpdatedAt, Expr::val(c.updated_at.as_micros()))
            .filter(call::Column::CallSid.eq(&c.call_sid))
            .filter(call::Column::OrganizationId.eq(&c.client_id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn call_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Call>> {
        let select = call::Entity::find().filter(call::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(select, call::Column::CreatedAt, call::Column::CallSid, page),
            call_from,
        )
        .await
    }
}

#[async_trait]
impl ToolRepository for SeaRepository {
    async fn tool_insert(&self, t: &Tool) -> Result<()> {
        tool::Entity::insert(tool::ActiveModel {
            tool_id: Set(t.tool_id.clone()),
            organization_id: Set(t.client_id.clone()),
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
        .exec_without_returning(&self.db)
        .await
        .map_err(|e| db_err_unique(e, || format!("a tool named {} already exists", t.tool_name)))?;
        Ok(())
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

    async fn tool_ids_existing(
        &self,
        organization_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>> {
        let select = tool::Entity::find().filter(tool::Column::OrganizationId.eq(organization_id));
        existing_ids(&self.db, select, tool::Column::ToolId, ids).await
    }
}

#[async_trait]
impl DocumentRepository for SeaRepository {
    async fn document_insert(&self, d: &Document, text: Option<&str>) -> Result<()> {
        document::Entity::insert(document::ActiveModel {
            documentation_id: Set(d.documentation_id.clone()),
            organization_id: Set(d.client_id.clone()),
            name: Set(d.name.clone()),
            doc_type: Set(enum_str(&d.doc_type)),
            storage_key: Set(d.storage_key.clone()),
            storage_uri: Set(d.storage_uri.clone()),
            content_type: Set(d.content_type.clone()),
            size: Set(d.size),
            filename: Set(d.filename.clone()),
            processing_status: Set(enum_str(&d.processing_status)),
            page_count: Set(d.page_count),
            vector_count: Set(d.vector_count),
            last_processed_at: Set(d.last_processed_at.map(Timestamp::as_micros)),
            text_content: Set(text.map(str::to_owned)),
            created_at: Set(d.created_at.as_micros()),
            updated_at: Set(d.updated_at.as_micros()),
        })
        .exec_without_returning(&self.db)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn document_get(&self, organization_id: &str, id: &str) -> Result<Option<Document>> {
        one(
            &self.db,
            document::Entity::find_by_id(id.to_owned())
                .filter(document::Column::OrganizationId.eq(organization_id)),
            document_from,
        )
        .await
    }

    async fn document_ids_existing(
        &self,
        organization_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>> {
        let select =
            document::Entity::find().filter(document::Column::OrganizationId.eq(organization_id));
        existing_ids(&self.db, select, document::Column::DocumentationId, ids).await
    }
}

#[async_trait]
impl AgentRepository for SeaRepository {
    async fn agent_insert(&self, a: &Agent) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        agent::Entity::insert(agent::ActiveModel {
            agent_id: Set(a.agent_id.clone()),
            organization_id: Set(a.client_id.clone()),
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
            created_at: Set(a.created_at.as_micros()),
            updated_at: Set(a.updated_at.as_micros()),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(db_err)?;
        if !a.assigned_phone_number_ids.is_empty() {
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
                .filter(phone_number::Column::OrganizationId.eq(&a.client_id))
                .filter(
                    phone_number::Column::PhoneNumberId
                        .is_in(a.assigned_phone_number_ids.iter().cloned()),
                )
                .exec(&txn)
                .await
                .map_err(db_err)?;
        }
        txn.commit().await.map_err(db_err)
    }

    async fn agent_get(&self, organization_id: &str, agent_id: &str) -> Result<Option<Agent>> {
        let mut rows = agent::Entity::find_by_id(agent_id.to_owned())
            .filter(agent::Column::OrganizationId.eq(organization_id))
            .find_with_related(phone_number::Entity)
            .all(&self.db)
            .await
            .map_err(db_err)?;
        rows.pop()
            .map(|(a, numbers)| agent_from(a, numbers))
            .transpose()
    }
}

#[async_trait]
impl PhoneNumberRepository for SeaRepository {
    async fn phone_number_insert(&self, n: &PhoneNumber) -> Result<()> {
        phone_number::Entity::insert(phone_number::ActiveModel {
            phone_number_id: Set(n.phone_number_id.clone()),
            organization_id: Set(n.client_id.clone()),
            phone_number: Set(n.phone_number.clone()),
            provider: Set(n.provider.clone()),
            status: Set(enum_str(&n.status)),
            supports_inbound: Set(n.supports_inbound),
            supports_outbound: Set(n.supports_outbound),
            assigned_agent_id: Set(n.assigned_agent_id.clone()),
            integration_id: Set(n.integration_id.clone()),
            created_at: Set(n.created_at.as_micros()),
            updated_at: Set(n.updated_at.as_micros()),
        })
        .exec_without_returning(&self.db)
        .await
        .map_err(|e| {
            db_err_unique(e, || {
                format!(
                    "phone number {} already exists in this organization",
                    n.phone_number
                )
            })
        })?;
        Ok(())
    }

    async fn phone_number_get(
        &self,
        organization_id: &str,
        id: &str,
    ) -> Result<Option<PhoneNumber>> {
        one(
            &self.db,
            phone_number::Entity::find_by_id(id.to_owned())
                .filter(phone_number::Column::OrganizationId.eq(organization_id)),
            phone_number_from,
        )
        .await
    }

    async fn phone_number_ids_existing(
        &self,
        organization_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>> {
        let select = phone_number::Entity::find()
            .filter(phone_number::Column::OrganizationId.eq(organization_id));
        existing_ids(&self.db, select, phone_number::Column::PhoneNumberId, ids).await
    }
}

#[async_trait]
impl IntegrationRepository for SeaRepository {
    async fn integration_get(
        &self,
        organization_id: &str,
        id: &str,
    ) -> Result<Option<Integration>> {
        one(
            &self.db,
            integration::Entity::find_by_id(id.to_owned())
                .filter(integration::Column::OrganizationId.eq(organization_id)),
            integration_from,
        )
        .await
    }
}
