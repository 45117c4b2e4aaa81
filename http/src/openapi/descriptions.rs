//! The `description` of every operation: what it does beyond its one-line summary, who may
//! call it (the permission and the least role holding it) and the errors worth knowing. The
//! route table keeps one line per operation; the longer text lives here, keyed by
//! operationId, and the tests hold the two lists equal.
//!
//! The statuses implied by the credentials, parameters and body (401, 403, 400, 404, 413, 415,
//! 503) are in each operation's `responses`; a description names only what is particular to
//! the operation.

/// `(operationId, description)`, in the route table's order.
pub(super) const DESCRIPTIONS: &[(&str, &str)] = &[
    (
        "health_live",
        "Answers `{\"status\": \"ok\"}` while the process runs; it touches neither the \
         database nor the object store. No credentials.",
    ),
    (
        "health_ready",
        "Answers `{\"status\": \"ready\"}` when the database and the object store both answer, \
         else 503 naming the one that does not. No credentials; meant for load balancers.",
    ),
    (
        "openapi_document",
        "This document, generated from the route table and the types that read and write the \
         bodies. No credentials. Also printed by `voiceplane openapi`.",
    ),
    (
        "api_key_create",
        "Creates an API key with a role no higher than the caller's; the answer holds the \
         secret (`api_key`, `vpk_…`) once, and it cannot be read again. `scopes` narrows the key \
         to some permissions, each held by its role and by the caller (400 naming the first \
         that is not); left out, the key has every permission of its role. Records \
         `api_key.created` and an audit entry. Needs `api_keys:write` (agent_manager or \
         admin). 403 for a role above the caller's.",
    ),
    (
        "api_key_list",
        "Lists the organization's API keys, newest first, revoked and expired ones included \
         (see `status`); never their secrets. Needs `api_keys:read` (every role).",
    ),
    (
        "api_key_view",
        "One API key of the organization as the list shows it, never its secret (the \
         `Location` of a new key). 404 for an unknown key or one of another organization. \
         Needs `api_keys:read` (every role).",
    ),
    (
        "api_key_revoke",
        "Revokes a key: it stops authenticating at once and stays listed with `status` \
         `revoked`. Needs `api_keys:write` (agent_manager or admin); a key whose role is above \
         the caller's cannot be revoked (403).",
    ),
    (
        "call_create",
        "Records a call of one of the organization's agents. `status` defaults to `queued`, \
         `recording_enabled` to the agent's setting, `created_at` to now. Needs `calls:write` \
         (agent_manager or admin); sending `created_at` (an import) also needs the role \
         `admin`, and it must not be in the future (400).",
    ),
    (
        "call_list",
        "Lists calls, newest first, with optional filters combined with AND (`status`, \
         `call_type`, `agent_id`, `to_number`, `from_number`, `created_after`, \
         `created_before`) and `q`, which keeps calls whose transcript has every word of it. \
         A cursor only continues the filters it was issued for (400 otherwise). Needs \
         `calls:read` (every role).",
    ),
    (
        "call_stats",
        "Counts the calls the filters keep (those of the list, without `q`) and sums their \
         cost and duration, in total and per `group_by` group (`day`, `agent`, `status`, \
         `end_reason`); computed by the database. Needs `calls:read` (every role).",
    ),
    (
        "call_view",
        "One call with its agent, numbers, times, cost and recording state. Needs `calls:read` \
         (every role).",
    ),
    (
        "call_update",
        "Changes a call's status, end reason, times, duration, cost, turn count or billing \
         status; `duration_seconds` is computed from the times when not given. Records \
         `call.updated`. Needs `calls:write` (agent_manager or admin).",
    ),
    (
        "call_delete",
        "Deletes the call, its transcript and its recording in one transaction and records \
         `call.deleted`; the recording's file is removed from the object store by a durable \
         job shortly after. Needs `calls:write` (agent_manager or admin).",
    ),
    (
        "call_message_append",
        "Appends 1–100 messages to the call's transcript in one transaction; they get the next \
         `seq` numbers in the order sent, and concurrent appends never share or skip one. A \
         400 names the message and field at fault. Needs `calls:write` (agent_manager or \
         admin).",
    ),
    (
        "call_message_list",
        "The call's transcript in conversation order (`seq` ascending), one page at a time. \
         Needs `calls:read` (every role).",
    ),
    (
        "recording_upload",
        "Streams the call's recording into object storage, replacing a previous one once the \
         new one is fully stored (a failed upload leaves the old one). Send `audio/wav` or \
         `audio/mpeg`, or `application/octet-stream` and let the first bytes tell the format \
         (400 when they are neither WAV nor MP3); 413 over `http.max_upload_bytes`. Records \
         `recording.ready`. Needs `calls:write` (agent_manager or admin).",
    ),
    (
        "recording_stream",
        "A URL that plays the recording for an hour without other credentials and answers \
         `Range` requests (usable as an `<audio>` source). 404 when the call has no \
         recording. Needs `calls:read` (every role).",
    ),
    (
        "recording_download",
        "The recording's bytes as a WAV attachment with an exact `Content-Length`, streamed \
         from the object store. 404 when the call has no recording. Needs `calls:read` (every \
         role).",
    ),
    (
        "recording_delete",
        "Deletes the call's recording (the call stays) and records `recording.deleted`; the \
         file goes from the object store shortly after. 404 when the call has no recording. \
         Needs `calls:write` (agent_manager or admin).",
    ),
    (
        "recording_signed_read",
        "Serves a recording through the URL `recording_stream` gave, on the `fs` and `memory` \
         stores; the `expires` and `sig` query parameters are the credential. 200 with the \
         whole file, 206 for a `Range` request, 416 for a range outside it, 403 for a tampered \
         or expired link.",
    ),
    (
        "tool_create",
        "Creates a custom HTTP tool that agents can call: its URL, method, headers, JSON \
         Schema of parameters and timeout. 409 when the organization already has a tool of \
         that name. Needs `tools:write` (agent_manager or admin).",
    ),
    (
        "tool_list",
        "Lists tool summaries, newest first, with the size of the whole list \
         (`pagination.total_count`). Needs `tools:read` (every role).",
    ),
    (
        "tool_view",
        "One tool in full: URL, method, headers, parameters and timeout. Needs `tools:read` \
         (every role).",
    ),
    (
        "tool_update",
        "Changes any field of a tool; 409 when renaming it to the name of another. Needs \
         `tools:write` (agent_manager or admin).",
    ),
    (
        "tool_delete",
        "Deletes a tool; agents that used it no longer list it. Needs `tools:write` \
         (agent_manager or admin).",
    ),
    (
        "agent_create",
        "Creates an agent: its prompt, voice, language model and settings, the tools and \
         knowledge-base documents it uses and the phone numbers assigned to it (each id must \
         be of this organization, else 400 naming it). Needs `agents:write` (agent_manager or \
         admin).",
    ),
    (
        "agent_list",
        "Lists agents, newest first. Needs `agents:read` (every role).",
    ),
    (
        "agent_view",
        "One agent with its tools, documents and phone numbers. Needs `agents:read` (every \
         role).",
    ),
    (
        "agent_update",
        "Changes any field of an agent; the three id lists, when given, replace the current \
         ones (numbers left out of `assigned_phone_number_ids` are unassigned). Needs \
         `agents:write` (agent_manager or admin).",
    ),
    (
        "agent_delete",
        "Deletes an agent; its phone numbers become unassigned, and past calls keep its id and \
         name. Needs `agents:write` (agent_manager or admin).",
    ),
    (
        "phone_number_create",
        "Adds an E.164 phone number, optionally tied to an integration and assigned to an \
         agent. 409 when the organization already has it. Needs `phone_numbers:write` \
         (agent_manager or admin).",
    ),
    (
        "phone_number_list",
        "Lists phone numbers, newest first. Needs `phone_numbers:read` (every role).",
    ),
    (
        "phone_number_view",
        "One phone number. Needs `phone_numbers:read` (every role).",
    ),
    (
        "phone_number_update",
        "Changes a number's agent, integration, provider or directions; `null` clears the \
         agent or the integration. Needs `phone_numbers:write` (agent_manager or admin).",
    ),
    (
        "phone_number_delete",
        "Deletes a phone number. Needs `phone_numbers:write` (agent_manager or admin).",
    ),
    (
        "integration_create",
        "Stores a telephony provider's credentials: `{account_sid, auth_token}` for `twilio`, \
         `{api_key}` for `telnyx`. They are encrypted at rest with `secrets.master_key` (503 \
         when it is not set) and never returned; `status` starts `active`. Needs \
         `integrations:write` (agent_manager or admin).",
    ),
    (
        "integration_list",
        "Lists integrations, newest first, optionally only those of one `status`; never their \
         credentials. Needs `integrations:read` (every role).",
    ),
    (
        "integration_view",
        "One integration, without its credentials. Needs `integrations:read` (every role).",
    ),
    (
        "integration_update",
        "Renames or recategorizes an integration, or replaces its credentials (same provider, \
         same shape); new credentials set `status` back to `active`. Needs \
         `integrations:write` (agent_manager or admin).",
    ),
    (
        "integration_delete",
        "Deletes an integration and its stored credentials. 409 while phone numbers refer to \
         it, naming them. Needs `integrations:delete` (agent_manager or admin).",
    ),
    (
        "integration_validate",
        "Makes a test call to the provider with the stored credentials and stores the outcome \
         in `status` (`active` or `invalid`); `updated_at` changes. The body is not read, but \
         must be sent as `application/json` (415 otherwise). Needs `integrations:read` (every \
         role).",
    ),
    (
        "document_create",
        "Adds a knowledge-base document, either as JSON `{name, text}` or as \
         `multipart/form-data` with a `file` part (streamed into object storage) and an \
         optional `name` part. It answers at once with `processing_status` `pending`; \
         extraction, chunking and embedding run afterwards. 413 over the upload limit. Needs \
         `kb:write` (agent_manager or admin).",
    ),
    (
        "document_list",
        "Lists knowledge-base documents, newest first. Needs `kb:read` (every role).",
    ),
    (
        "document_view",
        "One document with its processing state. Needs `kb:read` (every role).",
    ),
    (
        "document_update",
        "Renames a document. Needs `kb:write` (agent_manager or admin).",
    ),
    (
        "document_delete",
        "Deletes a document, its stored file and its chunks, and cancels its processing; \
         agents no longer list it. Needs `kb:write` (agent_manager or admin).",
    ),
    (
        "document_reprocess",
        "Processes the document again from its stored content; it is `pending` at once and a \
         run in progress is superseded. Answers 202. Needs `kb:write` (agent_manager or \
         admin).",
    ),
    (
        "document_search",
        "Searches the chunks of the organization's processed documents (optionally only \
         `document_ids`), best first, blending word and meaning matches. Needs `kb:read` \
         (every role).",
    ),
    (
        "voice_search",
        "Searches the voices of `provider` (`provider_one` or `provider_two`) with its own \
         cursor; no envelope. 502 when the provider fails, 503 when it has no API key \
         configured, 400 when it says the input is wrong. Needs `voices:read` (every role).",
    ),
    (
        "voice_library_list",
        "Pages through provider_two's shared voice library with its filters; no envelope. 502 \
         when the provider fails, 503 when it has no API key configured. Needs `voices:read` \
         (every role).",
    ),
    (
        "voice_library_add",
        "Copies a shared voice into the provider_two account and answers its id there (200: \
         nothing is created here). 404 when the provider does not know the voice, 502 when it \
         fails. Needs `voices:write` (agent_manager or admin).",
    ),
    (
        "organization_settings_view",
        "The organization's retention policy: how many days recordings, transcripts and calls \
         are kept (`null`: forever). Needs `settings:read` (admin).",
    ),
    (
        "organization_settings_update",
        "Changes the retention policy: each field an integer 1–36500 or `null` (keep forever); \
         absent fields are unchanged. The periodic sweep deletes what is older. Needs \
         `settings:write` (admin).",
    ),
    (
        "invitation_create",
        "Invites an e-mail address with a role; valid 7 days. 409 when one is already pending \
         for that address. Needs `members:write` (admin).",
    ),
    (
        "invitation_list",
        "The pending, unexpired invitations, as `{\"invitations\": […]}`. Needs \
         `members:read` (every role).",
    ),
    (
        "invitation_view",
        "One invitation of the organization, whatever its status; a pending one past its \
         expiry shows as `expired` (the `Location` of a new invitation). 404 for an unknown \
         invitation or one of another organization. Needs `members:read` (every role).",
    ),
    (
        "invitation_revoke",
        "Withdraws a pending invitation (`status` `revoked`). 409 when it is no longer \
         pending. Needs `members:write` (admin).",
    ),
    (
        "invitation_accept",
        "Accepts an invitation with the invitee's bearer JWT, whose `email` claim must be the \
         invited address (403 otherwise); no `X-Organization-Id`. The user is created from \
         `sub`, `email` and `name` when new. 409 when the invitation expired, was revoked or \
         was used.",
    ),
    (
        "member_list",
        "The organization's members, as `{\"members\": […]}`. Needs `members:read` (every \
         role).",
    ),
    (
        "member_update",
        "Changes a member's role. 409 rather than demote the last admin. Needs \
         `members:write` (admin).",
    ),
    (
        "member_remove",
        "Removes a member and revokes the API keys they created in this organization. 409 for \
         the last admin. Needs `members:write` (admin).",
    ),
    (
        "event_list",
        "Lists the organization's events, newest first, optionally of some `type`s (repeat \
         the parameter); an unknown type is a 400 naming it. Events are kept for \
         `events.retention_days`. Needs `events:read` (agent_manager or admin).",
    ),
    (
        "event_view",
        "One event: its type, time and the resource as it was. Needs `events:read` \
         (agent_manager or admin).",
    ),
    (
        "audit_list",
        "The organization's audit log, newest first: one entry per state change made through \
         the API (`action` `<resource>.<verb>`), with the actor (API key or user), the fields \
         changed as `[old, new]` (secrets shown as `\"[redacted]\"`), the request id and the \
         client address. Filters combine with AND: `action`, `resource_id`, `actor_key_id`, \
         `actor_user_id`, `created_after`, `created_before`; a malformed filter is a 400, and a \
         cursor only continues the filters it was issued for. Entries cannot be changed or \
         deleted; they are kept `audit.retention_days` (365). Needs `audit:read` (admin).",
    ),
    (
        "webhook_create",
        "Creates an endpoint that receives the listed event types (or `[\"*\"]`, all) as signed \
         POSTs. The answer holds its signing secret (`whsec_…`), shown only here and on \
         rotation; 503 when `secrets.master_key` is not set. Needs `webhooks:write` \
         (agent_manager or admin).",
    ),
    (
        "webhook_list",
        "Lists webhook endpoints, newest first, without secrets. Needs `webhooks:read` \
         (agent_manager or admin).",
    ),
    (
        "webhook_view",
        "One webhook endpoint, without its secret. Needs `webhooks:read` (agent_manager or \
         admin).",
    ),
    (
        "webhook_update",
        "Changes an endpoint's URL, event types, description or status; a `disabled` endpoint \
         is sent nothing. Needs `webhooks:write` (agent_manager or admin).",
    ),
    (
        "webhook_delete",
        "Deletes an endpoint and its deliveries. Needs `webhooks:write` (agent_manager or \
         admin).",
    ),
    (
        "webhook_rotate_secret",
        "Replaces the signing secret and answers the new one; deliveries are signed with both \
         for 24 hours, so receivers can switch without losing any. Needs `webhooks:write` \
         (agent_manager or admin).",
    ),
    (
        "webhook_test",
        "Queues a `webhook.test` event for this endpoint only and answers its pending \
         delivery (202). Needs `webhooks:write` (agent_manager or admin).",
    ),
    (
        "delivery_list",
        "The deliveries to an endpoint, newest first: status, attempts, last answer and next \
         attempt. Needs `webhooks:read` (agent_manager or admin).",
    ),
    (
        "delivery_retry",
        "Makes a delivery pending again and attempts it at once (202). Needs \
         `webhooks:write` (agent_manager or admin).",
    ),
];

