//! Post-call analysis: an agent's analysis settings checked (its API key sealed), the durable
//! `call.analyze` job that asks the model and stores its answer, and the re-run.
//!
//! A job is written with the change that makes a call due (see the repository): a completed
//! call with a transcript, of an agent with `analysis`. Each attempt sends one request; a
//! transport failure, an error status, or an answer that is not JSON following the schema is
//! retried, and after [`crate::model::ANALYZE_ATTEMPTS`] the call's analysis is `failed` with the last reason.
//! None of it ever reaches an API caller as an error: the call is answered as it stands.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;

use super::{By, Service};
use crate::analysis::{CompletionRequest, read_answer, request_body, response_schema, transcript};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler};
use crate::model::{
    Agent, AgentAnalysis, AnalysisField, AnalysisFieldType, AnalysisStatus, Call, CallAnalysis,
    DEFAULT_MAX_TRANSCRIPT_CHARS, EventType, NewAgentAnalysis, NewAnalysisField,
};
use crate::role::Permission;
use crate::validate;

/// Most fields an agent extracts.
const MAX_FIELDS: usize = 20;

/// Most transcript messages read for one analysis (the transcript is cut to
/// `max_transcript_chars` anyway).
const MAX_MESSAGES: u64 = 10_000;

/// An agent's analysis as checked: the settings shown, and the key to seal when one was given.
pub(super) struct CheckedAnalysis {
    settings: AgentAnalysis,
    api_key: Option<String>,
}

fn snake_case(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64
}

fn checked_field(i: usize, f: NewAnalysisField) -> Result<AnalysisField> {
    let at = |name: &str| format!("analysis.fields[{i}].{name}");
    if !snake_case(&f.name) {
        return Err(Error::invalid(format!(
            "{} must be snake_case: a lower-case letter, then lower-case letters, digits or \
             `_`, at most 64 characters",
            at("name")
        )));
    }
    let description = validate::text(&at("description"), &f.description, 500)?;
    let choices = match (f.field_type, f.choices) {
        (AnalysisFieldType::Enum, Some(choices)) => {
            if choices.is_empty() || choices.len() > 50 {
                return Err(Error::invalid(format!(
                    "{} must hold 1 to 50 values",
                    at("choices")
                )));
            }
            let mut seen = HashSet::new();
            let mut checked = Vec::with_capacity(choices.len());
            for c in &choices {
                let c = validate::text(&at("choices"), c, 100)?;
                if !seen.insert(c.clone()) {
                    return Err(Error::invalid(format!(
                        "{} holds `{c}` twice",
                        at("choices")
                    )));
                }
                checked.push(c);
            }
            Some(checked)
        }
        (AnalysisFieldType::Enum, None) => {
            return Err(Error::invalid(format!(
                "{} is required for a field of type enum",
                at("choices")
            )));
        }
        (_, Some(_)) => {
            return Err(Error::invalid(format!(
                "{} is only for fields of type enum",
                at("choices")
            )));
        }
        (_, None) => None,
    };
    Ok(AnalysisField {
        name: f.name,
        field_type: f.field_type,
        description,
        choices,
        required: f.required,
    })
}

