//! Rows an instance has read, kept so that the hottest reads cost no statement: API keys by
//! the hash of their secret (every authenticated request) and agents by id (what a voice
//! runtime reads for every call it places or answers).
//!
//! An entry is trusted only while the database's [`ChangeVersions`] number it follows is the
//! one it was read at. The database raises each number in the transaction of every change the
//! entries depend on, whichever instance makes it, so a stale entry is read again on its next
//! request:
//!
//! - `credentials` is raised by every revocation of a key (by hand, or the keys of a removed
//!   member). What else a key says (organization, user, role, scopes, expiry) never changes
//!   after it is created, and expiry is checked against the clock on every request.
//! - `agents` is raised by every insert, update or delete of an agent or a phone number (an
//!   agent carries its numbers), by triggers in the database, so no write path can forget it.
//!
//! The version is read before the row it guards, so a change committed in between leaves the
//! entry behind the version, not ahead of it. Unknown keys are never cached: guessing fills
//! nothing. How the versions are learned (from memory where the database announces them, else
//! one primary-key read) is the repository's business: see [`ChangeRepository`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::error::Result;

/// The numbers that say whether cached rows are still current; see the module documentation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeVersions {
    /// Raised by every revocation of an API key.
    pub credentials: i64,
    /// Raised by every change of an agent or a phone number.
    pub agents: i64,
}

/// Where the [`ChangeVersions`] come from.
#[async_trait]
pub trait ChangeRepository: Send + Sync {
    /// The current versions. Asked on every authenticated request, so it should be cheap
    /// (answered from memory where the database announces changes), and never behind a change
    /// that had committed when it was asked, nor behind a change this instance has made.
    async fn change_versions(&self) -> Result<ChangeVersions>;
}

struct Entry<V> {
    value: Arc<V>,
    version: i64,
}

/// Values by key, each trusted only at the version it was read at.
pub(crate) struct VersionedCache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    /// At most this many entries; a full cache starts again empty, which only costs one read
    /// per entry.
    capacity: usize,
}

impl<V> std::fmt::Debug for VersionedCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionedCache")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<V> VersionedCache<V> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::default(),
            capacity,
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry<V>>> {
        // An entry is written whole under the lock, so a panic elsewhere leaves none torn.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of `key` if it was read at `version`.
    pub(crate) fn get(&self, key: &str, version: i64) -> Option<Arc<V>> {
        self.entries()
            .get(key)
            .filter(|e| e.version == version)
            .map(|e| Arc::clone(&e.value))
    }

    /// Keeps `value`, read at `version` (read before the value itself).
    pub(crate) fn put(&self, key: &str, value: Arc<V>, version: i64) {
        let mut entries = self.entries();
        if entries.len() >= self.capacity && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(key.to_owned(), Entry { value, version });
    }

    /// Replaces the value of `key`, if kept, with `change` of it (same version).
    pub(crate) fn update(&self, key: &str, change: impl FnOnce(&V) -> V) {
        if let Some(entry) = self.entries().get_mut(key) {
            entry.value = Arc::new(change(&entry.value));
        }
    }

    /// Drops every value that `matches`.
    pub(crate) fn forget(&self, matches: impl Fn(&V) -> bool) {
        self.entries().retain(|_, e| !matches(&e.value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_served_only_at_its_version_and_a_full_cache_starts_over() {
        let cache = VersionedCache::new(2);
        cache.put("a", Arc::new(1), 7);
        assert_eq!(cache.get("a", 7).as_deref(), Some(&1));
        assert_eq!(cache.get("a", 8), None, "a newer version hides the entry");
        cache.update("a", |v| v + 1);
        assert_eq!(cache.get("a", 7).as_deref(), Some(&2));
        cache.put("b", Arc::new(3), 7);
        cache.put("c", Arc::new(4), 7);
        assert_eq!(
            cache.get("a", 7),
            None,
            "the third key emptied the full cache"
        );
        assert_eq!(cache.get("c", 7).as_deref(), Some(&4));
        cache.forget(|v| *v == 4);
        assert_eq!(cache.get("c", 7), None);
    }
}