/// The description of the operation `id`; empty when the table lacks it (the tests make
/// sure it never does).
pub(super) fn of(id: &str) -> &'static str {
    DESCRIPTIONS
        .iter()
        .find(|(key, _)| *key == id)
        .map_or("", |(_, description)| description)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::OPERATIONS;

    #[test]
    fn every_operation_has_a_description_and_no_key_is_stale() {
        for op in OPERATIONS {
            let description = of(op.id);
            assert!(
                description.len() > op.summary.len(),
                "{} has no description (or one shorter than its summary) in openapi/descriptions.rs",
                op.id
            );
        }
        for (i, (key, _)) in DESCRIPTIONS.iter().enumerate() {
            assert!(
                OPERATIONS.iter().any(|op| op.id == *key),
                "openapi/descriptions.rs describes {key}, which is no operation"
            );
            assert!(
                DESCRIPTIONS[i + 1..].iter().all(|(other, _)| other != key),
                "{key} is described twice"
            );
        }
    }

    /// Every permission a description names is one the role table spells so (read from
    /// its source, as the router's tests read the `Service` methods).
    #[test]
    fn descriptions_name_real_permissions() {
        let roles = include_str!("../../../core/src/role.rs");
        let mut named = 0;
        for (key, description) in DESCRIPTIONS {
            for needed in description.split("Needs `").skip(1) {
                let name = needed.split('`').next().unwrap_or_default();
                assert!(
                    roles.contains(&format!("=> \"{name}\"")),
                    "{key} names the unknown permission {name}"
                );
                named += 1;
            }
        }
        assert!(named > 50, "{named}");
    }
}
