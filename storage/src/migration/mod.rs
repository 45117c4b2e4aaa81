//! Schema migrations, one code path for SQLite and Postgres. Kept apart from the entities
//! because the two preludes clash (`ColumnDef`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, boolean, double, double_null, integer, integer_null, string,
    string_null, text, text_null,
};

mod m0007_knowledge;
mod m0008_calls_as_data;
mod m0010_idempotency;
mod m0011_access;
mod m0012_credential_version;
mod m0013_change_version;
mod m0014_idempotency_answer;

/// Creates the full-text index of `table.text` in the database's own dialect: on SQLite an
/// external-content FTS5 table `<table>_fts` (rows referred to by the integer key `id`, kept in
/// step by insert and delete triggers, Porter stemming); on Postgres a generated `tsv` column
/// (English) under a GIN index `ix_<table>_tsv`. Both stem, so "refunds" finds "refund".
async fn create_full_text_index(m: &SchemaManager<'_>, table: &str, id: &str) -> Result<(), DbErr> {
    let statements = match m.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => vec![
            format!(
                "ALTER TABLE {table} ADD COLUMN tsv tsvector \
                 GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
            ),
            format!("CREATE INDEX ix_{table}_tsv ON {table} USING GIN (tsv)"),
        ],
        _ => vec![
            format!(
                "CREATE VIRTUAL TABLE {table}_fts USING fts5(text, content='{table}', \
                 content_rowid='{id}', tokenize='porter unicode61 remove_diacritics 2')"
            ),
            format!(
                "CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN \
                 INSERT INTO {table}_fts(rowid, text) VALUES (new.{id}, new.text); END"
            ),
            format!(
                "CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN \
                 INSERT INTO {table}_fts({table}_fts, rowid, text) \
                 VALUES ('delete', old.{id}, old.text); END"
            ),
        ],
    };
    for sql in statements {
        m.get_connection().execute_unprepared(&sql).await?;
    }
    Ok(())
}

/// The migrations of voiceplane, in order.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(M0001Initial),
            Box::new(M0002ApiKeyRevokedAt),
            Box::new(M0003CallRecording),
            Box::new(M0004Events),
            Box::new(M0005Jobs),
            Box::new(M0006Webhooks),
            Box::new(m0007_knowledge::M0007Knowledge),
            Box::new(m0008_calls_as_data::M0008CallsAsData),
            Box::new(m0010_idempotency::M0010Idempotency),
            Box::new(m0011_access::M0011Access),
            Box::new(m0012_credential_version::M0012CredentialVersion),
            Box::new(m0013_change_version::M0013ChangeVersion),
            Box::new(m0014_idempotency_answer::M0014IdempotencyAnswer),
        ]
    }
}

pub(super) fn pk(col: &'static str) -> ColumnDef {
    string(col).primary_key().take()
}

/// A foreign key to `organizations`, cascading deletes: an organization owns its rows.
pub(super) fn org_fk(table: &'static str) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(format!("fk_{table}_organization"))
        .from(table, "organization_id")
        .to("organizations", "organization_id")
        .on_delete(ForeignKeyAction::Cascade)
        .take()
}

/// A foreign key to `users`, cascading deletes: a user's memberships and keys go with them.
fn user_fk(table: &'static str) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(format!("fk_{table}_user"))
        .from(table, "user_id")
        .to("users", "user_id")
        .on_delete(ForeignKeyAction::Cascade)
        .take()
}

/// The keyset index every list of `table` scans: `(organization_id, created_at, id)`.
pub(super) fn keyset_index(table: &'static str, id: &'static str) -> IndexCreateStatement {
    Index::create()
        .name(format!("ix_{table}_keyset"))
        .table(table)
        .col("organization_id")
        .col("created_at")
        .col(id)
        .take()
}

struct M0001Initial;

