//! Events: the list and one event. They are recorded by the writes of the other areas.

use super::{Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{Event, EventFilter};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;

impl Service {
    /// The organization's events, newest first; only those of `filter.types` when any are
    /// given.
    pub async fn event_list(
        &self,
        actor: &Actor,
        filter: &EventFilter,
        params: &PageParams,
    ) -> Result<Page<Event>> {
        actor.require(Permission::EventsRead)?;
        let query = PageQuery::from_params(params, IdKind::Event)?;
        let mut types = filter.types.clone();
        types.sort_by_key(|t| t.as_str());
        types.dedup();
        let resource_id = filter
            .resource_id
            .as_deref()
            .map(|id| {
                if id.len() > 100 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    return Err(Error::invalid(
                        "resource_id must be a resource's id: letters, digits and `_`, at most \
                         100 characters",
                    ));
                }
                Ok(id)
            })
            .transpose()?;
        let rows = self
            .repo
            .event_list(&actor.organization_id, &types, resource_id, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |e| {
            cursor_of(e.created_at, &e.event_id)
        }))
    }

    /// One event of the organization.
    pub async fn event_view(&self, actor: &Actor, event_id: &str) -> Result<Event> {
        actor.require(Permission::EventsRead)?;
        let id = IdKind::Event.parse(event_id)?;
        self.repo
            .event_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("event {id} not found")))
    }
}
