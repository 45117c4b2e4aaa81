//! The database side of agents: [`AgentRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{Agent, AgentVersion, Event, EventStamp};
use crate::page::PageQuery;
use crate::time::Timestamp;

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
    /// Publishes the agent's configuration as its next version, in one transaction with the
    /// agent's row locked: the version is written, the agent's `published_version` and
    /// `deployment` (all of it to the new version) changed, and `event` recorded with the
    /// version. A 409 when the configuration is the latest version's; `None` when there is no
    /// such agent.
    async fn agent_publish(
        &self,
        organization_id: &str,
        agent_id: &str,
        description: Option<String>,
        event: &EventStamp,
    ) -> Result<Option<AgentVersion>>;
    /// Up to `limit` versions of the agent below `before` (all when `None`), newest first.
    async fn agent_version_list(
        &self,
        organization_id: &str,
        agent_id: &str,
        before: Option<i64>,
        limit: u64,
    ) -> Result<Vec<AgentVersion>>;
    /// One version of the agent.
    async fn agent_version_get(
        &self,
        organization_id: &str,
        agent_id: &str,
        version: i64,
    ) -> Result<Option<AgentVersion>>;
}
