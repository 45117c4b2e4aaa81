//! What the service needs from a database. One implementation (SeaORM, in
//! `voiceplane-storage`) serves SQLite and Postgres. Every lookup is scoped by organization, so
//! another organization's row is simply not found.
//!
//! Every write of a state change takes the [`Event`] that records it (or, when the data is
//! only known inside the write, its [`EventStamp`]) and stores it in the same transaction as
//! the change: no change without its event, no event without its change. A change a caller
//! makes also records its audit entry in that transaction: carried by the event
//! ([`Event::audit`]), or passed as an [`AuditEntry`] to the few writes that record no event;
//! a write that changes nothing (a row not found) records no entry.
//!
//! An update takes a [`Change`]: the repository reads the resource inside its write
//! transaction (the row locked: SQLite's write lock is taken at `BEGIN`, Postgres locks the
//! row), applies the change there, and writes it back, so a change touches only the fields
//! its caller named and concurrent changes of other fields all survive. The event's
//! [`EventStamp::change`] also checks the caller's `If-Match` against the resource as read
//! there, which makes it a compare-and-set across instances.
//!
//! Repositories map their failures onto [`Error`](crate::Error): `Unavailable` when the
//! database cannot be reached, `Conflict` for unique violations named in the method docs, and
//! `Internal` for anything else.

use async_trait::async_trait;

use crate::error::Result;
use crate::jobs::NewJob;
use crate::model::{
    Agent, ApiKey, AuditEntry, AuditFilter, AuditedChange, Call, CallMessage, CallQuery, CallStats,
    ChunkVector, Delivery, DeliveryAttempt, DeliveryTarget, Document, DocumentSource, Event,
    EventStamp, EventType, Integration, IntegrationFilter, Invitation, Member, Membership,
    NewChunk, NewMessage, Organization, OrganizationSettings, PhoneNumber, Recording, SearchHit,
    StatsGroupBy, Tool, User, Webhook,
};
use crate::page::PageQuery;
use crate::role::Role;
use crate::time::Timestamp;

/// A change to one resource, applied by the repository to the resource as its write
/// transaction reads it; an error aborts the write.
pub type Change<'a, T> = Box<dyn FnOnce(&mut T) -> Result<()> + Send + 'a>;

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
    /// Sets the user's `last_login = now` unless it is already later than `not_before`; the
    /// condition keeps the write rate at one per user per interval.
    async fn user_touch_login(
        &self,
        user_id: &str,
        now: Timestamp,
        not_before: Timestamp,
    ) -> Result<()>;
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
    async fn invitation_insert(
        &self,
        invitation: &Invitation,
        now: Timestamp,
        event: &Event,
    ) -> Result<()>;
    /// Pending invitations that have not expired at `now`, newest first.
    async fn invitation_list_pending(
        &self,
        organization_id: &str,
        now: Timestamp,
    ) -> Result<Vec<Invitation>>;
    /// The invitation, in any organization when `organization_id` is `None`.
    async fn invitation_get(
        &self,
        organization_id: Option<&str>,
        invite_id: &str,
    ) -> Result<Option<Invitation>>;
    /// Moves a pending invitation to `revoked` and records `event` with the revoked
    /// invitation; false (and no event) when it was not pending.
    async fn invitation_revoke(
        &self,
        organization_id: &str,
        invite_id: &str,
        event: &EventStamp,
    ) -> Result<bool>;
    /// Accepts a pending, unexpired invitation atomically: marks it `accepted`, inserts the user
    /// when new, and creates the membership. Conflict when the invitation is no longer pending
    /// or expired at `now`, or when the user is already a member. Records `accepted` and
    /// `member_added` (with the new member).
    async fn invitation_accept(
        &self,
        accept: &AcceptRecords,
        now: Timestamp,
        accepted: &Event,
        member_added: &EventStamp,
    ) -> Result<Member>;
    /// One member of the organization.
    async fn member_get(
        &self,
        organization_id: &str,
        membership_id: &str,
    ) -> Result<Option<Member>>;
    /// Changes a member's role. Conflict when that would leave the organization without an
    /// admin; the check and the change are one transaction, serialized per organization.
    /// Records `event` with the changed member.
    async fn member_set_role(
        &self,
        organization_id: &str,
        membership_id: &str,
        role: Role,
        event: &EventStamp,
    ) -> Result<Member>;
    /// Removes a member and revokes the API keys that member created in the organization.
    /// Conflict when the member is the last admin. Records `event` with the member as it was.
    async fn member_remove(
        &self,
        organization_id: &str,
        membership_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<Member>;
}

