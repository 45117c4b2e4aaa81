//! Calls as data: the filters of `GET /api/calls` (each alone and combined, in paged walks
//! that see each call once, newest first), full-text `q` over transcripts, cursors bound to
//! their filters, `GET /api/calls/stats` against sums computed here, and transcripts (append,
//! list, concurrent appends), through `Service` and over HTTP, on SQLite and Postgres.

mod filters;
mod stats;
mod transcripts;

use voiceplane_core::auth::Actor;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

/// The calls of one organization, as they are after the seeding, and its agents.
pub(super) struct Seeded {
    pub admin: Actor,
    pub agents: Vec<String>,
    pub calls: Vec<Call>,
}

pub(super) const TO: [&str; 2] = ["+14155550101", "+14155550102"];
pub(super) const FROM: [Option<&str>; 3] = [Some("+14155550201"), None, Some("+14155550202")];
const STATUSES: [CallStatus; 5] = [
    CallStatus::Completed,
    CallStatus::Failed,
    CallStatus::NoAnswer,
    CallStatus::Completed,
    CallStatus::InProgress,
];
const TYPES: [CallType; 3] = [CallType::Inbound, CallType::Outbound, CallType::Preview];
const REASONS: [Option<&str>; 3] = [Some("user_hangup"), Some("agent_hangup"), None];

/// 30 calls of "Acme" over about nine days (7 h apart), by three agents, with every
/// filterable field varied and cost, duration and end reason on most of them; plus a call of
/// another organization with the same numbers, which no answer may include.
pub(super) async fn seed(ctx: &TestContext) -> Seeded {
    let admin = ctx.admin("Acme").await;
    let mut agents = Vec::new();
    for name in ["Ann", "Bob", "Cy"] {
        let agent = ctx
            .service
            .agent_create(&admin, new_agent(name))
            .await
            .unwrap();
        agents.push(agent.agent_id);
    }
    let mut calls = Vec::new();
    for i in 0..30usize {
        ctx.clock.advance(7 * 3600);
        let call = ctx
            .service
            .call_create(
                &admin,
                NewCall {
                    agent_id: agents[i % 3].clone(),
                    to_number: TO[i % 2].to_owned(),
                    from_number: FROM[i % 3].map(str::to_owned),
                    call_type: TYPES[(i / 2) % 3],
                    status: Some(STATUSES[i % 5]),
                    recording_enabled: None,
                    created_at: None,
                },
            )
            .await
            .unwrap();
        let call = if i % 4 == 0 {
            call
        } else {
            let update = CallUpdate {
                total_cost: Some(i as f64 * 0.25),
                duration_seconds: Some(i as f64 * 10.0 + 0.5),
                end_reason: REASONS[i % 3].map(str::to_owned),
                ..CallUpdate::default()
            };
            ctx.service
                .call_update(&admin, &call.call_sid, update)
                .await
                .unwrap()
        };
        calls.push(call);
    }
    let other = ctx.admin("Other").await;
    let theirs = ctx
        .service
        .agent_create(&other, new_agent("Theirs"))
        .await
        .unwrap();
    let foreign = ctx
        .service
        .call_create(
            &other,
            NewCall {
                agent_id: theirs.agent_id,
                to_number: TO[0].to_owned(),
                from_number: FROM[0].map(str::to_owned),
                call_type: CallType::Inbound,
                status: Some(CallStatus::Completed),
                recording_enabled: None,
                created_at: None,
            },
        )
        .await
        .unwrap();
    ctx.service
        .call_message_append(
            &other,
            &foreign.call_sid,
            messages(&["I want a refund and the policy"]),
        )
        .await
        .unwrap();
    Seeded {
        admin,
        agents,
        calls,
    }
}

/// An append body of user messages with these texts.
pub(super) fn messages(texts: &[&str]) -> NewMessages {
    NewMessages {
        messages: texts
            .iter()
            .map(|t| NewMessage {
                role: MessageRole::User,
                text: (*t).to_owned(),
                start_ms: None,
                end_ms: None,
                tool_name: None,
                tool_arguments: None,
                tool_result: None,
                interrupted: None,
            })
            .collect(),
    }
}

/// A filter, and the predicate that says which calls it keeps.
pub(super) type Case<'a> = (CallFilter, Box<dyn Fn(&Call) -> bool + 'a>);

/// The ids of the calls `keep` selects, newest first.
pub(super) fn expected(calls: &[Call], keep: impl Fn(&Call) -> bool) -> Vec<String> {
    let mut kept: Vec<&Call> = calls.iter().filter(|c| keep(c)).collect();
    kept.sort_by(|a, b| (b.created_at, &b.call_sid).cmp(&(a.created_at, &a.call_sid)));
    kept.into_iter().map(|c| c.call_sid.clone()).collect()
}

/// Every call the filters keep, walked `limit` at a time through `Service`.
pub(super) async fn walk(
    ctx: &TestContext,
    actor: &Actor,
    filter: &CallFilter,
    search: &CallSearch,
    limit: u32,
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = ctx
            .service
            .call_list(
                actor,
                filter,
                search,
                &PageParams {
                    limit: Some(limit),
                    cursor,
                },
            )
            .await
            .unwrap();
        assert!(page.items.len() <= limit as usize);
        seen.extend(page.items.iter().map(|c| c.call_sid.clone()));
        if !page.has_more {
            assert!(page.next_cursor.is_none());
            return seen;
        }
        cursor = page.next_cursor;
    }
}
