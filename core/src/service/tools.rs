//! HTTP tools.

use super::*;

impl Service {
    /// Creates an HTTP tool.
    pub async fn tool_create(&self, actor: &Actor, input: NewTool) -> Result<Tool> {
        actor.require(Permission::ToolsWrite)?;
        let tool_name = validate::text("tool_name", &input.tool_name, 64)?;
        if !tool_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(Error::invalid(
                "tool_name may only contain letters, digits, `_` and `-`",
            ));
        }
        let tool_description = validate::text("tool_description", &input.tool_description, 1000)?;
        let http_method = input
            .http_method
            .as_deref()
            .unwrap_or("POST")
            .trim()
            .to_ascii_uppercase();
        if !matches!(
            http_method.as_str(),
            "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
        ) {
            return Err(Error::invalid(
                "http_method must be one of GET, POST, PUT, PATCH, DELETE",
            ));
        }
        let url = validate::text("url", &input.url, 2048)?;
        let host = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .unwrap_or("");
        if host.is_empty() || host.starts_with('/') || url.chars().any(char::is_whitespace) {
            return Err(Error::invalid(
                "url must be an absolute http:// or https:// URL",
            ));
        }
        for (name, value) in &input.headers {
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
        let parameters = input
            .parameters
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        if !parameters.is_object() {
            return Err(Error::invalid("parameters must be a JSON Schema object"));
        }
        let timeout_seconds = input.timeout_seconds.unwrap_or(30);
        if !(1..=120).contains(&timeout_seconds) {
            return Err(Error::invalid("timeout_seconds must be between 1 and 120"));
        }
        let now = self.now();
        let tool = Tool {
            tool_id: self.id(IdKind::Tool),
            client_id: actor.organization_id.clone(),
            tool_name,
            tool_description,
            http_method,
            url,
            headers: input.headers,
            parameters,
            timeout_seconds,
            created_at: now,
            updated_at: now,
        };
        self.repo.tool_insert(&tool).await?;
        Ok(tool)
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
}