/// What accepting an invitation writes.
#[derive(Debug, Clone)]
pub struct AcceptRecords {
    /// The invitation being accepted.
    pub invitation: Invitation,
    /// The accepting user (inserted if no user with this id exists).
    pub user: User,
    /// The new membership.
    pub membership: Membership,
}

/// API keys.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    async fn api_key_insert(&self, key: &ApiKey, secret_hash: &str, event: &Event) -> Result<()>;
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
    /// One key of the organization.
    async fn api_key_get(&self, organization_id: &str, key_id: &str) -> Result<Option<ApiKey>>;
    /// Revokes an active key and records `event` with the revoked key; true when this call
    /// revoked it, false (and no event) when it already was.
    async fn api_key_revoke(
        &self,
        organization_id: &str,
        key_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<bool>;
}

/// Calls.
#[async_trait]
pub trait CallRepository: Send + Sync {
    /// Stores a new call.
    async fn call_insert(&self, call: &Call, event: &Event) -> Result<()>;
    /// The call, if it belongs to the organization.
    async fn call_get(&self, organization_id: &str, call_sid: &str) -> Result<Option<Call>>;
    /// Applies `change` to the mutable fields of the call and records `event`; the call as
    /// changed, `None` when there is no such call.
    async fn call_update(
        &self,
        organization_id: &str,
        call_sid: &str,
        change: Change<'_, Call>,
        event: &EventStamp,
    ) -> Result<Option<Call>>;
    /// Points the call at its stored recording (or at none).
    async fn call_set_recording(
        &self,
        organization_id: &str,
        call_sid: &str,
        recording: Option<&Recording>,
        updated_at: Timestamp,
        event: &Event,
    ) -> Result<()>;
}

/// What a removal takes from a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPart {
    /// Only its recording: `recording.deleted`, and a job that deletes the file.
    Recording,
    /// Only its transcript (no event names this).
    Transcript,
    /// The call with its transcript and recording: `call.deleted`, and what removing the
    /// recording records when it had one.
    Call,
}

/// A removal of `part` from calls of one organization: one call (a manual delete) or the
/// oldest calls created before a cutoff (the retention sweep). Both go through
/// [`RetentionRepository::calls_remove`], so both record the same events.
pub struct CallRemoval<'a> {
    /// The organization.
    pub organization_id: &'a str,
    /// Only this call.
    pub call_sid: Option<&'a str>,
    /// Only calls created before this.
    pub created_before: Option<Timestamp>,
    /// What to remove.
    pub part: CallPart,
    /// At most this many calls, oldest first.
    pub limit: u64,
    /// The time of the change (`updated_at` of a call that loses its recording).
    pub now: Timestamp,
    /// A new stamp for each event the removal records.
    pub stamp: &'a (dyn Fn(EventType) -> EventStamp + Send + Sync),
    /// The durable job that deletes a removed recording's file, given the call and the file's
    /// key, once the removal has committed.
    pub blob_job: &'a (dyn Fn(&str, &str) -> NewJob + Send + Sync),
}

impl std::fmt::Debug for CallRemoval<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallRemoval")
            .field("organization_id", &self.organization_id)
            .field("call_sid", &self.call_sid)
            .field("created_before", &self.created_before)
            .field("part", &self.part)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Deleting calls, their transcripts and recordings, by hand or by the retention policy.
