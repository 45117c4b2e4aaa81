//! Agents.

use std::sync::Arc;

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::cache::ChangeVersions;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    Agent, AgentUpdate, AgentVersion, DeploymentEntry, EventType, NewAgent, Outcome, PublishAgent,
};
use crate::page::{Page, PageParams, PageQuery, SeqCursor, checked_limit};
use crate::role::Permission;
use crate::validate;

/// Validated agent settings shared by create and update.
struct AgentFields {
    agent_name: String,
    language: String,
    stt_provider: String,
    tts_voice: String,
    llm_provider: String,
    llm_model: String,
    llm_temperature: f64,
    voicemail_response_delay: f64,
}

fn language(value: &str) -> Result<String> {
    let language = validate::text("language", value, 20)?.to_uppercase();
    if language
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
    {
        Ok(language)
    } else {
        Err(Error::invalid(
            "language must be a language code such as EN or EN-US",
        ))
    }
}

/// Checks a deployment on its own: 1 to 10 distinct versions, weights 1–100 summing to 100.
fn deployment(entries: Vec<DeploymentEntry>) -> Result<Vec<DeploymentEntry>> {
    if entries.is_empty() || entries.len() > 10 {
        return Err(Error::invalid(format!(
            "deployment must name 1 to 10 versions, got {}",
            entries.len()
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in &entries {
        if !(1..=100).contains(&e.weight) {
            return Err(Error::invalid(format!(
                "deployment: the weight of version {} must be between 1 and 100, got {}",
                e.version, e.weight
            )));
        }
        if !seen.insert(e.version) {
            return Err(Error::invalid(format!(
                "deployment names version {} twice",
                e.version
            )));
        }
    }
    let total: u32 = entries.iter().map(|e| e.weight).sum();
    if total != 100 {
        return Err(Error::invalid(format!(
            "deployment weights must sum to 100, got {total}"
        )));
    }
    Ok(entries)
}

/// The version a call of `agent` runs with: `pinned` when it is one of the agent's published
/// versions (else a 422), or the deployed one its id draws; `None` for an agent never
/// published.
pub(super) fn call_version(
    agent: &Agent,
    call_sid: &str,
    pinned: Option<i64>,
) -> Result<Option<i64>> {
    match pinned {
        Some(v) if (1..=agent.published_version.unwrap_or(0)).contains(&v) => Ok(Some(v)),
        Some(v) => Err(Error::unprocessable(format!(
            "agent {} has no published version {v}",
            agent.agent_id
        ))),
        None => Ok(agent.version_for(call_sid)),
    }
}

impl AgentFields {
    #[allow(clippy::too_many_arguments)]
    fn check(
        agent_name: &str,
        language_code: &str,
        stt_provider: &str,
        tts_voice: &str,
        llm_provider: &str,
        llm_model: &str,
        llm_temperature: f64,
        voicemail_response_delay: f64,
    ) -> Result<Self> {
        Ok(Self {
            agent_name: validate::text("agent_name", agent_name, 200)?,
            language: language(language_code)?,
            stt_provider: validate::text("stt_provider", stt_provider, 100)?,
            tts_voice: validate::text("tts_voice", tts_voice, 200)?,
            llm_provider: validate::text("llm_provider", llm_provider, 100)?,
            llm_model: validate::text("llm_model", llm_model, 200)?,
            llm_temperature: validate::number("llm_temperature", llm_temperature, 0.0, 2.0)?,
            voicemail_response_delay: validate::number(
                "voicemail_response_delay",
                voicemail_response_delay,
                0.0,
                600.0,
            )?,
        })
    }
}

impl Service {
    /// Creates an agent; referenced tools, documents and phone numbers must exist in the
    /// organization, and the phone numbers get assigned to the new agent.
    pub async fn agent_create(&self, actor: &Actor, input: NewAgent) -> Result<Agent> {
        actor.require(Permission::AgentsWrite)?;
        let f = AgentFields::check(
            &input.agent_name,
            &input.language,
            &input.stt_provider,
            &input.tts_voice,
            &input.llm_provider,
            &input.llm_model,
            input.llm_temperature.unwrap_or(0.7),
            input.voicemail_response_delay.unwrap_or(0.0),
        )?;
        let runtime_stream_url = input
            .runtime_stream_url
            .as_deref()
            .map(|url| validate::runtime_stream_url("runtime_stream_url", url))
            .transpose()?;
        let analysis = match input.analysis {
            Some(a) => Some(self.checked_analysis(a).await?),
            None => None,
        };
        let now = self.now();
        let mut agent = Agent {
            runtime_stream_url,
            analysis: None,
            analysis_key: None,
            agent_id: self.id(IdKind::Agent),
            organization_id: actor.organization_id.clone(),
            agent_name: f.agent_name,
            language: f.language,
            stt_provider: f.stt_provider,
            tts_provider: input.tts_provider,
            tts_voice: f.tts_voice,
            llm_provider: f.llm_provider,
            llm_model: f.llm_model,
            system_prompt: input.system_prompt,
            speak_first: input.speak_first,
            end_call_tool: input.end_call_tool,
            llm_temperature: f.llm_temperature,
            recording_enabled: input.recording_enabled,
            voicemail_detection: input.voicemail_detection,
            voicemail_response_delay: f.voicemail_response_delay,
            custom_tools: Self::check_ids(IdKind::Tool, "custom_tools", &input.custom_tools)?,
            kb_document_ids: Self::check_ids(
                IdKind::Document,
                "kb_document_ids",
                &input.kb_document_ids,
            )?,
            assigned_phone_number_ids: Self::check_ids(
                IdKind::PhoneNumber,
                "assigned_phone_number_ids",
                &input.assigned_phone_number_ids,
            )?,
            published_version: None,
            deployment: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        self.apply_analysis(&mut agent, analysis)?;
        let event = self.event(EventType::AgentCreated, &agent, By::Creating(actor))?;
        self.after_write(self.repo.agent_insert(&agent, &event).await)?;
        Ok(agent)
    }

    /// One agent of the organization.
    pub async fn agent_view(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
        Ok(Agent::clone(
            &*self.agent_view_shared(actor, agent_id).await?,
        ))
    }

    /// [`agent_view`](Self::agent_view) without the copy: the agent as this instance keeps
    /// it, the same `Arc` until it changes (or is evicted), so that a caller may keep what it
    /// derives from it (its JSON) beside it.
    pub async fn agent_view_shared(&self, actor: &Actor, agent_id: &str) -> Result<Arc<Agent>> {
        self.agent_view_shared_at(actor, agent_id, None).await
    }

    /// [`agent_view_shared`](Self::agent_view_shared) as of the change versions `at`, read
    /// earlier in the same request (those of its authentication, [`Actor::versions`]) rather
    /// than read again: the answer is then the agent as it was when they were read, or newer.
    /// Only for a request that has changed nothing since: a change it made itself after `at`
    /// was read may not show. `None` reads them now.
    pub async fn agent_view_shared_at(
        &self,
        actor: &Actor,
        agent_id: &str,
        at: Option<ChangeVersions>,
    ) -> Result<Arc<Agent>> {
        actor.require(Permission::AgentsRead)?;
        IdKind::Agent.check(agent_id)?;
        let id = agent_id;
        let version = match at {
            Some(at) => at.agents,
            None => self.repo.change_versions().await?.agents,
        };
        self.agent_cached_at(&actor.organization_id, id, version)
            .await?
            .ok_or_else(|| Error::not_found(format!("agent {id} not found")))
    }

    /// The organization's agent `id`, from this instance's cache while no agent has changed
    /// anywhere since it was read.
    pub(super) async fn agent_cached(&self, org: &str, id: &str) -> Result<Option<Arc<Agent>>> {
        let version = self.repo.change_versions().await?.agents;
        self.agent_cached_at(org, id, version).await
    }

    /// [`Self::agent_cached`] at the agents' change `version`, read earlier in the request.
    pub(super) async fn agent_cached_at(
        &self,
        org: &str,
        id: &str,
        version: i64,
    ) -> Result<Option<Arc<Agent>>> {
        Ok(self
            .agents
            .get_or_read(id, version, || self.repo.agent_get(org, id))
            .await?
            // Kept by id: one kept for another organization is not this one's.
            .filter(|a| a.organization_id == org))
    }

    /// The organization's agents, newest first.
    pub async fn agent_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<Agent>> {
        actor.require(Permission::AgentsRead)?;
        let query = PageQuery::from_params(params, IdKind::Agent)?;
        let rows = self.repo.agent_list(&actor.organization_id, &query).await?;
        Ok(Page::from_rows(rows, &query, |a| {
            cursor_of(a.created_at, &a.agent_id)
        }))
    }

    /// Changes the given fields of an agent. The id lists, when given, replace the current
    /// ones; numbers left out of `assigned_phone_number_ids` are unassigned.
    pub async fn agent_update(
        &self,
        actor: &Actor,
        agent_id: &str,
        input: AgentUpdate,
    ) -> Result<Agent> {
        actor.require(Permission::AgentsWrite)?;
        let id = IdKind::Agent.parse(agent_id)?;
        let custom_tools = input
            .custom_tools
            .as_deref()
            .map(|ids| Self::check_ids(IdKind::Tool, "custom_tools", ids))
            .transpose()?;
        let kb_document_ids = input
            .kb_document_ids
            .as_deref()
            .map(|ids| Self::check_ids(IdKind::Document, "kb_document_ids", ids))
            .transpose()?;
        let assigned = input
            .assigned_phone_number_ids
            .as_deref()
            .map(|ids| Self::check_ids(IdKind::PhoneNumber, "assigned_phone_number_ids", ids))
            .transpose()?;
        let runtime_stream_url = input
            .runtime_stream_url
            .as_ref()
            .map(|url| {
                url.as_deref()
                    .map(|url| validate::runtime_stream_url("runtime_stream_url", url))
                    .transpose()
            })
            .transpose()?;
        let new_deployment = input.deployment.map(deployment).transpose()?;
        let analysis = match input.analysis {
            Some(Some(a)) => Some(Some(self.checked_analysis(a).await?)),
            Some(None) => Some(None),
            None => None,
        };
        let now = self.now();
        let service = self.clone();
        let change = Box::new(move |agent: &mut Agent| {
            if let Some(analysis) = analysis {
                service.apply_analysis(agent, analysis)?;
            }
            if let Some(url) = runtime_stream_url {
                agent.runtime_stream_url = url;
            }
            if let Some(entries) = new_deployment {
                // Versions count 1, 2, … and are never deleted: each up to the latest exists.
                let latest = agent.published_version.unwrap_or(0);
                if let Some(missing) = entries.iter().find(|e| !(1..=latest).contains(&e.version)) {
                    return Err(Error::unprocessable(format!(
                        "deployment: agent {} has no published version {}",
                        agent.agent_id, missing.version
                    )));
                }
                agent.deployment = entries;
            }
            let f = AgentFields::check(
                input.agent_name.as_deref().unwrap_or(&agent.agent_name),
                input.language.as_deref().unwrap_or(&agent.language),
                input.stt_provider.as_deref().unwrap_or(&agent.stt_provider),
                input.tts_voice.as_deref().unwrap_or(&agent.tts_voice),
                input.llm_provider.as_deref().unwrap_or(&agent.llm_provider),
                input.llm_model.as_deref().unwrap_or(&agent.llm_model),
                input.llm_temperature.unwrap_or(agent.llm_temperature),
                input
                    .voicemail_response_delay
                    .unwrap_or(agent.voicemail_response_delay),
            )?;
            agent.agent_name = f.agent_name;
            agent.language = f.language;
            agent.stt_provider = f.stt_provider;
            agent.tts_voice = f.tts_voice;
            agent.llm_provider = f.llm_provider;
            agent.llm_model = f.llm_model;
            agent.llm_temperature = f.llm_temperature;
            agent.voicemail_response_delay = f.voicemail_response_delay;
            if let Some(p) = input.tts_provider {
                agent.tts_provider = p;
            }
            if let Some(p) = input.system_prompt {
                agent.system_prompt = p;
            }
            if let Some(v) = input.speak_first {
                agent.speak_first = v;
            }
            if let Some(v) = input.end_call_tool {
                agent.end_call_tool = v;
            }
            if let Some(v) = input.recording_enabled {
                agent.recording_enabled = v;
            }
            if let Some(v) = input.voicemail_detection {
                agent.voicemail_detection = v;
            }
            if let Some(ids) = custom_tools {
                agent.custom_tools = ids;
            }
            if let Some(ids) = kb_document_ids {
                agent.kb_document_ids = ids;
            }
            if let Some(ids) = assigned {
                agent.assigned_phone_number_ids = ids;
            }
            agent.updated_at = now.max(agent.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::AgentUpdated, By::changing(actor));
        self.after_write(
            self.repo
                .agent_update(&actor.organization_id, &id, change, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("agent {id} not found")))
    }

    /// Deletes an agent; its phone numbers become unassigned. Past calls keep its id and name.
    pub async fn agent_delete(&self, actor: &Actor, agent_id: &str) -> Result<Outcome<Agent>> {
        actor.require(Permission::AgentsWrite)?;
        let id = IdKind::Agent.parse(agent_id)?;
        let agent = self
            .after_write(
                self.repo
                    .agent_delete(
                        &actor.organization_id,
                        &id,
                        self.now(),
                        &self.event_stamp(EventType::AgentDeleted, By::Deleting(actor)),
                    )
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("agent {id} not found")))?;
        Ok(Outcome::new(agent, "agent deleted"))
    }

    /// Publishes the agent's configuration as its next version and deploys it to all calls.
    pub async fn agent_publish(
        &self,
        actor: &Actor,
        agent_id: &str,
        input: PublishAgent,
    ) -> Result<AgentVersion> {
        actor.require(Permission::AgentsWrite)?;
        let id = IdKind::Agent.parse(agent_id)?;
        let description = input
            .description
            .as_deref()
            .map(|d| validate::text("description", d, 1000))
            .transpose()?;
        let stamp = self.event_stamp(EventType::AgentPublished, By::Creating(actor));
        self.after_write(
            self.repo
                .agent_publish(&actor.organization_id, &id, description, &stamp)
                .await,
        )?
        .ok_or_else(|| Error::not_found(format!("agent {id} not found")))
    }

    /// The agent's published versions, newest first.
    pub async fn agent_version_list(
        &self,
        actor: &Actor,
        agent_id: &str,
        params: &PageParams,
    ) -> Result<Page<AgentVersion>> {
        actor.require(Permission::AgentsRead)?;
        let id = IdKind::Agent.parse(agent_id)?;
        let limit = checked_limit(params)?;
        let before = params
            .cursor
            .as_deref()
            .map(SeqCursor::decode)
            .transpose()?
            .map(|c| c.0);
        let org = &actor.organization_id;
        if self.repo.agent_get(org, &id).await?.is_none() {
            return Err(Error::not_found(format!("agent {id} not found")));
        }
        let rows = self
            .repo
            .agent_version_list(org, &id, before, u64::from(limit) + 1)
            .await?;
        Ok(Page::from_rows_by(rows, limit, |v| {
            SeqCursor(v.version).encode()
        }))
    }

    /// One published version of the agent.
    pub async fn agent_version_view(
        &self,
        actor: &Actor,
        agent_id: &str,
        version: &str,
    ) -> Result<AgentVersion> {
        actor.require(Permission::AgentsRead)?;
        let id = IdKind::Agent.parse(agent_id)?;
        let number = version
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "version `{}` is not a version number (1, 2, …)",
                    crate::ids::truncate(version, 20)
                ))
            })?;
        self.version(&actor.organization_id, &id, number)
            .await?
            .map(|v| AgentVersion::clone(&v))
            .ok_or_else(|| Error::not_found(format!("agent {id} has no version {number}")))
    }

    /// A published version, from this instance's cache when it has read it before.
    pub(super) async fn version(
        &self,
        org: &str,
        agent_id: &str,
        version: i64,
    ) -> Result<Option<Arc<AgentVersion>>> {
        let key = (org.to_owned(), agent_id.to_owned(), version);
        if let Some(found) = self.versions.get(&key) {
            return Ok(Some(found));
        }
        let Some(read) = self.repo.agent_version_get(org, agent_id, version).await? else {
            return Ok(None);
        };
        let read = Arc::new(read);
        self.versions.insert(key, read.clone());
        Ok(Some(read))
    }

    /// The agent `call` runs with: the version it was given, applied to the agent as it is
    /// (its identity and numbers), else the agent as it is; `None` once the agent is gone.
    pub(super) async fn call_agent(&self, call: &crate::model::Call) -> Result<Option<Agent>> {
        let org = &call.organization_id;
        let Some(agent) = self.agent_cached(org, &call.agent_id).await? else {
            return Ok(None);
        };
        Ok(Some(
            self.versioned(Agent::clone(&agent), call.agent_version)
                .await?,
        ))
    }

    /// `agent` as a call given `version` runs it: that version's configuration on the agent's
    /// identity, or the agent itself (its draft) without one.
    pub(super) async fn versioned(&self, agent: Agent, version: Option<i64>) -> Result<Agent> {
        let Some(version) = version else {
            return Ok(agent);
        };
        Ok(
            match self
                .version(&agent.organization_id, &agent.agent_id, version)
                .await?
            {
                Some(v) => agent.with_config(v.config.clone()),
                None => agent,
            },
        )
    }
}
