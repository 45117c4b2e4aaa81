//! What the service needs from a database. One implementation (SeaORM, in
//! `voiceplane-storage`) serves SQLite and Postgres. Every lookup is scoped by organization, so
//! another organization's row is simply not found.
//!
//! Repositories map their failures onto [`Error`](crate::Error): `Unavailable` when the
//! database cannot be reached, `Conflict` for unique violations named in the method docs, and
//! `Internal` for anything else.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{
    Agent, ApiKey, Call, Document, Integration, Invitation, Member, Membership, Organization,
    PhoneNumber, Tool, User,
};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// Everything `bootstrap` writes, in one transaction.
#[derive(Debug, Clone)]
pub struct BootstrapRecords {
    /// The new organization.
    pub organization: Organization,
    /// The admin user.
    pub user: User,
    /// Whether `user` must be inserted (false when the e-mail already belongs to a user).
    pub user_is_new: bool,
    /// The admin membership.
    pub membership: Membership,
    /// The admin API key.
    pub api_key: ApiKey,
    /// SHA-256 (hex) of the key's secret.
    pub secret_hash: String,
}

/// Liveness of the backend.
#[async_trait]
pub trait HealthRepository: Send + Sync {
    /// Succeeds when the database answers a trivial query.
    async fn ping(&self) -> Result<()>;
}

/// Organizations, users, memberships and invitations.
#[async_trait]
pub trait OrganizationRepository: Send + Sync {
    /// Writes all of `records` atomically.
    async fn bootstrap(&self, records: &BootstrapRecords) -> Result<()>;
    /// The user with this e-mail (lower case), if any.
    async fn user_find_by_email(&self, email: &str) -> Result<Option<User>>;
    /// The membership of `user_id` in `organization_id`, if any.
    async fn membership_find(
        &self,
        organization_id: &str,
        user_id: &str,
    ) -> Result<Option<Membership>>;
    /// Every member of the organization, oldest first.
    async fn member_list(&self, organization_id: &str) -> Result<Vec<Member>>;
    /// Stores a new invitation. Conflict when a pending, unexpired invitation for the same
    /// e-mail exists in the organization; expired pending ones stop counting as pending.
    async fn invitation_insert(&self, invitation: &Invitation, now: Timestamp) -> Result<()>;
    /// Pending invitations that have not expired at `now`, newest first.
    async fn invitation_list_pending(
        &self,
        organization_id: &str,
        now: Timestamp,
    ) -> Result<Vec<Invitation>>;
}

/// API keys.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    async fn api_key_insert(&self, key: &ApiKey, secret_hash: &str) -> Result<()>;
    /// The key whose secret hashes to `secret_hash`, in any organization.
    async fn api_key_find_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>>;
    /// Sets `last_used_at = now` unless it is already later than `not_before`; the condition
    /// keeps the write rate at one per key per interval.
    async fn api_key_touch(
        &self,
        key_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()>;
    /// Up to `page.fetch()` keys of the organization after the cursor, newest first.
    async fn api_key_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<ApiKey>>;
}

/// Calls.
#[async_trait]
pub trait CallRepository: Send + Sync {
    /// Stores a new call.
    async fn call_insert(&self, call: &Call) -> Result<()>;
    /// The call, if it belongs to the organization.
    async fn call_get(&self, organization_id: &str, call_sid: &str) -> Result<Option<Call>>;
    /// Overwrites the mutable fields of an existing call.
    async fn call_update(&self, call: &Call) -> Result<()>;
    /// Up to `page.fetch()` calls after the cursor, newest first.
    async fn call_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Call>>;
}

/// Tools.
#[async_trait]
pub trait ToolRepository: Send + Sync {
    /// Stores a new tool. Conflict when the organization has a tool of the same name.
    async fn tool_insert(&self, tool: &Tool) -> Result<()>;
    /// The tool, if it belongs to the organization.
    async fn tool_get(&self, organization_id: &str, tool_id: &str) -> Result<Option<Tool>>;
    /// Up to `page.fetch()` tools after the cursor, newest first.
    async fn tool_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Tool>>;
    /// Number of tools of the organization.
    async fn tool_count(&self, organization_id: &str) -> Result<u64>;
    /// Those of `ids` that are tools of the organization.
    async fn tool_ids_existing(&self, organization_id: &str, ids: &[String])
    -> Result<Vec<String>>;
}

/// Knowledge-base documents.
#[async_trait]
pub trait DocumentRepository: Send + Sync {
    /// Stores a new document; `text` is the content of text documents.
    async fn document_insert(&self, document: &Document, text: Option<&str>) -> Result<()>;
    /// The document, if it belongs to the organization.
    async fn document_get(
        &self,
        organization_id: &str,
        documentation_id: &str,
    ) -> Result<Option<Document>>;
    /// Those of `ids` that are documents of the organization.
    async fn document_ids_existing(
        &self,
        organization_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>>;
}

/// Agents. `assigned_phone_number_ids` is derived from the phone numbers' `assigned_agent_id`,
/// so the two directions cannot disagree.
#[async_trait]
pub trait AgentRepository: Send + Sync {
    /// Stores a new agent and, in the same transaction, assigns the phone numbers listed in
    /// `agent.assigned_phone_number_ids` to it (status `assigned`). The caller has checked that
    /// they belong to the organization.
    async fn agent_insert(&self, agent: &Agent) -> Result<()>;
    /// The agent with its assigned phone numbers, if it belongs to the organization.
    async fn agent_get(&self, organization_id: &str, agent_id: &str) -> Result<Option<Agent>>;
}

/// Phone numbers.
#[async_trait]
pub trait PhoneNumberRepository: Send + Sync {
    /// Stores a new number. Conflict when the organization already has this number.
    async fn phone_number_insert(&self, number: &PhoneNumber) -> Result<()>;
    /// The number, if it belongs to the organization.
    async fn phone_number_get(
        &self,
        organization_id: &str,
        phone_number_id: &str,
    ) -> Result<Option<PhoneNumber>>;
    /// Those of `ids` that are phone numbers of the organization.
    async fn phone_number_ids_existing(
        &self,
        organization_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>>;
}

/// Telephony integrations.
#[async_trait]
pub trait IntegrationRepository: Send + Sync {
    /// The integration, if it belongs to the organization.
    async fn integration_get(
        &self,
        organization_id: &str,
        integration_id: &str,
    ) -> Result<Option<Integration>>;
}

/// The whole storage interface the [`Service`](crate::Service) uses.
pub trait Repository:
    HealthRepository
    + OrganizationRepository
    + ApiKeyRepository
    + CallRepository
    + ToolRepository
    + DocumentRepository
    + AgentRepository
    + PhoneNumberRepository
    + IntegrationRepository
    + Send
    + Sync
    + 'static
{
}

impl<T> Repository for T where
    T: HealthRepository
        + OrganizationRepository
        + ApiKeyRepository
        + CallRepository
        + ToolRepository
        + DocumentRepository
        + AgentRepository
        + PhoneNumberRepository
        + IntegrationRepository
        + Send
        + Sync
        + 'static
{
}
