//! The [`Service`]: one async method per operation, named `<resource>_<verb>`. Every method
//! takes the authenticated [`Actor`], checks its permission, validates input, and talks to the
//! repository. Nothing here knows about HTTP.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::auth::{Actor, JwtVerifier};
use crate::blob::BlobStore;
use crate::cache::VersionedCache;
use crate::crypto::CredentialCipher;
use crate::error::{Error, Result};
use crate::ids::{IdGenerator, IdKind, RandomIds};
use crate::jobs::JobWaker;
use crate::model::{
    Agent, AuditActor, AuditEntry, AuditStamp, AuditedChange, ChangeKind, Event, EventStamp,
    EventType, audit_snapshot,
};
use crate::page::Cursor;
use crate::repo::Repository;
use crate::signing::RecordingLinks;
use crate::telephony::TelephonyValidator;
use crate::telephony::gateway::{TelephonyGateway, WebhookUrls};
use crate::time::{Clock, SystemClock, Timestamp};

mod agents;
mod analysis;
mod api_keys;
mod audit;
pub use audit::AUDIT_SWEEP;
mod auth;
mod bootstrap;
pub use bootstrap::{BootstrapInput, BootstrapOutput};
mod calls;
pub use calls::{AudioFormat, RecordingDownload, STREAM_URL_TTL_SECS, SignedRead};
mod deliveries;
pub use deliveries::DEFAULT_RETRY_SCHEDULE;
mod documents;
pub use documents::{DOCUMENT_PROCESS, DocumentName, LaterName, NewDocument};
mod campaigns;
mod events;
pub use campaigns::{CAMPAIGN_PACE, MAX_CSV_BYTES, RecipientsBody, pace_key};
mod idempotency;
mod integrations;
mod jobs;
pub use jobs::{EVENTS_SWEEP, TELEPHONY_LANE};
mod members;
mod phone_numbers;
mod retention;
pub use retention::{BLOB_DELETE, RETENTION_SWEEP};
mod suppressions;
mod telephony;
pub use telephony::{
    CALL_DIAL, CALLS_RECONCILE, CallSession, DialSettings, RuntimeCall, RuntimeEnd, TELNYX_ANSWER,
    TELNYX_REJECT, TelnyxWebhook, TwilioWebhook,
};
mod tools;
mod usage;
mod voices;
mod webhooks;

/// Published versions by organization, agent and version.
type VersionCache =
    quick_cache::sync::Cache<(String, String, i64), Arc<crate::model::AgentVersion>>;

/// The voiceplane application service.
#[derive(Clone)]
pub struct Service {
    repo: Arc<dyn Repository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    jwt: Option<Arc<JwtVerifier>>,
    telephony: Option<Arc<dyn TelephonyValidator>>,
    /// The providers' APIs and where their webhooks reach this server, to connect numbers.
    gateway: Option<(Arc<dyn TelephonyGateway>, Arc<dyn WebhookUrls>)>,
    /// How outbound calls are placed.
    dialing: telephony::DialSettings,
    cipher: Option<Arc<CredentialCipher>>,
    voices: crate::voice::VoiceProviders,
    blobs: Option<Arc<dyn BlobStore>>,
    recording_links: Option<Arc<dyn RecordingLinks>>,
    jobs: JobWaker,
    event_retention: std::time::Duration,
    /// How long audit entries are kept.
    audit_retention: std::time::Duration,
    sweep_interval: std::time::Duration,
    /// How often the retention policies are applied.
    retention_sweep_interval: std::time::Duration,
    webhooks: WebhookDelivery,
    knowledge: documents::Knowledge,
    /// How long parsing one document may take.
    knowledge_timeout: std::time::Duration,
    /// The API keys this instance has read, by the hash of their secret (shared by clones).
    keys: Arc<VersionedCache<crate::model::ApiKey>>,
    /// The agents this instance has read, by id (shared by clones).
    agents: Arc<VersionedCache<Agent>>,
    /// The phone numbers incoming calls were routed by, by organization and number, kept at
    /// the agents' version, which every change of a number raises (shared by clones).
    numbers: Arc<VersionedCache<crate::model::PhoneNumber>>,
    /// The routes of provider webhooks, by integration id, at the same version (shared by
    /// clones).
    routes: Arc<VersionedCache<telephony::Route>>,
    /// Published versions this instance has read, by agent id and version: a version never
    /// changes, so nothing invalidates them (shared by clones).
    versions: Arc<VersionCache>,
    /// Where post-call analyses are sent; without one, they wait (pending).
    analyzer: Option<Arc<dyn crate::analysis::ChatCompletions>>,
    /// Which addresses analysis servers may have.
    analysis_policy: crate::webhooks::TargetPolicy,
    /// The built-in voice runtime, when this server runs one.
    runtime: Option<crate::runtime::RuntimeSettings>,
}

