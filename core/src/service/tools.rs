//! HTTP tools.

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{EventType, NewTool, Outcome, Tool, ToolSummary, ToolUpdate};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::validate;
use std::collections::BTreeMap;

fn tool_name(value: &str) -> Result<String> {
    let name = validate::text("tool_name", value, 64)?;
    if name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(name)
    } else {
        Err(Error::invalid(
            "tool_name may only contain letters, digits, `_` and `-`",
        ))
    }
}

fn http_method(value: &str) -> Result<String> {
    let method = value.trim().to_ascii_uppercase();
    if matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
        Ok(method)
    } else {
        Err(Error::invalid(
            "http_method must be one of GET, POST, PUT, PATCH, DELETE",
        ))
    }
}

fn url(value: &str) -> Result<String> {
    let url = validate::text("url", value, 2048)?;
    let host = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or("");
    if host.is_empty() || host.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err(Error::invalid(
            "url must be an absolute http:// or https:// URL",
        ));
    }
    Ok(url)
}

fn headers(headers: &BTreeMap<String, String>) -> Result<()> {
    for (name, value) in headers {
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
        if !valid_name || value.contains(['\r', '\n']) {
            return Err(Error::invalid(format!(
                "headers: `{}` is not a valid header",
                crate::ids::truncate(name, 60)
            )));
        }
    }
    Ok(())
}

fn parameters(value: serde_json::Value) -> Result<serde_json::Value> {
    if value.is_object() {
        Ok(value)
    } else {
        Err(Error::invalid("parameters must be a JSON Schema object"))
    }
}

fn timeout(value: i32) -> Result<i32> {
    if (1..=120).contains(&value) {
        Ok(value)
    } else {
        Err(Error::invalid("timeout_seconds must be between 1 and 120"))
    }
}

impl Service {
    /// Creates an HTTP tool.
    pub async fn tool_create(&self, actor: &Actor, input: NewTool) -> Result<Tool> {
        actor.require(Permission::ToolsWrite)?;
        headers(&input.headers)?;
        let now = self.now();
        let tool = Tool {
            tool_id: self.id(IdKind::Tool),
            organization_id: actor.organization_id.clone(),
            tool_name: tool_name(&input.tool_name)?,
            tool_description: validate::text("tool_description", &input.tool_description, 1000)?,
            http_method: http_method(input.http_method.as_deref().unwrap_or("POST"))?,
            url: url(&input.url)?,
            headers: input.headers,
            parameters: parameters(
                input
                    .parameters
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            )?,
            timeout_seconds: timeout(input.timeout_seconds.unwrap_or(30))?,
            created_at: now,
            updated_at: now,
        };
        let event = self.event(EventType::ToolCreated, &tool, By::Creating(actor))?;
        self.after_write(self.repo.tool_insert(&tool, &event).await)?;
        Ok(tool)
    }

    /// One tool of the organization, with URL, headers and parameters.
    pub async fn tool_view(&self, actor: &Actor, tool_id: &str) -> Result<Tool> {
        actor.require(Permission::ToolsRead)?;
        let id = IdKind::Tool.parse(tool_id)?;
        self.repo
            .tool_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("tool {id} not found")))
    }

    /// The organization's tools as summaries, newest first, with the total count.
    pub async fn tool_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<ToolSummary>> {
        actor.require(Permission::ToolsRead)?;
        let query = PageQuery::from_params(params, IdKind::Tool)?;
        let rows = self.repo.tool_list(&actor.organization_id, &query).await?;
        let total = self.repo.tool_count(&actor.organization_id).await?;
        let page = Page::from_rows(rows, &query, |t| cursor_of(t.created_at, &t.tool_id));
        Ok(Page {
            items: page.items.into_iter().map(ToolSummary::from).collect(),
            has_more: page.has_more,
            next_cursor: page.next_cursor,
            total_count: Some(total),
        })
    }

    /// Changes the given fields of a tool.
    pub async fn tool_update(
        &self,
        actor: &Actor,
        tool_id: &str,
        input: ToolUpdate,
    ) -> Result<Tool> {
        actor.require(Permission::ToolsWrite)?;
        let id = IdKind::Tool.parse(tool_id)?;
        // Every field is checked on its own, before the write.
        let tool_name = input.tool_name.as_deref().map(tool_name).transpose()?;
        let description = input
            .tool_description
            .as_deref()
            .map(|v| validate::text("tool_description", v, 1000))
            .transpose()?;
        let method = input.http_method.as_deref().map(http_method).transpose()?;
        let target = input.url.as_deref().map(url).transpose()?;
        if let Some(v) = &input.headers {
            headers(v)?;
        }
        let parameters = input.parameters.map(parameters).transpose()?;
        let timeout_seconds = input.timeout_seconds.map(timeout).transpose()?;
        let now = self.now();
        let change = Box::new(move |tool: &mut Tool| {
            if let Some(v) = tool_name {
                tool.tool_name = v;
            }
            if let Some(v) = description {
                tool.tool_description = v;
            }
            if let Some(v) = method {
                tool.http_method = v;
            }
            if let Some(v) = target {
                tool.url = v;
            }
            if let Some(v) = input.headers {
                tool.headers = v;
            }
            if let Some(v) = parameters {
                tool.parameters = v;
            }
            if let Some(v) = timeout_seconds {
                tool.timeout_seconds = v;
            }
            tool.updated_at = now.max(tool.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::ToolUpdated, By::changing(actor));
        self.after_write(
            self.repo
                .tool_update(&actor.organization_id, &id, change, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("tool {id} not found")))
    }

    /// Deletes a tool; agents that used it no longer list it.
    pub async fn tool_delete(&self, actor: &Actor, tool_id: &str) -> Result<Outcome<Tool>> {
        actor.require(Permission::ToolsWrite)?;
        let id = IdKind::Tool.parse(tool_id)?;
        let tool = self
            .after_write(
                self.repo
                    .tool_delete(
                        &actor.organization_id,
                        &id,
                        &self.event_stamp(EventType::ToolDeleted, By::Deleting(actor)),
                    )
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("tool {id} not found")))?;
        Ok(Outcome::new(tool, "tool deleted"))
    }
}