impl MigrationName for M0001Initial {
    fn name(&self) -> &str {
        "m0001_initial"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0001Initial {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("organizations")
                .col(pk("organization_id"))
                .col(string("name"))
                .col(big_integer("created_at"))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table("users")
                .col(pk("user_id"))
                .col(string("email").unique_key())
                .col(string_null("name"))
                .col(big_integer("created_at"))
                .col(big_integer_null("last_login"))
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table("memberships")
                .col(pk("membership_id"))
                .col(string("organization_id"))
                .col(string("user_id"))
                .col(string("role"))
                .col(string("status"))
                .col(big_integer("created_at"))
                .foreign_key(&mut org_fk("memberships"))
                .foreign_key(&mut user_fk("memberships"))
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_memberships_org_user")
                .table("memberships")
                .col("organization_id")
                .col("user_id")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_memberships_user")
                .table("memberships")
                .col("user_id")
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table("api_keys")
                .col(pk("key_id"))
                .col(string("organization_id"))
                .col(string("user_id"))
                .col(string("name"))
                .col(string("role"))
                .col(string("prefix"))
                .col(string("secret_hash"))
                .col(string("status"))
                .col(big_integer("created_at"))
                .col(big_integer_null("last_used_at"))
                .col(big_integer_null("expires_at"))
                .foreign_key(&mut org_fk("api_keys"))
                .foreign_key(&mut user_fk("api_keys"))
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ux_api_keys_secret_hash")
                .table("api_keys")
                .col("secret_hash")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(keyset_index("api_keys", "key_id")).await?;

        m.create_table(
            Table::create()
                .table("agents")
                .col(pk("agent_id"))
                .col(string("organization_id"))
                .col(string("agent_name"))
                .col(string("language"))
                .col(string("stt_provider"))
                .col(string("tts_provider"))
                .col(string("tts_voice"))
                .col(string("llm_provider"))
                .col(string("llm_model"))
                .col(text("system_prompt"))
                .col(boolean("speak_first"))
                .col(boolean("end_call_tool"))
                .col(double("llm_temperature"))
                .col(boolean("recording_enabled"))
                .col(boolean("voicemail_detection"))
                .col(double("voicemail_response_delay"))
                .col(text("custom_tools"))
                .col(text("kb_document_ids"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("agents"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("agents", "agent_id")).await?;

        m.create_table(
            Table::create()
                .table("calls")
                .col(pk("call_sid"))
                .col(string("organization_id"))
                .col(string("agent_id"))
                .col(string_null("agent_name"))
                .col(string("to_number"))
                .col(string_null("from_number"))
                .col(string("call_type"))
                .col(string("status"))
                .col(boolean("recording_enabled"))
                .col(double("total_cost"))
                .col(double_null("duration_seconds"))
                .col(big_integer("turn_count"))
                .col(big_integer_null("start_time"))
                .col(big_integer_null("end_time"))
                .col(string_null("end_reason"))
                .col(string_null("billing_status"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("calls"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("calls", "call_sid")).await?;

        m.create_table(
            Table::create()
                .table("tools")
                .col(pk("tool_id"))
                .col(string("organization_id"))
                .col(string("tool_name"))
                .col(text("tool_description"))
                .col(string("http_method"))
                .col(text("url"))
                .col(text("headers"))
                .col(text("parameters"))
                .col(integer("timeout_seconds"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("tools"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("tools", "tool_id")).await?;
        m.create_index(
            Index::create()
                .name("ux_tools_org_name")
                .table("tools")
                .col("organization_id")
                .col("tool_name")
                .unique()
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table("kb_documents")
                .col(pk("documentation_id"))
                .col(string("organization_id"))
                .col(string("name"))
                .col(string("doc_type"))
                .col(text_null("storage_key"))
                .col(text_null("storage_uri"))
                .col(string("content_type"))
                .col(big_integer("size"))
                .col(string_null("filename"))
                .col(string("processing_status"))
                .col(big_integer_null("page_count"))
                .col(big_integer_null("vector_count"))
                .col(big_integer_null("last_processed_at"))
                .col(text_null("text_content"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("kb_documents"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("kb_documents", "documentation_id"))
            .await?;

        m.create_table(
            Table::create()
                .table("integrations")
                .col(pk("integration_id"))
                .col(string("organization_id"))
                .col(string("name"))
                .col(string("provider"))
                .col(string("category"))
                .col(string("status"))
                .col(text("credentials_ciphertext"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("integrations"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("integrations", "integration_id"))
            .await?;

        m.create_table(
            Table::create()
                .table("phone_numbers")
                .col(pk("phone_number_id"))
                .col(string("organization_id"))
                .col(string("phone_number"))
                .col(string("provider"))
                .col(string("status"))
                .col(boolean("supports_inbound"))
                .col(boolean("supports_outbound"))
                .col(string_null("assigned_agent_id"))
                .col(string_null("integration_id"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("phone_numbers"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_phone_numbers_agent")
                        .from("phone_numbers", "assigned_agent_id")
                        .to("agents", "agent_id")
                        .on_delete(ForeignKeyAction::SetNull),
                )
                // The database itself refuses to delete an integration a number still uses,
                // whatever races the application layer loses.
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_phone_numbers_integration")
                        .from("phone_numbers", "integration_id")
                        .to("integrations", "integration_id")
                        .on_delete(ForeignKeyAction::Restrict),
                )
                .take(),
        )
        .await?;
        m.create_index(keyset_index("phone_numbers", "phone_number_id"))
            .await?;
        m.create_index(
            Index::create()
                .name("ux_phone_numbers_org_number")
                .table("phone_numbers")
                .col("organization_id")
                .col("phone_number")
                .unique()
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_phone_numbers_agent")
                .table("phone_numbers")
                .col("assigned_agent_id")
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("ix_phone_numbers_integration")
                .table("phone_numbers")
                .col("integration_id")
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table("invitations")
                .col(pk("invite_id"))
                .col(string("organization_id"))
                .col(string("email"))
                .col(string("role"))
                .col(string("invited_by"))
                .col(string("status"))
                .col(big_integer("created_at"))
                .col(big_integer("expires_at"))
                .foreign_key(&mut org_fk("invitations"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("invitations", "invite_id"))
            .await?;
        // At most one pending invitation per e-mail and organization, enforced by the database
        // so that two concurrent invites cannot both succeed. Same SQL on SQLite and Postgres.
        m.get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX ux_invitations_pending ON invitations (organization_id, email) WHERE status = 'pending'",
            )
            .await?;
        Ok(())
    }
}

/// When a key was revoked: set once, by the one request that revoked it.
struct M0002ApiKeyRevokedAt;

impl MigrationName for M0002ApiKeyRevokedAt {
    fn name(&self) -> &str {
        "m0002_api_key_revoked_at"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0002ApiKeyRevokedAt {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .add_column(big_integer_null("revoked_at"))
                .take(),
        )
        .await
    }
}

/// Where a call's recording is stored. SQLite adds one column per statement.
struct M0003CallRecording;

impl MigrationName for M0003CallRecording {
    fn name(&self) -> &str {
        "m0003_call_recording"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0003CallRecording {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            text_null("recording_key"),
            string_null("recording_content_type"),
            big_integer_null("recording_size"),
        ] {
            m.alter_table(Table::alter().table("calls").add_column(column).take())
                .await?;
        }
        Ok(())
    }
}

/// The record of every state change: one row per event, its data as JSON text.
struct M0004Events;

impl MigrationName for M0004Events {
    fn name(&self) -> &str {
        "m0004_events"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0004Events {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("events")
                .col(pk("event_id"))
                .col(string("organization_id"))
                .col(string("type"))
                .col(big_integer("created_at"))
                .col(text("data"))
                .foreign_key(&mut org_fk("events"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("events", "event_id")).await?;
        // The list filtered by type: with one type, a range scan in list order.
        m.create_index(
            Index::create()
                .name("ix_events_type_keyset")
                .table("events")
                .col("organization_id")
                .col("type")
                .col("created_at")
                .col("event_id")
                .take(),
        )
        .await?;
        // The retention sweep deletes by age across organizations.
        m.create_index(
            Index::create()
                .name("ix_events_created_at")
                .table("events")
                .col("created_at")
                .take(),
        )
        .await
    }
}

/// Durable jobs: claimed under a lease, due by `run_at`; `unique_key` keeps a recurring job
/// single.
struct M0005Jobs;

impl MigrationName for M0005Jobs {
    fn name(&self) -> &str {
        "m0005_jobs"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0005Jobs {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("jobs")
                .col(pk("job_id"))
                .col(string("kind"))
                .col(text("payload"))
                .col(string("status"))
                .col(integer("attempts"))
                .col(integer("max_attempts"))
                .col(big_integer("run_at"))
                .col(string_null("locked_by"))
                .col(big_integer_null("locked_until"))
                .col(text_null("last_error"))
                .col(string_null("unique_key"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .take(),
        )
        .await?;
        // The claim scans queued jobs by due time and running ones by lease end.
        for (name, col) in [("ix_jobs_due", "run_at"), ("ix_jobs_lease", "locked_until")] {
            m.create_index(
                Index::create()
                    .name(name)
                    .table("jobs")
                    .col("status")
                    .col(col)
                    .take(),
            )
            .await?;
        }
        m.create_index(
            Index::create()
                .name("ux_jobs_unique_key")
                .table("jobs")
                .col("unique_key")
                .unique()
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("jobs").take()).await
    }
}

/// Webhook endpoints (secrets sealed; the previous one kept while it still signs) and the
/// record of every delivery, which goes with its endpoint.
struct M0006Webhooks;

impl MigrationName for M0006Webhooks {
    fn name(&self) -> &str {
        "m0006_webhooks"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0006Webhooks {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("webhooks")
                .col(pk("webhook_id"))
                .col(string("organization_id"))
                .col(text("url"))
                .col(text("events"))
                .col(text_null("description"))
                .col(string("status"))
                .col(text("secret_sealed"))
                .col(text_null("previous_secret_sealed"))
                .col(big_integer_null("previous_secret_expires_at"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .foreign_key(&mut org_fk("webhooks"))
                .take(),
        )
        .await?;
        m.create_index(keyset_index("webhooks", "webhook_id"))
            .await?;
        // No foreign key to `events`: the retention sweep deletes old events whatever
        // deliveries still name them.
        m.create_table(
            Table::create()
                .table("webhook_deliveries")
                .col(pk("delivery_id"))
                .col(string("webhook_id"))
                .col(string("event_id"))
                .col(string("event_type"))
                .col(string("status"))
                .col(integer("attempts"))
                .col(big_integer_null("last_attempt_at"))
                .col(big_integer_null("next_attempt_at"))
                .col(integer_null("last_status_code"))
                .col(text_null("last_error"))
                .col(big_integer("created_at"))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_webhook_deliveries_webhook")
                        .from("webhook_deliveries", "webhook_id")
                        .to("webhooks", "webhook_id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .take(),
        )
        .await?;
        // The deliveries list of one endpoint, newest first.
        m.create_index(
            Index::create()
                .name("ix_webhook_deliveries_keyset")
                .table("webhook_deliveries")
                .col("webhook_id")
                .col("created_at")
                .col("delivery_id")
                .take(),
        )
        .await
    }
}
