//! SeaORM entities, one module per table. Timestamps are `BIGINT` microseconds since the epoch
//! so that keyset ordering is exact and identical on SQLite and Postgres; id lists are JSON text.

pub mod organization {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "organizations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub organization_id: String,
        pub name: String,
        pub created_at: i64,
        pub recording_retention_days: Option<i32>,
        pub transcript_retention_days: Option<i32>,
        pub call_retention_days: Option<i32>,
        pub runtime_stream_url: Option<String>,
        pub calling_hours_start: Option<String>,
        pub calling_hours_end: Option<String>,
        pub timezone: Option<String>,
        pub max_concurrent_calls: Option<i64>,
        pub monthly_credit_limit: Option<f64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: String,
        pub email: String,
        pub name: Option<String>,
        pub created_at: i64,
        pub last_login: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod membership {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "memberships")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub membership_id: String,
        pub organization_id: String,
        pub user_id: String,
        pub role: String,
        pub status: String,
        pub created_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::user::Entity",
            from = "Column::UserId",
            to = "super::user::Column::UserId"
        )]
        User,
    }

    impl Related<super::user::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::User.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod api_key {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "api_keys")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub key_id: String,
        pub organization_id: String,
        pub user_id: String,
        pub name: String,
        pub role: String,
        pub prefix: String,
        pub secret_hash: String,
        pub status: String,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
        pub expires_at: Option<i64>,
        pub revoked_at: Option<i64>,
        pub scopes: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod call {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "calls")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub call_sid: String,
        pub organization_id: String,
        pub agent_id: String,
        pub agent_name: Option<String>,
        pub to_number: String,
        pub from_number: Option<String>,
        pub call_type: String,
        pub status: String,
        pub recording_enabled: bool,
        pub total_cost: f64,
        pub duration_seconds: Option<f64>,
        pub turn_count: i64,
        pub start_time: Option<i64>,
        pub end_time: Option<i64>,
        pub end_reason: Option<String>,
        pub billing_status: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub recording_key: Option<String>,
        pub recording_content_type: Option<String>,
        pub recording_size: Option<i64>,
        pub message_seq: i64,
        pub provider: Option<String>,
        pub provider_call_id: Option<String>,
        pub phone_number_id: Option<String>,
        pub answered_by: Option<String>,
        pub dynamic_variables: String,
        pub metadata: String,
        pub provider_error: Option<String>,
        pub agent_version: Option<i64>,
        pub timezone: Option<String>,
        pub dial_started_at: Option<i64>,
        pub campaign_id: Option<String>,
        pub recipient_id: Option<String>,
        pub cost_breakdown: Option<String>,
        pub analysis_status: Option<String>,
        pub analysis: Option<String>,
        pub analysis_error: Option<String>,
        pub successful: Option<bool>,
        pub runtime_token: Option<String>,
        pub latency: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod tool {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "tools")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub tool_id: String,
        pub organization_id: String,
        pub tool_name: String,
        pub tool_description: String,
        pub http_method: String,
        pub url: String,
        pub headers: String,
        pub parameters: String,
        pub timeout_seconds: i32,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod chunk {
    use sea_orm::entity::prelude::*;

    /// On Postgres the table also has `tsv`, generated from `text`; no query of the entity
    /// names it.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "kb_chunks")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub chunk_id: i64,
        pub organization_id: String,
        pub documentation_id: String,
        pub chunk_index: i64,
        pub text: String,
        pub embedding: Option<Vec<u8>>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod document {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "kb_documents")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub documentation_id: String,
        pub organization_id: String,
        pub name: String,
        pub doc_type: String,
        pub storage_key: Option<String>,
        pub storage_uri: Option<String>,
        pub content_type: String,
        pub size: i64,
        pub filename: Option<String>,
        pub processing_status: String,
        pub page_count: Option<i64>,
        pub vector_count: Option<i64>,
        pub last_processed_at: Option<i64>,
        pub processing_error: Option<String>,
        pub processing_job: Option<String>,
        pub text_content: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod agent {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "agents")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub agent_id: String,
        pub organization_id: String,
        pub agent_name: String,
        pub language: String,
        pub stt_provider: String,
        pub tts_provider: String,
        pub tts_voice: String,
        pub llm_provider: String,
        pub llm_model: String,
        pub system_prompt: String,
        pub speak_first: bool,
        pub end_call_tool: bool,
        pub llm_temperature: f64,
        pub recording_enabled: bool,
        pub voicemail_detection: bool,
        pub voicemail_response_delay: f64,
        pub custom_tools: String,
        pub kb_document_ids: String,
        pub created_at: i64,
        pub updated_at: i64,
        pub runtime_stream_url: Option<String>,
        pub published_version: Option<i64>,
        /// JSON `[{version, weight}]`; `NULL` for an agent never published.
        pub deployment: Option<String>,
        pub analysis: Option<String>,
        pub analysis_key: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(has_many = "super::phone_number::Entity")]
        PhoneNumber,
    }

    impl Related<super::phone_number::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::PhoneNumber.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod integration {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "integrations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub integration_id: String,
        pub organization_id: String,
        pub name: String,
        pub provider: String,
        pub category: String,
        pub status: String,
        pub credentials_ciphertext: String,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod phone_number {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "phone_numbers")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub phone_number_id: String,
        pub organization_id: String,
        pub phone_number: String,
        pub provider: String,
        pub status: String,
        pub supports_inbound: bool,
        pub supports_outbound: bool,
        pub assigned_agent_id: Option<String>,
        pub integration_id: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub provider_number_id: Option<String>,
        pub connected_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::agent::Entity",
            from = "Column::AssignedAgentId",
            to = "super::agent::Column::AgentId"
        )]
        Agent,
    }

    impl Related<super::agent::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Agent.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod invitation {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "invitations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub invite_id: String,
        pub organization_id: String,
        pub email: String,
        pub role: String,
        pub invited_by: String,
        pub status: String,
        pub created_at: i64,
        pub expires_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod audit {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "audit_log")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub audit_id: String,
        pub organization_id: String,
        pub created_at: i64,
        pub action: String,
        pub resource_type: String,
        pub resource_id: String,
        pub actor_type: String,
        pub actor_key_id: Option<String>,
        pub actor_user_id: Option<String>,
        pub changes: String,
        pub request_id: Option<String>,
        pub ip: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod event {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "events")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub event_id: String,
        pub organization_id: String,
        #[sea_orm(column_name = "type")]
        pub event_type: String,
        pub created_at: i64,
        pub data: String,
        pub resource_id: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// `jobs`: durable jobs (see `voiceplane_core::jobs`).
pub mod job {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "jobs")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub job_id: String,
        pub kind: String,
        pub payload: String,
        pub status: String,
        pub attempts: i32,
        pub max_attempts: i32,
        pub run_at: i64,
        pub locked_by: Option<String>,
        pub locked_until: Option<i64>,
        pub last_error: Option<String>,
        pub unique_key: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod webhook {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhooks")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub webhook_id: String,
        pub organization_id: String,
        pub url: String,
        pub events: String,
        pub description: Option<String>,
        pub status: String,
        pub secret_sealed: String,
        pub previous_secret_sealed: Option<String>,
        pub previous_secret_expires_at: Option<i64>,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod webhook_delivery {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_deliveries")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub delivery_id: String,
        pub webhook_id: String,
        pub event_id: String,
        pub event_type: String,
        pub status: String,
        pub attempts: i32,
        pub last_attempt_at: Option<i64>,
        pub next_attempt_at: Option<i64>,
        pub last_status_code: Option<i32>,
        pub last_error: Option<String>,
        pub created_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod call_message {
    use sea_orm::entity::prelude::*;

    /// On Postgres the table also has `tsv`, generated from `text`; no query of the entity
    /// names it.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "call_messages")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub message_id: i64,
        pub organization_id: String,
        pub call_sid: String,
        pub seq: i64,
        pub role: String,
        pub text: String,
        pub start_ms: Option<i64>,
        pub end_ms: Option<i64>,
        pub tool_name: Option<String>,
        pub tool_arguments: Option<String>,
        pub tool_result: Option<String>,
        pub created_at: i64,
        pub interrupted: Option<bool>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod suppression {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "suppressions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub suppression_id: String,
        pub organization_id: String,
        pub phone_number: String,
        pub reason: Option<String>,
        pub expires_at: Option<i64>,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod campaign {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "campaigns")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub campaign_id: String,
        pub organization_id: String,
        pub name: String,
        pub agent_id: String,
        pub from_phone_number_ids: String,
        pub max_concurrency: i64,
        pub timezone: String,
        pub windows: String,
        pub retry: String,
        pub starts_at: Option<i64>,
        pub ends_at: Option<i64>,
        pub dynamic_variables: String,
        pub status: String,
        pub paused_reason: Option<String>,
        /// Calls placed so far: the next one goes from number `dials % len`.
        pub dials: i64,
        /// Bumped whenever one of its calls ends, so that a pacer that was running then
        /// knows to look again.
        pub nudges: i64,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod campaign_recipient {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "campaign_recipients")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub recipient_id: String,
        pub campaign_id: String,
        pub organization_id: String,
        pub to_number: String,
        pub timezone: Option<String>,
        pub dynamic_variables: String,
        pub status: String,
        pub attempts: i64,
        pub last_call_sid: Option<String>,
        pub next_attempt_at: Option<i64>,
        pub last_outcome: Option<String>,
        pub created_at: i64,
        pub window_wait: bool,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod agent_version {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "agent_versions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub agent_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub version: i64,
        pub organization_id: String,
        pub description: Option<String>,
        pub published_at: i64,
        pub config: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod call_usage {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "call_usage")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub usage_id: i64,
        pub organization_id: String,
        pub call_sid: String,
        pub agent_id: String,
        pub call_created_at: i64,
        pub component: String,
        pub provider: String,
        pub model: Option<String>,
        pub quantity: f64,
        pub unit: String,
        pub credits: Option<f64>,
        pub created_at: i64,
        pub item_id: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod price_book {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "price_books")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub organization_id: String,
        pub prices: String,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