impl Service {
    /// Checks an agent's analysis settings: the fields, the criteria, the server (an absolute
    /// http(s) URL that the analysis target policy allows) and the model.
    pub(super) async fn checked_analysis(
        &self,
        input: NewAgentAnalysis,
    ) -> Result<CheckedAnalysis> {
        if input.fields.len() > MAX_FIELDS {
            return Err(Error::invalid(format!(
                "analysis.fields must hold at most {MAX_FIELDS} fields, got {}",
                input.fields.len()
            )));
        }
        let fields = input
            .fields
            .into_iter()
            .enumerate()
            .map(|(i, f)| checked_field(i, f))
            .collect::<Result<Vec<_>>>()?;
        let mut names = HashSet::new();
        if let Some(twice) = fields.iter().find(|f| !names.insert(f.name.as_str())) {
            return Err(Error::invalid(format!(
                "analysis.fields names `{}` twice",
                twice.name
            )));
        }
        let success_criteria = input
            .success_criteria
            .as_deref()
            .map(|c| validate::text("analysis.success_criteria", c, 2000))
            .transpose()?;
        if !input.summary && success_criteria.is_none() && fields.is_empty() {
            return Err(Error::invalid(
                "analysis asks for nothing: set summary, success_criteria or fields",
            ));
        }
        let base_url = self
            .check_target_url(&input.base_url, &self.analysis_policy)
            .await
            .map_err(|e| match e {
                Error::InvalidInput(m) => {
                    Error::InvalidInput(m.replacen("url", "analysis.base_url", 1))
                }
                other => other,
            })?;
        let model = validate::text("analysis.model", &input.model, 200)?;
        let api_key = input
            .api_key
            .as_deref()
            .map(|k| validate::text("analysis.api_key", k, 500))
            .transpose()?;
        let max_transcript_chars = input
            .max_transcript_chars
            .unwrap_or(DEFAULT_MAX_TRANSCRIPT_CHARS);
        if !(1_000..=1_000_000).contains(&max_transcript_chars) {
            return Err(Error::invalid(
                "analysis.max_transcript_chars must be between 1000 and 1000000",
            ));
        }
        Ok(CheckedAnalysis {
            settings: AgentAnalysis {
                summary: input.summary,
                success_criteria,
                fields,
                base_url,
                model,
                api_key_set: false,
                max_transcript_chars,
            },
            api_key,
        })
    }

    /// Applies checked settings (`None`: analysis off) to `agent`: a new key is sealed for
    /// it, an absent one keeps the stored key, and turning analysis off forgets it.
    pub(super) fn apply_analysis(
        &self,
        agent: &mut Agent,
        checked: Option<CheckedAnalysis>,
    ) -> Result<()> {
        let Some(CheckedAnalysis {
            mut settings,
            api_key,
        }) = checked
        else {
            agent.analysis = None;
            agent.analysis_key = None;
            return Ok(());
        };
        if let Some(key) = api_key {
            agent.analysis_key = Some(
                self.cipher()?
                    .seal(key.as_bytes(), agent.agent_id.as_bytes())?,
            );
        }
        settings.api_key_set = agent.analysis_key.is_some();
        agent.analysis = Some(settings);
        Ok(())
    }

