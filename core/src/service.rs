//! The [`Service`]: one async method per operation, named `<resource>_<verb>`. Every method
//! takes the authenticated [`Actor`], checks its permission, validates input, and talks to the
//! repository. Nothing here knows about HTTP.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::auth::{
    Actor, ApiKeySecret, Credentials, JwtVerifier, Principal, hash_secret, is_well_formed_secret,
};
use crate::error::{Error, Result};
use crate::ids::{IdGenerator, IdKind, RandomIds};
use crate::model::*;
use crate::page::{Cursor, Page, PageParams, PageQuery};
use crate::repo::{BootstrapRecords, Repository};
use crate::role::{Permission, Role};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::validate;

/// `last_used_at` is written at most once per this many seconds per key.
const TOUCH_INTERVAL_SECS: i64 = 60;
/// How long an invitation can be accepted.
const INVITATION_TTL_SECS: i64 = 7 * 24 * 3600;

/// Input of [`Service::organization_bootstrap`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    /// Organization name.
    pub org_name: String,
    /// E-mail of the first admin.
    pub admin_email: String,
    /// Display name of the first admin.
    pub admin_name: Option<String>,
}

/// What bootstrap created; `api_key` is the full secret, shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootstrapOutput {
    /// `org_…`
    pub organization_id: String,
    /// `user_…`
    pub user_id: String,
    /// `apikey_…`
    pub key_id: String,
    /// The admin key's secret.
    pub api_key: String,
}

/// The voiceplane application service.
#[derive(Clone)]
pub struct Service {
    repo: Arc<dyn Repository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    jwt: Option<Arc<JwtVerifier>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("jwt", &self.jwt.is_some())
            .finish_non_exhaustive()
    }
}

fn cursor_of(created_at: Timestamp, id: &str) -> Cursor {
    Cursor {
        created_at,
        id: id.to_owned(),
    }
}

impl Service {
    /// A service over `repo` with the system clock, random ids and no JWT verification.
    pub fn new(repo: Arc<dyn Repository>) -> Self {
        Self {
            repo,
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            jwt: None,
        }
    }

