//! The database side of tools: [`ToolRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::model::{Event, EventStamp, Tool};
use crate::page::PageQuery;

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
