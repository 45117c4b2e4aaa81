//! Schema migrations, one code path for SQLite and Postgres. Kept apart from the entities
//! because the two preludes clash (`ColumnDef`).
//!
//! This module is the registry, in order, with the column and index helpers the migrations
//! share; each migration is a module `mNNNN_<name>` of its own. The name a migration reports
//! is what databases record as applied, so it never changes once released.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::string;

mod m0001_initial;
mod m0002_api_key_revoked_at;
mod m0003_call_recording;
mod m0004_events;
mod m0005_jobs;
mod m0006_webhooks;
mod m0007_knowledge;
mod m0008_calls_as_data;
mod m0010_idempotency;
mod m0011_access;
mod m0012_credential_version;
mod m0013_change_version;
mod m0014_idempotency_answer;
mod m0015_telephony;
mod m0016_call_telephony;
mod m0017_suppressions;
mod m0018_calling_rules;
mod m0019_campaigns;
mod m0020_agent_versions;
mod m0021_live_calls;
mod m0022_usage;
mod m0023_analysis;
mod m0024_event_resources;
mod m0025_routing_changes;
mod m0026_call_versions;
mod m0027_keys_bound;
mod m0029_runtime;

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
            Box::new(m0001_initial::M0001Initial),
            Box::new(m0002_api_key_revoked_at::M0002ApiKeyRevokedAt),
            Box::new(m0003_call_recording::M0003CallRecording),
            Box::new(m0004_events::M0004Events),
            Box::new(m0005_jobs::M0005Jobs),
            Box::new(m0006_webhooks::M0006Webhooks),
            Box::new(m0007_knowledge::M0007Knowledge),
            Box::new(m0008_calls_as_data::M0008CallsAsData),
            Box::new(m0010_idempotency::M0010Idempotency),
            Box::new(m0011_access::M0011Access),
            Box::new(m0012_credential_version::M0012CredentialVersion),
            Box::new(m0013_change_version::M0013ChangeVersion),
            Box::new(m0014_idempotency_answer::M0014IdempotencyAnswer),
            Box::new(m0015_telephony::M0015Telephony),
            Box::new(m0016_call_telephony::M0016CallTelephony),
            Box::new(m0017_suppressions::M0017Suppressions),
            Box::new(m0018_calling_rules::M0018CallingRules),
            Box::new(m0019_campaigns::M0019Campaigns),
            Box::new(m0020_agent_versions::M0020AgentVersions),
            Box::new(m0021_live_calls::M0021LiveCalls),
            Box::new(m0022_usage::M0022Usage),
            Box::new(m0023_analysis::M0023Analysis),
            Box::new(m0024_event_resources::M0024EventResources),
            Box::new(m0025_routing_changes::M0025RoutingChanges),
            Box::new(m0026_call_versions::M0026CallVersions),
            Box::new(m0027_keys_bound::M0027KeysBound),
            Box::new(m0029_runtime::M0029Runtime),
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