    /// Uses `clock` for every timestamp.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `ids` to make identifiers.
    pub fn with_ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = ids;
        self
    }

    /// Accepts bearer tokens verified by `jwt`.
    pub fn with_jwt(mut self, jwt: Option<JwtVerifier>) -> Self {
        self.jwt = jwt.map(Arc::new);
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn id(&self, kind: IdKind) -> String {
        self.ids.generate(kind)
    }

    // ----- health -------------------------------------------------------------------------

    /// Succeeds when the database answers.
    pub async fn health_ready(&self) -> Result<()> {
        self.repo.ping().await
    }

    // ----- authentication -----------------------------------------------------------------

    /// Resolves the request's credentials to an [`Actor`] in the organization named by
    /// `X-Organization-Id`. 401 for missing, malformed, unknown, expired or revoked
    /// credentials; 403 when the credential does not belong to that organization.
    pub async fn authenticate(&self, creds: &Credentials) -> Result<Actor> {
        let api_key = creds
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let bearer = creds
            .bearer
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        if api_key.is_none() && bearer.is_none() {
            return Err(Error::unauthenticated(
                "missing credentials: send an X-API-Key header or an Authorization: Bearer token",
            ));
        }
        let org = creds
            .organization_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Error::invalid("the X-Organization-Id header is required"))?;
        if !IdKind::Organization.matches(org) {
            return Err(Error::invalid(
                "X-Organization-Id is malformed: expected `org_` followed by hex digits",
            ));
        }
        match (api_key, bearer) {
            (Some(secret), _) => self.authenticate_api_key(secret, org).await,
            (None, Some(token)) => self.authenticate_bearer(token, org).await,
            (None, None) => unreachable!("checked above"),
        }
    }

    async fn authenticate_api_key(&self, secret: &str, org: &str) -> Result<Actor> {
        if !is_well_formed_secret(secret) {
            return Err(Error::unauthenticated("API key is malformed"));
        }
        let key = self
            .repo
            .api_key_find_by_hash(&hash_secret(secret))
            .await?
            .ok_or_else(|| Error::unauthenticated("API key is not valid"))?;
        let now = self.now();
        match key.status_at(now) {
            ApiKeyStatus::Revoked => {
                return Err(Error::unauthenticated("API key has been revoked"));
            }
            ApiKeyStatus::Expired => return Err(Error::unauthenticated("API key has expired")),
            ApiKeyStatus::Active => {}
        }
        if key.client_id != org {
            return Err(Error::forbidden(
                "this API key belongs to a different organization than X-Organization-Id",
            ));
        }
        let stale = key
            .last_used_at
            .is_none_or(|t| t.add_seconds(TOUCH_INTERVAL_SECS) <= now);
        if stale {
            // Best effort: a failed touch must not fail the request it describes.
            if let Err(e) = self
                .repo
                .api_key_touch(&key.key_id, now, now.add_seconds(-TOUCH_INTERVAL_SECS))
                .await
            {
                tracing::warn!(key_id = %key.key_id, error = %e, "could not record API key use");
            }
        }
        Ok(Actor {
            organization_id: key.client_id,
            user_id: key.user_id,
            role: key.role,
            principal: Principal::ApiKey(key.key_id),
        })
    }

    async fn authenticate_bearer(&self, token: &str, org: &str) -> Result<Actor> {
        let jwt = self.jwt.as_ref().ok_or_else(|| {
            Error::unauthenticated(
                "bearer tokens are not accepted: this server has no JWT key configured",
            )
        })?;
        let claims = jwt.verify(token)?;
        if !IdKind::User.matches(&claims.sub) {
            return Err(Error::unauthenticated(
                "bearer token `sub` is not a user id (`user_…`)",
            ));
        }
        let membership = self
            .repo
            .membership_find(org, &claims.sub)
            .await?
            .filter(|m| m.status == MemberStatus::Active)
            .ok_or_else(|| Error::forbidden("you are not a member of this organization"))?;
        Ok(Actor {
            organization_id: membership.organization_id,
            user_id: membership.user_id,
            role: membership.role,
            principal: Principal::User,
        })
    }

    // ----- organizations --------------------------------------------------------------------

    /// Creates an organization, its first admin (or reuses the user with that e-mail), the
    /// admin membership and an admin API key, atomically.
    pub async fn organization_bootstrap(&self, input: BootstrapInput) -> Result<BootstrapOutput> {
        let org_name = validate::text("org-name", &input.org_name, 200)?;
        let email = validate::email("admin-email", &input.admin_email)?;
        let admin_name = input
            .admin_name
            .as_deref()
            .map(|n| validate::text("admin-name", n, 200))
            .transpose()?;
        let now = self.now();
        let organization = Organization {
            organization_id: self.id(IdKind::Organization),
            name: org_name,
            created_at: now,
        };
        let (user, user_is_new) = match self.repo.user_find_by_email(&email).await? {
            Some(user) => (user, false),
            None => (
                User {
                    user_id: self.id(IdKind::User),
                    email,
                    name: admin_name,
                    created_at: now,
                    last_login: None,
                },
                true,
            ),
        };
        let membership = Membership {
            membership_id: self.id(IdKind::Membership),
            organization_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            role: Role::Admin,
            status: MemberStatus::Active,
            created_at: now,
        };
        let secret = ApiKeySecret::generate();
        let api_key = ApiKey {
            key_id: self.id(IdKind::ApiKey),
            name: "bootstrap admin key".to_owned(),
            role: Role::Admin,
            prefix: secret.prefix().to_owned(),
            client_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: None,
        };
        let records = BootstrapRecords {
            organization,
            user,
            user_is_new,
            membership,
            api_key,
            secret_hash: secret.hash(),
        };
        self.repo.bootstrap(&records).await?;
        Ok(BootstrapOutput {
            organization_id: records.organization.organization_id,
            user_id: records.user.user_id,
            key_id: records.api_key.key_id,
            api_key: secret.expose().to_owned(),
        })
    }

    // ----- API keys -------------------------------------------------------------------------

    /// Creates an API key acting with `input.role`, which may not exceed the caller's role.
    pub async fn api_key_create(&self, actor: &Actor, input: NewApiKey) -> Result<CreatedApiKey> {
        actor.require(Permission::ApiKeysCreate)?;
        let name = validate::text("name", &input.name, 100)?;
        if input.role > actor.role {
            return Err(Error::forbidden(format!(
                "you cannot create a key with role `{}` above your own role `{}`",
                input.role, actor.role
            )));
        }
        let now = self.now();
        if input.expires_at.is_some_and(|t| t <= now) {
            return Err(Error::invalid("expires_at must be in the future"));
        }
        let secret = ApiKeySecret::generate();
        let key = ApiKey {
            key_id: self.id(IdKind::ApiKey),
            name,
            role: input.role,
            prefix: secret.prefix().to_owned(),
            client_id: actor.organization_id.clone(),
            user_id: actor.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: input.expires_at,
        };
        self.repo.api_key_insert(&key, &secret.hash()).await?;
        Ok(CreatedApiKey {
            key,
            api_key: secret.expose().to_owned(),
        })
    }

    /// The organization's API keys, newest first, revoked ones included.
    pub async fn api_key_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<ApiKey>> {
        actor.require(Permission::ApiKeysRead)?;
        let query = PageQuery::from_params(params, IdKind::ApiKey)?;
        let rows = self
            .repo
            .api_key_list(&actor.organization_id, &query)
            .await?;
        let now = self.now();
        let mut page = Page::from_rows(rows, &query, |k| cursor_of(k.created_at, &k.key_id));
        for key in &mut page.items {
            key.status = key.status_at(now);
        }
        Ok(page)
    }

    // ----- calls ----------------------------------------------------------------------------

    /// Records a call handled by one of the organization's agents.
    pub async fn call_create(&self, actor: &Actor, input: NewCall) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let agent = self.referenced_agent(actor, &input.agent_id).await?;
        let to_number = validate::e164("to_number", &input.to_number)?;
        let from_number = input
            .from_number
            .as_deref()
            .map(|n| validate::e164("from_number", n))
            .transpose()?;
        let now = self.now();
        let call = Call {
            call_sid: self.id(IdKind::Call),
            to_number,
            from_number,
            agent_id: agent.agent_id,
            agent_name: Some(agent.agent_name),
            client_id: actor.organization_id.clone(),
            call_type: input.call_type,
            status: input.status.unwrap_or(CallStatus::Queued),
            recording_enabled: input.recording_enabled.unwrap_or(agent.recording_enabled),
            total_cost: 0.0,
            duration_seconds: None,
            turn_count: 0,
            created_at: now,
            updated_at: now,
            start_time: None,
            end_time: None,
            end_reason: None,
            billing_status: None,
        };
        self.repo.call_insert(&call).await?;
        Ok(call)
    }

    /// One call of the organization.
    pub async fn call_view(&self, actor: &Actor, call_sid: &str) -> Result<Call> {
        actor.require(Permission::CallsRead)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        self.repo
            .call_get(&actor.organization_id, &call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// Changes status, end reason, times, cost, turns or billing status of a call.
    pub async fn call_update(
        &self,
        actor: &Actor,
        call_sid: &str,
        input: CallUpdate,
    ) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let mut call = self.call_view(actor, call_sid).await?;
        if let Some(status) = input.status {
            call.status = status;
        }
        if let Some(reason) = &input.end_reason {
            call.end_reason = Some(validate::text("end_reason", reason, 100)?);
        }
        if let Some(billing) = &input.billing_status {
            call.billing_status = Some(validate::text("billing_status", billing, 50)?);
        }
        if let Some(t) = input.start_time {
            call.start_time = Some(t);
        }
        if let Some(t) = input.end_time {
            call.end_time = Some(t);
        }
        if let (Some(start), Some(end)) = (call.start_time, call.end_time) {
            if end < start {
                return Err(Error::invalid("end_time must not be before start_time"));
            }
            if input.duration_seconds.is_none()
                && (input.start_time.is_some() || input.end_time.is_some())
            {
                call.duration_seconds = Some(start.seconds_until(end));
            }
        }
        if let Some(d) = input.duration_seconds {
            call.duration_seconds = Some(validate::number("duration_seconds", d, 0.0, 1e9)?);
        }
        if let Some(c) = input.total_cost {
            call.total_cost = validate::number("total_cost", c, 0.0, 1e12)?;
        }
        if let Some(t) = input.turn_count {
            if t < 0 {
                return Err(Error::invalid("turn_count must not be negative"));
            }
            call.turn_count = t;
        }
        call.updated_at = self.now().max(call.updated_at);
        self.repo.call_update(&call).await?;
        Ok(call)
    }

    /// The organization's calls, newest first.
    pub async fn call_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<Call>> {
        actor.require(Permission::CallsRead)?;
        let query = PageQuery::from_params(params, IdKind::Call)?;
        let rows = self.repo.call_list(&actor.organization_id, &query).await?;
        Ok(Page::from_rows(rows, &query, |c| {
            cursor_of(c.created_at, &c.call_sid)
        }))
    }

    // ----- tools ----------------------------------------------------------------------------

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

    // ----- knowledge base -------------------------------------------------------------------

    /// Stores a text document, pending processing.
    pub async fn document_create_text(
        &self,
        actor: &Actor,
        input: NewTextDocument,
    ) -> Result<Document> {
        actor.require(Permission::KbWrite)?;
        let name = validate::text("name", &input.name, 200)?;
        if input.text.trim().is_empty() {
            return Err(Error::invalid("text must not be empty"));
        }
        let now = self.now();
        let doc = Document {
            documentation_id: self.id(IdKind::Document),
            name,
            doc_type: DocumentType::Text,
            client_id: actor.organization_id.clone(),
            storage_key: None,
            storage_uri: None,
            content_type: "text/plain; charset=utf-8".to_owned(),
            size: i64::try_from(input.text.len()).unwrap_or(i64::MAX),
            filename: None,
            processing_status: ProcessingStatus::Pending,
            page_count: None,
            vector_count: None,
            last_processed_at: None,
            created_at: now,
            updated_at: now,
        };
        self.repo.document_insert(&doc, Some(&input.text)).await?;
        Ok(doc)
    }

    /// One knowledge-base document of the organization.
    pub async fn document_view(&self, actor: &Actor, documentation_id: &str) -> Result<Document> {
        actor.require(Permission::KbRead)?;
        let id = IdKind::Document.parse(documentation_id)?;
        self.repo
            .document_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("knowledge-base document {id} not found")))
    }

    // ----- agents ---------------------------------------------------------------------------

    /// Creates an agent; referenced tools, documents and phone numbers must exist in the
    /// organization, and the phone numbers get assigned to the new agent.
    pub async fn agent_create(&self, actor: &Actor, input: NewAgent) -> Result<Agent> {
        actor.require(Permission::AgentsWrite)?;
        let agent_name = validate::text("agent_name", &input.agent_name, 200)?;
        let language = validate::text("language", &input.language, 20)?.to_uppercase();
        if !language
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
        {
            return Err(Error::invalid(
                "language must be a language code such as EN or EN-US",
            ));
        }
        let stt_provider = validate::text("stt_provider", &input.stt_provider, 100)?;
        let tts_voice = validate::text("tts_voice", &input.tts_voice, 200)?;
        let llm_provider = validate::text("llm_provider", &input.llm_provider, 100)?;
        let llm_model = validate::text("llm_model", &input.llm_model, 200)?;
        let llm_temperature = validate::number(
            "llm_temperature",
            input.llm_temperature.unwrap_or(0.7),
            0.0,
            2.0,
        )?;
        let voicemail_response_delay = validate::number(
            "voicemail_response_delay",
            input.voicemail_response_delay.unwrap_or(0.0),
            0.0,
            600.0,
        )?;
        let org = &actor.organization_id;
        let custom_tools = self
            .check_references(IdKind::Tool, "custom_tools", &input.custom_tools, |ids| {
                self.repo.tool_ids_existing(org, ids)
            })
            .await?;
        let kb_document_ids = self
            .check_references(
                IdKind::Document,
                "kb_document_ids",
                &input.kb_document_ids,
                |ids| self.repo.document_ids_existing(org, ids),
            )
            .await?;
        let assigned_phone_number_ids = self
            .check_references(
                IdKind::PhoneNumber,
                "assigned_phone_number_ids",
                &input.assigned_phone_number_ids,
                |ids| self.repo.phone_number_ids_existing(org, ids),
            )
            .await?;
        let now = self.now();
        let agent = Agent {
            agent_id: self.id(IdKind::Agent),
            client_id: org.clone(),
            agent_name,
            language,
            stt_provider,
            tts_provider: input.tts_provider,
            tts_voice,
            llm_provider,
            llm_model,
            system_prompt: input.system_prompt,
            speak_first: input.speak_first,
            end_call_tool: input.end_call_tool,
            llm_temperature,
            recording_enabled: input.recording_enabled,
            voicemail_detection: input.voicemail_detection,
            voicemail_response_delay,
            custom_tools,
            kb_document_ids,
            assigned_phone_number_ids,
            created_at: now,
            updated_at: now,
        };
        self.repo.agent_insert(&agent).await?;
        Ok(agent)
    }

    /// One agent of the organization.
    pub async fn agent_view(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
        actor.require(Permission::AgentsRead)?;
        let id = IdKind::Agent.parse(agent_id)?;
        self.repo
            .agent_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("agent {id} not found")))
    }

    /// Validates a list of ids of `kind` named `field` in a body: well-formed, no duplicates,
    /// and every one existing in the organization (else a 400 naming the missing ones).
    async fn check_references<'a, F, Fut>(
        &self,
        kind: IdKind,
        field: &str,
        ids: &'a [String],
        existing: F,
    ) -> Result<Vec<String>>
    where
        F: FnOnce(&'a [String]) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<String>>>,
    {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if ids.len() > 100 {
            return Err(Error::invalid(format!("{field} may list at most 100 ids")));
        }
        let mut seen = BTreeSet::new();
        for id in ids {
            if !kind.matches(id) {
                return Err(Error::invalid(format!(
                    "{field}: `{}` is not a valid {}",
                    crate::ids::truncate(id, 80),
                    kind.field()
                )));
            }
            if !seen.insert(id.as_str()) {
                return Err(Error::invalid(format!("{field}: `{id}` is listed twice")));
            }
        }
        let found: BTreeSet<String> = existing(ids).await?.into_iter().collect();
        let missing: Vec<&str> = ids
            .iter()
            .filter(|id| !found.contains(*id))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(ids.to_vec())
        } else {
            Err(Error::invalid(format!(
                "{field}: {} not found in this organization",
                missing.join(", ")
            )))
        }
    }

    async fn referenced_agent(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
        if !IdKind::Agent.matches(agent_id) {
            return Err(Error::invalid(format!(
                "agent_id `{}` is not a valid agent id",
                crate::ids::truncate(agent_id, 80)
            )));
        }
        self.repo
            .agent_get(&actor.organization_id, agent_id)
            .await?
            .ok_or_else(|| {
                Error::invalid(format!(
                    "agent_id: agent {agent_id} not found in this organization"
                ))
            })
    }

    // ----- phone numbers --------------------------------------------------------------------

    /// Adds a phone number, optionally owned by an integration and assigned to an agent.
    pub async fn phone_number_create(
        &self,
        actor: &Actor,
        input: NewPhoneNumber,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersWrite)?;
        let phone_number = validate::e164("phone_number", &input.phone_number)?;
        let org = &actor.organization_id;
        let integration = match input.integration_id.as_deref() {
            Some(id) => {
                if !IdKind::Integration.matches(id) {
                    return Err(Error::invalid(format!(
                        "integration_id `{}` is not a valid integration id",
                        crate::ids::truncate(id, 80)
                    )));
                }
                Some(self.repo.integration_get(org, id).await?.ok_or_else(|| {
                    Error::invalid(format!(
                        "integration_id: integration {id} not found in this organization"
                    ))
                })?)
            }
            None => None,
        };
        let provider = match (input.provider.as_deref(), &integration) {
            (Some(p), Some(i)) if p.trim() != i.provider => {
                return Err(Error::invalid(format!(
                    "provider `{}` does not match the integration's provider `{}`",
                    crate::ids::truncate(p, 40),
                    i.provider
                )));
            }
            (_, Some(i)) => i.provider.clone(),
            (Some(p), None) => validate::text("provider", p, 50)?,
            (None, None) => {
                return Err(Error::invalid(
                    "provider is required when no integration_id is given",
                ));
            }
        };
        let assigned_agent_id = match input.assigned_agent_id.as_deref() {
            Some(id) => Some(self.referenced_agent(actor, id).await?.agent_id),
            None => None,
        };
        let now = self.now();
        let number = PhoneNumber {
            phone_number_id: self.id(IdKind::PhoneNumber),
            phone_number,
            client_id: org.clone(),
            provider,
            status: if assigned_agent_id.is_some() {
                PhoneNumberStatus::Assigned
            } else {
                PhoneNumberStatus::Unassigned
            },
            supports_inbound: input.supports_inbound.unwrap_or(true),
            supports_outbound: input.supports_outbound.unwrap_or(true),
            assigned_agent_id,
            integration_id: integration.map(|i| i.integration_id),
            created_at: now,
            updated_at: now,
        };
        self.repo.phone_number_insert(&number).await?;
        Ok(number)
    }

    /// One phone number of the organization.
    pub async fn phone_number_view(
        &self,
        actor: &Actor,
        phone_number_id: &str,
    ) -> Result<PhoneNumber> {
        actor.require(Permission::PhoneNumbersRead)?;
        let id = IdKind::PhoneNumber.parse(phone_number_id)?;
        self.repo
            .phone_number_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("phone number {id} not found")))
    }

    // ----- members and invitations ----------------------------------------------------------

    /// Invites an e-mail address to join with `role` (admins only). 409 when a pending
    /// invitation for that address exists.
    pub async fn invitation_create(
        &self,
        actor: &Actor,
        input: NewInvitation,
    ) -> Result<Invitation> {
        actor.require(Permission::InvitationsManage)?;
        let email = validate::email("email", &input.email)?;
        let now = self.now();
        let invitation = Invitation {
            invite_id: self.id(IdKind::Invitation),
            email,
            client_id: actor.organization_id.clone(),
            role: input.role,
            invited_by: actor.user_id.clone(),
            status: InvitationStatus::Pending,
            created_at: now,
            expires_at: now.add_seconds(INVITATION_TTL_SECS),
        };
        self.repo.invitation_insert(&invitation, now).await?;
        Ok(invitation)
    }

    /// Pending, unexpired invitations of the organization, newest first.
    pub async fn invitation_list(&self, actor: &Actor) -> Result<Vec<Invitation>> {
        actor.require(Permission::InvitationsRead)?;
        self.repo
            .invitation_list_pending(&actor.organization_id, self.now())
            .await
    }

    /// Members of the organization, oldest first.
    pub async fn member_list(&self, actor: &Actor) -> Result<Vec<Member>> {
        actor.require(Permission::MembersRead)?;
        self.repo.member_list(&actor.organization_id).await
    }
}
