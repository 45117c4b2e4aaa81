//! The first schema: organizations, users and their memberships, invitations, API keys,
//! agents, calls, tools, knowledge-base documents, integrations and phone numbers, each with
//! the keyset index its list scans.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, boolean, double, double_null, integer, string, string_null,
    text, text_null,
};

use super::{keyset_index, org_fk, pk, user_fk};

pub(super) struct M0001Initial;

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
