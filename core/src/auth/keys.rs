//! The API keys this process has read, by the hash of their secret, so that an authenticated
//! request costs no statement for its credential.
//!
//! An entry is trusted only while the repository's credential version
//! ([`ApiKeyRepository::credential_version`]) is the one it was read at: every revocation, by
//! any instance, raises that version in its own transaction, so a revoked key is read again
//! (and refused) on its next request. Revocations through this process also drop their entries
//! at once. What a key may do (organization, user, role, expiry) never changes after it is
//! created, and expiry is checked against the clock on every request, so the version is the
//! only thing an entry has to follow. Unknown secrets are never cached: guessing fills nothing.
//!
//! [`ApiKeyRepository::credential_version`]: crate::repo::ApiKeyRepository::credential_version

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::model::ApiKey;
use crate::time::Timestamp;

/// At most this many keys are kept; a full cache starts again empty, which only costs one read
/// per key.
const MAX_ENTRIES: usize = 10_000;

struct Entry {
    key: Arc<ApiKey>,
    version: i64,
}

/// See the module documentation.
#[derive(Default)]
pub(crate) struct KeyCache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache").finish_non_exhaustive()
    }
}

impl KeyCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // An entry is written whole under the lock, so a panic elsewhere leaves none torn.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of `secret_hash` if it was read at `version`.
    pub(crate) fn get(&self, secret_hash: &str, version: i64) -> Option<Arc<ApiKey>> {
        self.entries()
            .get(secret_hash)
            .filter(|e| e.version == version)
            .map(|e| Arc::clone(&e.key))
    }

    /// Keeps `key`, read at `version` (read before the key itself, so that a revocation in
    /// between leaves the entry behind the version, not ahead of it).
    pub(crate) fn put(&self, secret_hash: &str, key: Arc<ApiKey>, version: i64) {
        let mut entries = self.entries();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(secret_hash) {
            entries.clear();
        }
        entries.insert(secret_hash.to_owned(), Entry { key, version });
    }

    /// Records that the key of `secret_hash` was marked used at `at`.
    pub(crate) fn touched(&self, secret_hash: &str, at: Timestamp) {
        if let Some(entry) = self.entries().get_mut(secret_hash) {
            let mut key = ApiKey::clone(&entry.key);
            key.last_used_at = Some(at);
            entry.key = Arc::new(key);
        }
    }

    /// Drops every key of `organization_id` that `matches`.
    pub(crate) fn forget(&self, organization_id: &str, matches: impl Fn(&ApiKey) -> bool) {
        self.entries()
            .retain(|_, e| e.key.organization_id != organization_id || !matches(&e.key));
    }
}
