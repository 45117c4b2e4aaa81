//! Call transcripts: append messages, list them in conversation order.

use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{CallMessage, NewMessage, NewMessages};
use crate::page::{Page, PageParams, SeqCursor, checked_limit};
use crate::role::Permission;
use crate::service::Service;

/// Most messages one request appends.
const MAX_MESSAGES_PER_APPEND: usize = 100;
/// Longest message text, in characters.
const MAX_MESSAGE_TEXT: usize = 100_000;
/// Longest tool name, in characters.
const MAX_TOOL_NAME: usize = 200;

pub(in crate::service) fn checked_message(i: usize, m: NewMessage) -> Result<NewMessage> {
    let field = |name: &str| format!("messages[{i}].{name}");
    if m.text.chars().count() > MAX_MESSAGE_TEXT {
        return Err(Error::invalid(format!(
            "{} must be at most {MAX_MESSAGE_TEXT} characters",
            field("text")
        )));
    }
    for (name, value) in [("start_ms", m.start_ms), ("end_ms", m.end_ms)] {
        if value.is_some_and(|v| v < 0) {
            return Err(Error::invalid(format!(
                "{} must not be negative",
                field(name)
            )));
        }
    }
    if let (Some(start), Some(end)) = (m.start_ms, m.end_ms)
        && end < start
    {
        return Err(Error::invalid(format!(
            "{} must not be before {}",
            field("end_ms"),
            field("start_ms")
        )));
    }
    let tool_name = m
        .tool_name
        .as_deref()
        .map(|n| crate::validate::text(&field("tool_name"), n, MAX_TOOL_NAME))
        .transpose()?;
    Ok(NewMessage { tool_name, ..m })
}

impl Service {
    /// Appends messages to a call's transcript; each gets the next `seq` of the call.
    pub async fn call_message_append(
        &self,
        actor: &Actor,
        call_sid: &str,
        input: NewMessages,
    ) -> Result<Vec<CallMessage>> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let count = input.messages.len();
        if !(1..=MAX_MESSAGES_PER_APPEND).contains(&count) {
            return Err(Error::invalid(format!(
                "messages must hold between 1 and {MAX_MESSAGES_PER_APPEND} messages, got {count}"
            )));
        }
        let messages = input
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| checked_message(i, m))
            .collect::<Result<Vec<_>>>()?;
        self.repo
            .call_message_append(
                &actor.organization_id,
                &call_sid,
                &messages,
                self.now(),
                Some(&self.audit_entry(
                    actor,
                    "transcript.append",
                    "call",
                    &call_sid,
                    serde_json::Map::from_iter([(
                        "messages_appended".to_owned(),
                        serde_json::json!([null, count]),
                    )]),
                )),
            )
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// A call's transcript in conversation order (`seq` ascending).
    pub async fn call_message_list(
        &self,
        actor: &Actor,
        call_sid: &str,
        params: &PageParams,
    ) -> Result<Page<CallMessage>> {
        actor.require(Permission::CallsRead)?;
        let limit = checked_limit(params)?;
        let after = params
            .cursor
            .as_deref()
            .map(SeqCursor::decode)
            .transpose()?
            .map_or(0, |c| c.0);
        let call = self.call_view(actor, call_sid).await?;
        let rows = self
            .repo
            .call_message_list(
                &actor.organization_id,
                &call.call_sid,
                after,
                u64::from(limit) + 1,
            )
            .await?;
        Ok(Page::from_rows_by(rows, limit, |m| {
            SeqCursor(m.seq).encode()
        }))
    }
}
