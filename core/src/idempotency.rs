//! Idempotency keys: the first answer to a request sent with a key is stored in the database,
//! so that a retry of the same request, on any instance, gets that answer again instead of
//! running the operation twice.
//!
//! A key belongs to a *scope* (the organization and the credential that sent it) and is claimed
//! by inserting its row first: the database's primary key on `(scope, key)` decides which of
//! two concurrent requests runs, on SQLite and Postgres alike, with no read-then-write race.
//! The winner holds the row `running` under a lease ([`IDEMPOTENCY_LEASE`]) and a random token;
//! it then stores its answer ([`Service::idempotency_complete`](crate::Service::idempotency_complete)) or releases the key
//! ([`Service::idempotency_release`](crate::Service::idempotency_release)) when the answer is not one to remember. A row outlives
//! its [`IDEMPOTENCY_TTL`] only until the recurring sweep ([`IDEMPOTENCY_SWEEP`]) deletes it.
//!
//! The stored answer alone cannot keep a create from running twice: it is written after the
//! create commits, so a crash or a lost commit acknowledgement in between leaves the key
//! `running` (or released) while the resource exists. A create that reaches a provider or
//! charges credits (`POST /api/calls/dial`, `POST /api/calls/{call_sid}/usage`) therefore also
//! writes a [`KeyBinding`] in its own transaction, naming what it created; a later request with
//! the key finds the binding before anything else and answers with that resource, whatever
//! the key's row says, and a create racing it finds the binding's row taken and writes
//! nothing.
//!
//! This module knows nothing of the protocol: the adapter decides what a request's fingerprint
//! is, which answers are stored, and what a [`StoredAnswer`] holds beside its body.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::time::Timestamp;

/// How long a key is remembered after its first use: 24 hours.
pub const IDEMPOTENCY_TTL: Duration = Duration::from_secs(24 * 3600);

/// How long a claim holds without an answer. A request still running after this long (or
/// whose instance died) loses its claim: the next retry with the key runs the operation again.
pub const IDEMPOTENCY_LEASE: Duration = Duration::from_secs(5 * 60);

/// The kind of the recurring job that deletes expired keys.
pub const IDEMPOTENCY_SWEEP: &str = "idempotency.sweep";

/// An answer kept for replay: its body, and what the adapter needs besides to give the same
/// answer again, in the adapter's own encoding. Core stores both as given and reads neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    /// The adapter's description of the answer beside its body.
    pub meta: String,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// A key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The request fingerprint the key was first used with.
    pub fingerprint: String,
    /// The stored answer; `None` while the first request runs.
    pub answer: Option<StoredAnswer>,
    /// When the key is forgotten.
    pub expires_at: Timestamp,
    /// Until when a running request holds the key.
    pub locked_until: Timestamp,
}

/// A new claim on a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIdempotencyKey {
    /// Organization and credential.
    pub scope: String,
    /// The caller's key.
    pub key: String,
    /// What identifies the request (the adapter hashes method, path and body).
    pub fingerprint: String,
    /// Held by this request only.
    pub token: String,
    /// Now.
    pub created_at: Timestamp,
    /// When the key is forgotten.
    pub expires_at: Timestamp,
    /// Until when the claim holds.
    pub locked_until: Timestamp,
}

/// A key, as a create that must never run twice for it binds it to what it creates, in the
/// create's own transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBinding {
    /// Organization and credential.
    pub scope: String,
    /// The caller's key.
    pub key: String,
    /// The fingerprint of the request that carries it.
    pub fingerprint: String,
}

/// What a key was bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The fingerprint of the request that created it.
    pub fingerprint: String,
    /// The id of what it created (a call's `call_sid`).
    pub resource: String,
}

impl Bound {
    /// The resource, when `binding` is a retry of the request that created it; a 422 when the
    /// key was used with another request.
    pub fn for_retry(self, binding: &KeyBinding) -> Result<String> {
        if self.fingerprint != binding.fingerprint {
            return Err(mismatch());
        }
        Ok(self.resource)
    }
}

/// The answer to a key used with another request than its first.
pub fn mismatch() -> Error {
    Error::unprocessable(
        "this Idempotency-Key was already used with a different request (method, path or \
         body); use a new key for a new request",
    )
}

/// The database side of idempotency keys.
#[async_trait]
pub trait IdempotencyRepository: Send + Sync {
    /// Inserts the key `running`, unless a row for `(scope, key)` exists; returns whether it
    /// was inserted. One statement: of concurrent inserts, exactly one succeeds.
    async fn idempotency_insert(&self, row: &NewIdempotencyKey) -> Result<bool>;
    /// The key's row, if any.
    async fn idempotency_get(&self, scope: &str, key: &str) -> Result<Option<IdempotencyRecord>>;
    /// Replaces the claim of a row that is expired at `row.created_at`, or still running with a
    /// lease that ended then, by `row`; returns whether it did (one conditional statement).
    async fn idempotency_take_over(&self, row: &NewIdempotencyKey) -> Result<bool>;
    /// Stores the answer of the request holding `token`; returns whether it still held it.
    async fn idempotency_complete(
        &self,
        scope: &str,
        key: &str,
        token: &str,
        answer: &StoredAnswer,
    ) -> Result<bool>;
    /// Deletes the row the request holding `token` claimed.
    async fn idempotency_release(&self, scope: &str, key: &str, token: &str) -> Result<()>;
    /// Deletes up to `limit` rows expired at `now`, keys and bindings; returns how many.
    async fn idempotency_delete_expired(&self, now: Timestamp, limit: u64) -> Result<u64>;
    /// What the key was bound to, unless the binding expired at `now`.
    async fn idempotency_bound(
        &self,
        scope: &str,
        key: &str,
        now: Timestamp,
    ) -> Result<Option<Bound>>;
}

/// What a request with an idempotency key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// It holds the key: run the operation, then complete or release with this token.
    Claimed {
        /// The claim's token.
        token: String,
    },
    /// The key was used with this request before: answer this.
    Replay(StoredAnswer),
    /// The key was used with another request (HTTP 422).
    Mismatch,
    /// The first request with the key is still running (HTTP 409).
    InFlight,
}

/// The fingerprint of a request: SHA-256 (hex) over its method, path with query, and body
/// bytes, each part length-prefixed so that no two requests share one by moving bytes between
/// parts.
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [method.as_bytes(), path_and_query.as_bytes(), body] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    crate::auth::to_hex(&hash.finalize())
}