/// How the service delivers webhooks.
#[derive(Clone)]
struct WebhookDelivery {
    /// Sends deliveries; without one, nothing is delivered (deliveries stay pending).
    sender: Option<Arc<dyn crate::webhooks::WebhookSender>>,
    /// Where endpoints may point.
    policy: crate::webhooks::TargetPolicy,
    /// Resolves an endpoint's host when it is created or changed, within the timeout; none:
    /// hostnames are judged at delivery only.
    resolver: Option<(Arc<dyn crate::webhooks::Resolver>, std::time::Duration)>,
    /// The delays between attempts.
    schedule: Vec<std::time::Duration>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("jwt", &self.jwt.is_some())
            .finish_non_exhaustive()
    }
}

/// Who causes the change an event records, and so what its audit entry says: the system (a
/// job: no entry), or a caller creating, deleting or updating the resource (the resource as it
/// was before, as the API returns it, to compare field by field).
pub(crate) enum By<'a> {
    /// A job, not a caller: no audit entry.
    System,
    /// A caller creates the resource: every field is new.
    Creating(&'a Actor),
    /// A caller deletes the resource: every field is gone.
    Deleting(&'a Actor),
    /// A caller changes the resource, which was this before.
    Updating(&'a Actor, serde_json::Value),
}

impl<'a> By<'a> {
    /// `actor` changes a resource the repository reads inside the write
    /// ([`EventStamp::updated`] records what it was).
    fn changing(actor: &'a Actor) -> Self {
        Self::Updating(actor, serde_json::Value::Null)
    }

    /// `actor` changes `before`.
    fn updating<T: serde::Serialize>(actor: &'a Actor, before: &T) -> Result<Self> {
        Ok(Self::Updating(actor, audit_snapshot(before)?))
    }
}

/// What the agents an instance keeps may weigh together: a prompt can be as long as a request
/// body, so the agent cache is bounded by bytes, not by count.
const AGENT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// About the bytes an agent takes in memory: its text, and a fixed share for the rest.
fn agent_bytes(a: &Agent) -> usize {
    let ids = |list: &[String]| list.iter().map(String::len).sum::<usize>();
    512 + a.system_prompt.len()
        + a.agent_name.len()
        + ids(&a.custom_tools)
        + ids(&a.kb_document_ids)
        + ids(&a.assigned_phone_number_ids)
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
            telephony: None,
            gateway: None,
            dialing: telephony::DialSettings::default(),
            cipher: None,
            voices: crate::voice::VoiceProviders::default(),
            blobs: None,
            recording_links: None,
            jobs: JobWaker::default(),
            event_retention: std::time::Duration::from_secs(30 * 24 * 3600),
            audit_retention: std::time::Duration::from_secs(365 * 24 * 3600),
            sweep_interval: std::time::Duration::from_secs(3600),
            retention_sweep_interval: std::time::Duration::from_secs(3600),
            webhooks: WebhookDelivery {
                sender: None,
                policy: crate::webhooks::TargetPolicy::default(),
                resolver: None,
                schedule: deliveries::DEFAULT_RETRY_SCHEDULE
                    .iter()
                    .map(|s| std::time::Duration::from_secs(*s))
                    .collect(),
            },
            knowledge: documents::Knowledge::default(),
            knowledge_timeout: std::time::Duration::from_secs(60),
            keys: Arc::new(VersionedCache::new(10_000, |_| 1)),
            agents: Arc::new(VersionedCache::new(AGENT_CACHE_BYTES, agent_bytes)),
            numbers: Arc::new(VersionedCache::new(10_000, |_| 1)),
            routes: Arc::new(VersionedCache::new(10_000, |_| 1)),
            versions: Arc::new(quick_cache::sync::Cache::new(1_000)),
            analyzer: None,
            analysis_policy: crate::webhooks::TargetPolicy::default(),
            runtime: None,
        }
    }

    /// Streams calls whose agent and organization name no `runtime_stream_url` to the
    /// built-in runtime (`/runtime/{provider}/{call_sid}`) when `settings.enabled`, with the
    /// per-call tokens `settings` derives. Without it, such calls are refused.
    pub fn with_runtime(mut self, settings: crate::runtime::RuntimeSettings) -> Self {
        self.runtime = Some(settings);
        self
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

    /// Probes telephony credentials with `validator` when integrations are validated.
    pub fn with_telephony(mut self, validator: Arc<dyn TelephonyValidator>) -> Self {
        self.telephony = Some(validator);
        self
    }

    /// Connects numbers at their providers through `gateway`, pointing them at the webhooks
    /// `urls` names; without it, connecting is unavailable (503).
    pub fn with_telephony_gateway(
        mut self,
        gateway: Arc<dyn TelephonyGateway>,
        urls: Arc<dyn WebhookUrls>,
    ) -> Self {
        self.gateway = Some((gateway, urls));
        self
    }

    /// Encrypts integration credentials at rest with `cipher`; without one, integrations
    /// cannot be created (503).
    pub fn with_cipher(mut self, cipher: CredentialCipher) -> Self {
        self.cipher = Some(Arc::new(cipher));
        self
    }

    /// Searches voices and uses provider_two's shared library through `providers`; a
    /// provider left `None` answers 503 "… is not configured".
    pub fn with_voice_providers(mut self, providers: crate::voice::VoiceProviders) -> Self {
        self.voices = providers;
        self
    }

    /// Stores recordings and knowledge-base files in `blobs`; without a store those
    /// operations answer 503.
    pub fn with_blobs(mut self, blobs: Arc<dyn BlobStore>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Makes and checks the links that read a recording through this server, for stores that
    /// cannot presign; without them, such stores' recordings cannot be streamed (503).
    pub fn with_recording_links(mut self, links: Arc<dyn RecordingLinks>) -> Self {
        self.recording_links = Some(links);
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn id(&self, kind: IdKind) -> String {
        self.ids.generate(kind)
    }

    /// A new event's id, type and time, for a write that reads its data inside its own
    /// transaction; with the audit stamp of the caller who makes the change, if one does.
    fn event_stamp(&self, event_type: EventType, by: By<'_>) -> EventStamp {
        let created_at = self.now();
        let preconditions = match &by {
            By::Deleting(actor) | By::Updating(actor, _) => actor.request.preconditions.clone(),
            By::System | By::Creating(_) => Default::default(),
        };
        let audit = match by {
            By::System => None,
            By::Creating(actor) => Some(self.audit_stamp(actor, ChangeKind::Created, created_at)),
            By::Deleting(actor) => Some(self.audit_stamp(actor, ChangeKind::Deleted, created_at)),
            By::Updating(actor, before) => {
                Some(self.audit_stamp(actor, ChangeKind::Updated(before), created_at))
            }
        };
        EventStamp {
            event_id: self.id(IdKind::Event),
            event_type,
            created_at,
            audit,
            preconditions,
        }
    }

    /// Who and where from, for the audit entry of a change `actor` makes at `created_at`.
    fn audit_stamp(&self, actor: &Actor, change: ChangeKind, created_at: Timestamp) -> AuditStamp {
        AuditStamp {
            audit_id: self.id(IdKind::Audit),
            actor: AuditActor::of(actor),
            request_id: actor.request.request_id.clone(),
            // Written out only here: most requests that carry it write no audit entry.
            ip: actor.request.ip.map(|ip| ip.to_string()),
            created_at,
            change,
        }
    }

    /// The audit entry of a change `actor` makes that records no event, with its `changes`
    /// given (secrets in them are redacted).
    fn audit_entry(
        &self,
        actor: &Actor,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        changes: serde_json::Map<String, serde_json::Value>,
    ) -> AuditEntry {
        self.audit_stamp(actor, ChangeKind::Created, self.now())
            .entry(action, resource_type, resource_id, changes)
    }

    /// The stamp of a change `actor` makes that records no event, named `action` on a
    /// `resource_type`, with the caller's preconditions.
    fn audited_change(&self, actor: &Actor, action: &str, resource_type: &str) -> AuditedChange {
        AuditedChange {
            stamp: self.audit_stamp(actor, ChangeKind::Created, self.now()),
            action: action.to_owned(),
            resource_type: resource_type.to_owned(),
            preconditions: actor.request.preconditions.clone(),
            extra: serde_json::Map::new(),
        }
    }

    /// Passes on `result`, the outcome of a write that recorded an event; after a success
    /// wakes this process's job runners, because the event's webhook deliveries were enqueued
    /// with it and are due at once. Waking before the commit would find nothing to run.
    fn after_write<T>(&self, result: Result<T>) -> Result<T> {
        if result.is_ok() {
            self.jobs.wake();
        }
        result
    }

    /// A new event whose data is `data` as the API returns it.
    fn event<T: serde::Serialize>(
        &self,
        event_type: EventType,
        data: &T,
        by: By<'_>,
    ) -> Result<Event> {
        self.event_stamp(event_type, by).with(data)
    }

    // Health

    /// Succeeds when the database and the object store answer.
    pub async fn health_ready(&self) -> Result<()> {
        let checked = match self.repo.ping().await {
            Ok(()) => match &self.blobs {
                Some(blobs) => blobs.ping().await,
                None => Ok(()),
            },
            Err(e) => Err(e),
        };
        // Whatever the failure, the instance is not ready: a load balancer reads 503.
        checked.map_err(|e| match e {
            Error::Unavailable(_) => e,
            other => {
                tracing::warn!(error = %other, "readiness check failed");
                Error::Unavailable(
                    "not ready: the database or object storage does not answer".to_owned(),
                )
            }
        })
    }

    /// Checks a list of ids of `kind` named `field` in a body: well-formed, at most 100, no
    /// duplicates. Whether they exist is checked by the repository inside its transaction.
    pub(crate) fn check_ids(kind: IdKind, field: &str, ids: &[String]) -> Result<Vec<String>> {
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
        Ok(ids.to_vec())
    }

    pub(crate) async fn referenced_agent(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
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
}
