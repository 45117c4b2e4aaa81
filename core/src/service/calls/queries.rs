//! The call list under its filters (with full-text search over transcripts) and call
//! statistics.

use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::knowledge::search_terms;
use crate::model::{Call, CallFilter, CallJson, CallQuery, CallSearch, CallStats, StatsGrouping};
use crate::page::{Page, PageParams, PageQuery, SharedPage};
use crate::role::Permission;
use crate::service::{Service, cursor_of};
use crate::validate;

/// The filters as a repository takes them: ids and numbers checked, words of `q` sanitized.
fn call_query(filter: &CallFilter, search: Option<&CallSearch>) -> Result<CallQuery> {
    let number = |field: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(|n| validate::e164(field, n))
            .transpose()
    };
    if let (Some(after), Some(before)) = (filter.created_after, filter.created_before)
        && after >= before
    {
        return Err(Error::invalid(
            "created_after must be earlier than created_before",
        ));
    }
    let terms = match search.and_then(|s| s.q.as_deref()) {
        Some(q) => {
            let terms = search_terms(q);
            if terms.is_empty() {
                return Err(Error::invalid(
                    "q must contain at least one word of letters or digits",
                ));
            }
            terms
        }
        None => Vec::new(),
    };
    Ok(CallQuery {
        status: filter.status,
        call_type: filter.call_type,
        agent_id: filter
            .agent_id
            .as_deref()
            .map(|id| IdKind::Agent.parse(id))
            .transpose()?,
        to_number: number("to_number", &filter.to_number)?,
        from_number: number("from_number", &filter.from_number)?,
        phone_number_id: filter
            .phone_number_id
            .as_deref()
            .map(|id| IdKind::PhoneNumber.parse(id))
            .transpose()?,
        agent_version: match filter.agent_version {
            Some(v) if v < 1 => {
                return Err(Error::invalid(format!(
                    "agent_version must be a version number (1, 2, …), got {v}"
                )));
            }
            v => v,
        },
        successful: filter.successful,
        created_after: filter.created_after,
        created_before: filter.created_before,
        terms,
    })
}

/// The query of a page of the call list, the scope its cursors are bound to, and the page.
fn list_query(
    actor: &Actor,
    filter: &CallFilter,
    search: &CallSearch,
    params: &PageParams,
) -> Result<(CallQuery, String, PageQuery)> {
    actor.require(Permission::CallsRead)?;
    let query = call_query(filter, Some(search))?;
    let scope = query.digest();
    let page = PageQuery::from_params_scoped(params, IdKind::Call, &scope)?;
    Ok((query, scope, page))
}

impl Service {
    /// The organization's calls that match `filter` and `search`, newest first. A cursor is
    /// bound to the filters of the page that gave it.
    pub async fn call_list(
        &self,
        actor: &Actor,
        filter: &CallFilter,
        search: &CallSearch,
        params: &PageParams,
    ) -> Result<Page<Call>> {
        let (query, scope, page) = list_query(actor, filter, search, params)?;
        let rows = self
            .repo
            .call_list(&actor.organization_id, &query, &page)
            .await?;
        Ok(Page::from_rows_by(rows, page.limit, |c| {
            cursor_of(c.created_at, &c.call_sid).encode_scoped(&scope)
        }))
    }

    /// [`call_list`](Self::call_list) with each call as its JSON, as the API answers it: the
    /// repository may write its rows straight to JSON, and share them with a page it keeps.
    pub async fn call_list_json(
        &self,
        actor: &Actor,
        filter: &CallFilter,
        search: &CallSearch,
        params: &PageParams,
    ) -> Result<SharedPage<CallJson>> {
        let (query, scope, page) = list_query(actor, filter, search, params)?;
        let rows = self
            .repo
            .call_list_json(&actor.organization_id, &query, &page)
            .await?;
        Ok(SharedPage::from_rows_by(rows, page.limit, |c| {
            cursor_of(c.created_at, &c.call_sid).encode_scoped(&scope)
        }))
    }

    /// Count, cost and duration of the organization's calls that match `filter`, in total and
    /// per group when `grouping` asks for one.
    pub async fn call_stats(
        &self,
        actor: &Actor,
        filter: &CallFilter,
        grouping: &StatsGrouping,
    ) -> Result<CallStats> {
        actor.require(Permission::CallsRead)?;
        let query = call_query(filter, None)?;
        self.repo
            .call_stats(&actor.organization_id, &query, grouping.group_by)
            .await
    }
}