    /// Analyses the call again: 202 with the call `pending` (its job is written with it).
    pub async fn call_analyze(&self, actor: &Actor, call_sid: &str) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        let org = actor.organization_id.clone();
        let call = self
            .repo
            .call_get(&org, &call_sid)
            .await?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))?;
        let analyses = self
            .repo
            .agent_get(&org, &call.agent_id)
            .await?
            .is_some_and(|a| a.analysis.is_some());
        if !analyses {
            return Err(Error::unprocessable(format!(
                "call {call_sid}'s agent has no analysis settings; set the agent's analysis \
                 first"
            )));
        }
        if self
            .repo
            .call_message_list(&org, &call_sid, 0, 1)
            .await?
            .is_empty()
        {
            return Err(Error::unprocessable(format!(
                "call {call_sid} has no transcript to analyse"
            )));
        }
        let now = self.now();
        let change = Box::new(move |call: &mut Call| {
            call.analysis_status = Some(AnalysisStatus::Pending);
            call.analysis_error = None;
            call.updated_at = now.max(call.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::CallUpdated, By::changing(actor));
        self.after_write(self.repo.call_update(&org, &call_sid, change, &stamp).await)?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// One attempt at analysing `call`: the model's checked answer, or why there is none and
    /// whether another attempt may help.
    async fn analysis_of(&self, call: &Call) -> std::result::Result<CallAnalysis, JobError> {
        let org = &call.organization_id;
        let agent = self
            .repo
            .agent_get(org, &call.agent_id)
            .await?
            .ok_or_else(|| JobError::Fail("the call's agent no longer exists".to_owned()))?;
        let settings = agent.analysis.clone().ok_or_else(|| {
            JobError::Fail("the call's agent no longer has analysis settings".to_owned())
        })?;
        let api_key = match &agent.analysis_key {
            Some(sealed) => Some(
                String::from_utf8(self.cipher()?.open(sealed, agent.agent_id.as_bytes())?)
                    .map_err(|_| JobError::Fail("the stored API key is not text".to_owned()))?,
            ),
            None => None,
        };
        let messages = self
            .repo
            .call_message_list(org, &call.call_sid, 0, MAX_MESSAGES)
            .await?;
        if messages.is_empty() {
            return Err(JobError::Fail("the call has no transcript".to_owned()));
        }
        let max = usize::try_from(settings.max_transcript_chars).unwrap_or(usize::MAX);
        let schema = response_schema(&settings);
        let body = request_body(&settings, &schema, &transcript(&messages, max));
        let request = CompletionRequest {
            base_url: settings.base_url.clone(),
            api_key,
            body,
        };
        let analyzer = self
            .analyzer
            .as_ref()
            .ok_or_else(|| JobError::Retry("no analysis client is configured".to_owned()))?;
        let content = analyzer.complete(&request).await.map_err(|e| match e {
            Error::Upstream(sentence) => JobError::Retry(sentence),
            other => JobError::from(other),
        })?;
        read_answer(&settings, &schema, &content, self.now()).map_err(JobError::Retry)
    }

    /// Runs a `call.analyze` job: stores the answer, or after the last attempt (or a failure
    /// no retry can fix) marks the analysis `failed` with the reason.
    async fn analyze_job(&self, job: &Job) -> std::result::Result<Done, JobError> {
        #[derive(Deserialize)]
        struct Payload {
            organization_id: String,
            call_sid: String,
        }
        let p: Payload = serde_json::from_value(job.payload.clone())
            .map_err(|e| JobError::Fail(format!("bad payload: {e}")))?;
        let Some(call) = self.repo.call_get(&p.organization_id, &p.call_sid).await? else {
            return Ok(Done::Finished);
        };
        if call.analysis_status != Some(AnalysisStatus::Pending) {
            return Ok(Done::Finished);
        }
        let outcome = self.analysis_of(&call).await;
        let reason = match outcome {
            Ok(analysis) => {
                self.analysis_stored(&call, Ok(analysis)).await?;
                return Ok(Done::Finished);
            }
            Err(JobError::Retry(reason)) if job.attempts < job.max_attempts => {
                return Err(JobError::Retry(reason));
            }
            Err(JobError::Retry(reason) | JobError::Fail(reason)) => reason,
        };
        tracing::info!(call_sid = %call.call_sid, attempts = job.attempts, %reason, "call analysis failed");
        self.analysis_stored(&call, Err(reason)).await?;
        Ok(Done::Finished)
    }

    /// Records the end of a call's analysis, `call.analyzed`.
    async fn analysis_stored(
        &self,
        call: &Call,
        result: std::result::Result<CallAnalysis, String>,
    ) -> Result<()> {
        let now = self.now();
        let change = Box::new(move |call: &mut Call| {
            // A re-run asked while this attempt ran wants a fresh answer: leave it pending.
            if call.analysis_status != Some(AnalysisStatus::Pending) {
                return Ok(());
            }
            match result {
                Ok(analysis) => {
                    call.analysis_status = Some(AnalysisStatus::Completed);
                    call.analysis = Some(analysis);
                    call.analysis_error = None;
                }
                Err(reason) => {
                    call.analysis_status = Some(AnalysisStatus::Failed);
                    call.analysis_error = Some(reason);
                }
            }
            call.updated_at = now.max(call.updated_at);
            Ok(())
        });
        let stamp = self.event_stamp(EventType::CallAnalyzed, By::System);
        self.after_write(
            self.repo
                .call_update(&call.organization_id, &call.call_sid, change, &stamp)
                .await,
        )?;
        Ok(())
    }

    /// Sends analyses to `client` (one per instance; without one, analyses stay `pending`
    /// for an instance that has one), to servers `policy` allows (as webhook endpoints, the
    /// client should follow the same policy when it connects).
    pub fn with_analyzer(
        mut self,
        client: Arc<dyn crate::analysis::ChatCompletions>,
        policy: crate::webhooks::TargetPolicy,
    ) -> Self {
        self.analyzer = Some(client);
        self.analysis_policy = policy;
        self
    }
}

/// The handler of [`crate::model::CALL_ANALYZE`] jobs.
pub(super) struct AnalyzeCall(pub(super) Service);

#[async_trait]
impl JobHandler for AnalyzeCall {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        self.0.analyze_job(job).await
    }

    /// Models answer slowly: the HTTP client's own limit (60 s by default) plus the reads.
    fn timeout(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(90))
    }
}
