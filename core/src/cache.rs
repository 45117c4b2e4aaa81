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
    weight: usize,
}

struct Entries<V> {
    map: HashMap<String, Entry<V>>,
    /// The sum of the entries' weights.
    weight: usize,
}

/// Values by key, each trusted only at the version it was read at, within a budget of weight
/// (what `weigh` says a value costs: 1 per key; about its bytes for an agent, whose prompt can
/// be long). A value that would overflow the budget empties the cache first, which only costs
/// one read per entry; a value heavier than the whole budget is not kept.
pub(crate) struct VersionedCache<V> {
    entries: Mutex<Entries<V>>,
    budget: usize,
    weigh: fn(&V) -> usize,
}

impl<V> std::fmt::Debug for VersionedCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionedCache")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl<V> VersionedCache<V> {
    pub(crate) fn new(budget: usize, weigh: fn(&V) -> usize) -> Self {
        Self {
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                weight: 0,
            }),
            budget,
            weigh,
        }
    }

    fn entries(&self) -> MutexGuard<'_, Entries<V>> {
        // An entry is written whole under the lock, so a panic elsewhere leaves none torn.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of `key` if it was read at `version`.
    pub(crate) fn get(&self, key: &str, version: i64) -> Option<Arc<V>> {
        self.entries()
            .map
            .get(key)
            .filter(|e| e.version == version)
            .map(|e| Arc::clone(&e.value))
    }

    /// The value of `key` at `version`: the one kept, else what `read` finds, kept under
    /// `version` (which must have been taken before `read` runs). Nothing found is not kept.
    /// `read` is a closure so that a value kept costs no future (a repository's are boxed).
    pub(crate) async fn get_or_read<E, F>(
        &self,
        key: &str,
        version: i64,
        read: impl FnOnce() -> F,
    ) -> std::result::Result<Option<Arc<V>>, E>
    where
        F: Future<Output = std::result::Result<Option<V>, E>>,
    {
        if let Some(kept) = self.get(key, version) {
            return Ok(Some(kept));
        }
        let Some(value) = read().await? else {
            return Ok(None);
        };
        let value = Arc::new(value);
        self.put(key, Arc::clone(&value), version);
        Ok(Some(value))
    }

    /// Keeps `value`, read at `version` (read before the value itself).
    pub(crate) fn put(&self, key: &str, value: Arc<V>, version: i64) {
        let weight = (self.weigh)(&value);
        let mut entries = self.entries();
        if let Some(old) = entries.map.remove(key) {
            entries.weight -= old.weight;
        }
        if weight > self.budget {
            return;
        }
        if entries.weight + weight > self.budget {
            entries.map.clear();
            entries.weight = 0;
        }
        entries.weight += weight;
        entries.map.insert(
            key.to_owned(),
            Entry {
                value,
                version,
                weight,
            },
        );
    }

    /// Replaces the value of `key`, if kept, with `change` of it (same version and weight:
    /// meant for small changes).
    pub(crate) fn update(&self, key: &str, change: impl FnOnce(&V) -> V) {
        if let Some(entry) = self.entries().map.get_mut(key) {
            entry.value = Arc::new(change(&entry.value));
        }
    }

    /// Drops every value that `matches`.
    pub(crate) fn forget(&self, matches: impl Fn(&V) -> bool) {
        let mut entries = self.entries();
        let mut dropped = 0;
        entries.map.retain(|_, e| {
            let keep = !matches(&e.value);
            if !keep {
                dropped += e.weight;
            }
            keep
        });
        entries.weight -= dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_served_only_at_its_version_and_a_full_cache_starts_over() {
        let cache = VersionedCache::new(2, |_| 1);
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

    #[test]
    fn the_budget_is_of_weight_and_a_value_heavier_than_it_is_not_kept() {
        let cache = VersionedCache::new(10, |s: &String| s.len());
        cache.put("a", Arc::new("x".repeat(6)), 1);
        cache.put("a", Arc::new("x".repeat(8)), 2);
        assert!(
            cache.get("a", 2).is_some(),
            "replacing a value frees its old weight"
        );
        cache.put("b", Arc::new("x".repeat(2)), 1);
        assert!(cache.get("a", 2).is_some() && cache.get("b", 1).is_some());
        cache.put("c", Arc::new("x".repeat(3)), 1);
        assert!(
            cache.get("a", 2).is_none(),
            "13 of 10: the cache started over"
        );
        assert!(cache.get("c", 1).is_some());
        cache.put("d", Arc::new("x".repeat(11)), 1);
        assert!(cache.get("d", 1).is_none(), "heavier than the whole budget");
        assert!(
            cache.get("c", 1).is_some(),
            "and nothing was dropped for it"
        );
    }
}