#[async_trait]
pub trait RetentionRepository: Send + Sync {
    /// The organization's retention policy; `None` when there is no such organization.
    async fn organization_settings(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationSettings>>;
    /// Applies `change` to the organization's retention policy, with its audit entry; the
    /// policy as changed, `None` when there is no such organization.
    async fn organization_settings_set(
        &self,
        organization_id: &str,
        change: Change<'_, OrganizationSettings>,
        audit: &AuditedChange,
    ) -> Result<Option<OrganizationSettings>>;
    /// Every organization that has a retention policy, with it.
    async fn retention_policies(&self) -> Result<Vec<(String, OrganizationSettings)>>;
    /// Removes `removal.part` from the calls it selects that have it, each with its events and
    /// blob jobs, in one transaction; returns those calls as they were before. A call removed
    /// meanwhile by another transaction is skipped without an event.
    async fn calls_remove(&self, removal: &CallRemoval<'_>) -> Result<Vec<Call>>;
    /// Whether the call's recording is stored under `key` again (a new upload after a delete
    /// reuses the key; its file must survive the older delete's job).
    async fn recording_key_in_use(&self, call_sid: &str, key: &str) -> Result<bool>;
}

/// Tools.
#[async_trait]
pub trait ToolRepository: Send + Sync {
    /// Stores a new tool. Conflict when the organization has a tool of the same name.
    async fn tool_insert(&self, tool: &Tool, event: &Event) -> Result<()>;
    /// The tool, if it belongs to the organization.
    async fn tool_get(&self, organization_id: &str, tool_id: &str) -> Result<Option<Tool>>;
    /// Up to `page.fetch()` tools after the cursor, newest first.
    async fn tool_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Tool>>;
    /// Number of tools of the organization.
    async fn tool_count(&self, organization_id: &str) -> Result<u64>;
    /// Applies `change` to the tool and records `event`; the tool as changed, `None` when
    /// there is no such tool. Conflict on a duplicate name.
    async fn tool_update(
        &self,
        organization_id: &str,
        tool_id: &str,
        change: Change<'_, Tool>,
        event: &EventStamp,
    ) -> Result<Option<Tool>>;
    /// Deletes the tool and removes it from every agent's `custom_tools`, atomically, with
    /// `event` carrying the tool as it was.
    async fn tool_delete(
        &self,
        organization_id: &str,
        tool_id: &str,
        event: &EventStamp,
    ) -> Result<Option<Tool>>;
}

/// Knowledge-base documents and their chunks.
#[async_trait]
pub trait DocumentRepository: Send + Sync {
    /// Stores a new document (`text` is the content of text documents) with its event and the
    /// job that processes it, which from then on owns its processing.
    async fn document_insert(
        &self,
        document: &Document,
        text: Option<&str>,
        event: &Event,
        job: &NewJob,
    ) -> Result<()>;
    /// The document, if it belongs to the organization.
    async fn document_get(
        &self,
        organization_id: &str,
        documentation_id: &str,
    ) -> Result<Option<Document>>;
    /// Up to `page.fetch()` documents after the cursor, newest first.
    async fn document_list(&self, organization_id: &str, page: &PageQuery)
    -> Result<Vec<Document>>;
    /// Applies `change` to the document's name and `updated_at` (processing may be writing
    /// the other fields), with its audit entry; `None` when there is no such document.
    async fn document_update(
        &self,
        organization_id: &str,
        documentation_id: &str,
        change: Change<'_, Document>,
        audit: &AuditedChange,
    ) -> Result<Option<Document>>;
    /// Deletes the document, its chunks and its processing job, and removes it from every
    /// agent's `kb_document_ids`, atomically, with `event` carrying the document as it was.
    async fn document_delete(
        &self,
        organization_id: &str,
        documentation_id: &str,
        event: &EventStamp,
    ) -> Result<Option<Document>>;
    /// Puts the document back to `pending` (no error, processed fields kept) and hands its
    /// processing to `job`, written in the same transaction; the job that owned it before is
    /// cancelled. `None` when the document is not the organization's.
    async fn document_reprocess(
        &self,
        organization_id: &str,
        documentation_id: &str,
        job: &NewJob,
        now: Timestamp,
        audit: &AuditedChange,
    ) -> Result<Option<Document>>;
    /// Marks the document `processing` and returns what processing reads, if `job_id` still
    /// owns its processing; `None` when the document is gone or another job took over.
    async fn document_processing_start(
        &self,
        documentation_id: &str,
        job_id: &str,
        now: Timestamp,
    ) -> Result<Option<DocumentSource>>;
    /// Writes the end of processing (`document`'s status, counts, error and times), replaces
    /// the document's chunks with `chunks`, and records `event`, atomically, if `job_id` still
    /// owns its processing; returns whether it did.
    async fn document_processing_finish(
        &self,
        document: &Document,
        job_id: &str,
        chunks: &[NewChunk],
        event: &Event,
    ) -> Result<bool>;
    /// The organization's chunks that contain any of `terms` (see
    /// [`crate::knowledge::search_terms`]), best lexical match first, with a score in `(0, 1)`;
    /// only chunks of `document_ids` when given.
    async fn chunk_search(
        &self,
        organization_id: &str,
        terms: &[String],
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<SearchHit>>;
    /// The organization's chunks that have an embedding (only of `document_ids` when given),
    /// at most `limit`.
    async fn chunk_vectors(
        &self,
        organization_id: &str,
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<ChunkVector>>;
}

/// Agents. `assigned_phone_number_ids` is derived from the phone numbers' `assigned_agent_id`,
/// so the two directions cannot disagree.
///
/// Inserts and updates check, inside their transaction, that every referenced tool, document
/// and phone number exists in the organization (else `InvalidInput` naming the missing ids),
/// serialized with deletions of those resources, so no agent keeps a dangling reference.
#[async_trait]
pub trait AgentRepository: Send + Sync {
    /// Stores a new agent and assigns the phone numbers listed in
    /// `agent.assigned_phone_number_ids` to it (status `assigned`), atomically.
    async fn agent_insert(&self, agent: &Agent, event: &Event) -> Result<()>;
    /// The agent with its assigned phone numbers, if it belongs to the organization.
    async fn agent_get(&self, organization_id: &str, agent_id: &str) -> Result<Option<Agent>>;
    /// Up to `page.fetch()` agents after the cursor, newest first.
    async fn agent_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Agent>>;
    /// Applies `change` to the agent; its assigned numbers become exactly its
    /// `assigned_phone_number_ids` (others are unassigned), atomically. Records `event` with
    /// the agent as the write left it, which it returns; `None` when there is no such agent.
    async fn agent_update(
        &self,
        organization_id: &str,
        agent_id: &str,
        change: Change<'_, Agent>,
        event: &EventStamp,
    ) -> Result<Option<Agent>>;
    /// Deletes the agent and unassigns its phone numbers (as of `now`), atomically, with
    /// `event` carrying the agent as it was.
    async fn agent_delete(
        &self,
        organization_id: &str,
        agent_id: &str,
        now: Timestamp,
        event: &EventStamp,
    ) -> Result<Option<Agent>>;
}

/// Phone numbers. Inserts and updates check, inside their transaction, that the assigned agent
/// and the integration exist in the organization (else `InvalidInput`); the database's foreign
/// key keeps a number from ever referencing a deleted integration.
#[async_trait]
pub trait PhoneNumberRepository: Send + Sync {
    /// Stores a new number. Conflict when the organization already has this number.
    async fn phone_number_insert(&self, number: &PhoneNumber, event: &Event) -> Result<()>;
    /// The number, if it belongs to the organization.
    async fn phone_number_get(
        &self,
        organization_id: &str,
        phone_number_id: &str,
    ) -> Result<Option<PhoneNumber>>;
    /// Up to `page.fetch()` numbers after the cursor, newest first.
    async fn phone_number_list(
        &self,
        organization_id: &str,
        page: &PageQuery,
    ) -> Result<Vec<PhoneNumber>>;
    /// Applies `change` to the number (its references checked inside the write) and records
    /// `event`; the number as changed, `None` when there is no such number.
    async fn phone_number_update(
        &self,
        organization_id: &str,
        phone_number_id: &str,
        change: Change<'_, PhoneNumber>,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>>;
    /// Deletes the number, with `event` carrying it as it was.
    async fn phone_number_delete(
        &self,
        organization_id: &str,
        phone_number_id: &str,
        event: &EventStamp,
    ) -> Result<Option<PhoneNumber>>;
}

/// The result of trying to delete an integration.
#[derive(Debug, Clone, PartialEq)]
pub enum IntegrationDeletion {
    /// Deleted with its credentials; the integration as it was.
    Deleted(Integration),
    /// Refused: these phone numbers still reference it.
    Referenced(Vec<PhoneNumber>),
    /// No such integration in the organization.
    NotFound,
}

/// Telephony integrations. Credentials are stored only as the sealed (encrypted) text the
/// service hands over.
#[async_trait]
pub trait IntegrationRepository: Send + Sync {
    /// Stores a new integration with its sealed credentials.
    async fn integration_insert(
        &self,
        integration: &Integration,
        sealed: &str,
        event: &Event,
    ) -> Result<()>;
    /// The integration, if it belongs to the organization.
    async fn integration_get(
        &self,
        organization_id: &str,
        integration_id: &str,
    ) -> Result<Option<Integration>>;
    /// The integration and its sealed credentials.
    async fn integration_get_sealed(
        &self,
        organization_id: &str,
        integration_id: &str,
    ) -> Result<Option<(Integration, String)>>;
    /// Up to `page.fetch()` integrations after the cursor, newest first.
    async fn integration_list(
        &self,
        organization_id: &str,
        filter: &IntegrationFilter,
        page: &PageQuery,
    ) -> Result<Vec<Integration>>;
    /// Applies `change` to name, category, status and `updated_at`, replaces the
    /// credentials when `sealed` is given, and records the audit entry; the integration as
    /// changed, `None` when there is none.
    async fn integration_update(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        sealed: Option<&str>,
        audit: &AuditedChange,
    ) -> Result<Option<Integration>>;
    /// Applies `change` (the status a probe found) and records `event`.
    async fn integration_validated(
        &self,
        organization_id: &str,
        integration_id: &str,
        change: Change<'_, Integration>,
        event: &EventStamp,
    ) -> Result<Option<Integration>>;
    /// Deletes the integration and its credentials unless a phone number references it; the
    /// check and the delete cannot be raced by a concurrent assignment. Records `event` with
    /// the integration as it was when deleted.
    async fn integration_delete(
        &self,
        organization_id: &str,
        integration_id: &str,
        event: &EventStamp,
    ) -> Result<IntegrationDeletion>;
}

/// The audit log: written by the other areas' writes inside their transactions, listed and
/// swept here. Nothing changes or deletes an entry except the retention sweep.
#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// The organization's entries that match `filter` (already checked), newest first.
    async fn audit_list(
        &self,
        organization_id: &str,
        filter: &AuditFilter,
        page: &PageQuery,
    ) -> Result<Vec<AuditEntry>>;
    /// Deletes up to `limit` entries, of every organization, created before `cutoff`, oldest
    /// first; answers how many.
    async fn audit_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64>;
}

/// Events. They are written by the other areas' writes, inside their transactions.
#[async_trait]
pub trait EventRepository: Send + Sync {
    /// Up to `page.fetch()` events of the organization after the cursor, newest first; only
    /// those of `types` unless it is empty.
    async fn event_list(
        &self,
        organization_id: &str,
        types: &[EventType],
        page: &PageQuery,
    ) -> Result<Vec<Event>>;
    /// The event, if it belongs to the organization.
    async fn event_get(&self, organization_id: &str, event_id: &str) -> Result<Option<Event>>;
    /// Deletes up to `limit` events (of every organization) created before `cutoff`, oldest
    /// first; returns how many it deleted, so a sweep repeats until fewer than `limit`.
    async fn event_delete_older_than(&self, cutoff: Timestamp, limit: u64) -> Result<u64>;
}

/// Webhook endpoints and their deliveries. Secrets are stored only as the sealed text the
/// service hands over (sealed with the webhook id as associated data). Deliveries of ordinary
/// events are written by the event's own write (the fan-out of every event recorded); the
/// methods here write the others.
#[async_trait]
pub trait WebhookRepository: Send + Sync {
    /// Stores a new endpoint with its sealed secret.
    async fn webhook_insert(
        &self,
        webhook: &Webhook,
        secret_sealed: &str,
        audit: &AuditEntry,
    ) -> Result<()>;
    /// The endpoint, if it belongs to the organization.
    async fn webhook_get(&self, organization_id: &str, webhook_id: &str)
    -> Result<Option<Webhook>>;
    /// Up to `page.fetch()` endpoints after the cursor, newest first.
    async fn webhook_list(&self, organization_id: &str, page: &PageQuery) -> Result<Vec<Webhook>>;
    /// Applies `change` to url, events, description, status and `updated_at`, with its audit
    /// entry; the endpoint as changed, `None` when there is none.
    async fn webhook_update(
        &self,
        organization_id: &str,
        webhook_id: &str,
        change: Change<'_, Webhook>,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>>;
    /// Deletes the endpoint with its deliveries, with its audit entry; returns it as it was.
    async fn webhook_delete(
        &self,
        organization_id: &str,
        webhook_id: &str,
        audit: &AuditedChange,
    ) -> Result<Option<Webhook>>;
    /// Atomically makes `secret_sealed` the secret and keeps the one it replaces as the
    /// previous secret until `previous_expires_at`; sets `updated_at = now`. Returns the
    /// endpoint after the change.
    async fn webhook_rotate_secret(
        &self,
        organization_id: &str,
        webhook_id: &str,
        secret_sealed: &str,
        previous_expires_at: Timestamp,
        now: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Option<Webhook>>;
    /// In one transaction: records `event` (which goes to no other endpoint), writes
    /// `delivery` of it to the endpoint and the job that attempts it. False (and nothing
    /// written) when the endpoint is not the organization's.
    async fn webhook_test(
        &self,
        organization_id: &str,
        event: &Event,
        delivery: &Delivery,
        job: &crate::jobs::NewJob,
    ) -> Result<bool>;
    /// Up to `page.fetch()` deliveries to the organization's endpoint after the cursor,
    /// newest first.
    async fn delivery_list(
        &self,
        organization_id: &str,
        webhook_id: &str,
        page: &PageQuery,
    ) -> Result<Vec<Delivery>>;
    /// The delivery with its endpoint's URL, status and sealed secrets, and its event: what
    /// one attempt needs. None when the delivery, its endpoint or its event is gone.
    async fn delivery_target(&self, delivery_id: &str) -> Result<Option<DeliveryTarget>>;
    /// Records one attempt: counts it, and sets `last_attempt_at`, `last_status_code`,
    /// `last_error`, `status` and `next_attempt_at`.
    async fn delivery_record_attempt(
        &self,
        delivery_id: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()>;
    /// In one transaction: makes the delivery of the organization's endpoint pending again,
    /// due at `now`, and writes `job`. Returns the delivery after the change.
    async fn delivery_retry(
        &self,
        organization_id: &str,
        webhook_id: &str,
        delivery_id: &str,
        now: Timestamp,
        job: &crate::jobs::NewJob,
        audit: &AuditEntry,
    ) -> Result<Option<Delivery>>;
}

/// The call list under its filters, and call statistics.
#[async_trait]
pub trait CallQueryRepository: Send + Sync {
    /// Up to `page.fetch()` of the organization's calls that match `query`, after the
    /// cursor, newest first.
    async fn call_list(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Vec<Call>>;
    /// Totals over the organization's calls that match `query` (whose `terms` must be empty),
    /// and per group when `group_by` is given, aggregated by the database.
    async fn call_stats(
        &self,
        organization_id: &str,
        query: &CallQuery,
        group_by: Option<StatsGroupBy>,
    ) -> Result<CallStats>;
}

/// Call transcripts.
#[async_trait]
pub trait TranscriptRepository: Send + Sync {
    /// Appends `messages` to the call's transcript in one transaction, numbered after its
    /// last `seq`; concurrent appends to one call never share or skip a number. `None` (and
    /// nothing written) when the call is not the organization's.
    async fn call_message_append(
        &self,
        organization_id: &str,
        call_sid: &str,
        messages: &[NewMessage],
        created_at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<Option<Vec<CallMessage>>>;
    /// Up to `limit` messages of the call with `seq > after_seq`, in `seq` order.
    async fn call_message_list(
        &self,
        organization_id: &str,
        call_sid: &str,
        after_seq: i64,
        limit: u64,
    ) -> Result<Vec<CallMessage>>;
}

/// The whole storage interface the [`Service`](crate::Service) uses.
pub trait Repository:
    HealthRepository
    + crate::cache::ChangeRepository
    + OrganizationRepository
    + ApiKeyRepository
    + CallRepository
    + CallQueryRepository
    + TranscriptRepository
    + ToolRepository
    + DocumentRepository
    + AgentRepository
    + PhoneNumberRepository
    + IntegrationRepository
    + crate::jobs::JobRepository
    + EventRepository
    + AuditRepository
    + WebhookRepository
    + RetentionRepository
    + crate::idempotency::IdempotencyRepository
    + Send
    + Sync
    + 'static
{
}

impl<T> Repository for T where
    T: HealthRepository
        + crate::cache::ChangeRepository
        + OrganizationRepository
        + ApiKeyRepository
        + CallRepository
        + CallQueryRepository
        + TranscriptRepository
        + ToolRepository
        + DocumentRepository
        + AgentRepository
        + PhoneNumberRepository
        + IntegrationRepository
        + crate::jobs::JobRepository
        + EventRepository
        + AuditRepository
        + WebhookRepository
        + RetentionRepository
        + crate::idempotency::IdempotencyRepository
        + Send
        + Sync
        + 'static
{
}
