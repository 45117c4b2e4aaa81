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

use std::sync::Arc;

use async_trait::async_trait;
use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::{DefaultHashBuilder, OptionsBuilder, Weighter};

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

// Not derived: a derive would ask `V: Clone`, and only the `Arc` is cloned.
impl<V> Clone for Entry<V> {
    fn clone(&self) -> Self {
        Self {
            value: Arc::clone(&self.value),
            version: self.version,
        }
    }
}

/// What an entry costs against the budget: what `weigh` says of its value, at least 1 (the
/// cache never evicts an entry of weight 0).
struct Weigh<V>(fn(&V) -> usize);

impl<V> Clone for Weigh<V> {
    fn clone(&self) -> Self {
        Self(self.0)
    }
}

impl<V> Weighter<String, Entry<V>> for Weigh<V> {
    fn weight(&self, _key: &String, entry: &Entry<V>) -> u64 {
        u64::try_from((self.0)(&entry.value))
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// Values by key, each trusted only at the version it was read at, within a budget of weight
/// (what `weigh` says a value costs: 1 per key; about its bytes for an agent, whose prompt can
/// be long). A full cache evicts the entries least recently read (`quick_cache`'s CLOCK-PRO:
/// an entry read since it was kept survives a pass of keys read once), so more active keys
/// than the budget cost a read for the coldest ones, not for all; a value about as heavy as
/// the whole budget is not kept.
pub(crate) struct VersionedCache<V> {
    entries: Cache<String, Entry<V>, Weigh<V>>,
    budget: usize,
}

impl<V> std::fmt::Debug for VersionedCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionedCache")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// Entries the table is first sized for; it grows as needed, so an idle instance does not
/// hold a table for the whole budget.
const INITIAL_ENTRIES: usize = 1024;

impl<V> VersionedCache<V> {
    pub(crate) fn new(budget: usize, weigh: fn(&V) -> usize) -> Self {
        let options = OptionsBuilder::new()
            .estimated_items_capacity(INITIAL_ENTRIES.min(budget.max(1)))
            .weight_capacity(u64::try_from(budget).unwrap_or(u64::MAX))
            // One shard: the budget is then the whole cache's, not split into per-shard
            // budgets that a long prompt could exceed alone. Reads take the shard's lock
            // shared, so they do not queue behind each other.
            .shards(1)
            .build()
            .expect("the capacities are set");
        Self {
            entries: Cache::with_options(
                options,
                Weigh(weigh),
                DefaultHashBuilder::default(),
                DefaultLifecycle::default(),
            ),
            budget,
        }
    }

    /// The value of `key` if it was read at `version`.
    pub(crate) fn get(&self, key: &str, version: i64) -> Option<Arc<V>> {
        self.entries
            .get(key)
            .filter(|e| e.version == version)
            .map(|e| e.value)
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
        self.entries
            .insert(key.to_owned(), Entry { value, version });
    }

    /// Replaces the value of `key`, if kept, with `change` of it (same version: meant for
    /// small changes). A `put` racing it may be overwritten by the older version it read,
    /// which only costs the next read a miss.
    pub(crate) fn update(&self, key: &str, change: impl FnOnce(&V) -> V) {
        if let Some(entry) = self.entries.peek(key) {
            let changed = Entry {
                value: Arc::new(change(&entry.value)),
                version: entry.version,
            };
            // `soft`: a replacement does not count as a read of the entry.
            let _ = self.entries.replace(key.to_owned(), changed, true);
        }
    }

    /// Drops every value that `matches`.
    pub(crate) fn forget(&self, matches: impl Fn(&V) -> bool) {
        self.entries.retain(|_, e| !matches(&e.value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_served_only_at_its_version_and_can_be_changed_or_forgotten() {
        let cache = VersionedCache::new(10, |_| 1);
        cache.put("a", Arc::new(1), 7);
        assert_eq!(cache.get("a", 7).as_deref(), Some(&1));
        assert_eq!(cache.get("a", 8), None, "a newer version hides the entry");
        cache.update("a", |v| v + 1);
        assert_eq!(cache.get("a", 7).as_deref(), Some(&2));
        cache.update("missing", |v| v + 1);
        assert_eq!(cache.get("missing", 7), None, "an update keeps nothing new");
        cache.put("c", Arc::new(4), 7);
        cache.forget(|v| *v == 4);
        assert_eq!(cache.get("c", 7), None);
        assert_eq!(cache.get("a", 7).as_deref(), Some(&2), "only what matches");
    }

    #[test]
    fn a_full_cache_evicts_some_entries_not_all() {
        let cache = VersionedCache::new(100, |_| 1);
        for i in 0..100 {
            cache.put(&i.to_string(), Arc::new(i), 1);
        }
        cache.put("one more", Arc::new(100), 1);
        let kept = (0..100)
            .filter(|i| cache.get(&i.to_string(), 1).is_some())
            .count();
        assert!(
            kept >= 90,
            "a full cache kept {kept} of 100 when one more came"
        );
        assert!(cache.get("one more", 1).is_some());
    }

    /// More keys than the budget pass through, each read once; a key read between them all
    /// the while is still kept at the end (a cache that started over when full would have
    /// dropped it over and over).
    #[test]
    fn a_hot_key_survives_more_keys_than_the_budget_passing_through() {
        let cache = VersionedCache::new(100, |_| 1);
        cache.put("hot", Arc::new(-1), 1);
        let mut hot_misses = 0;
        for i in 0..1_000 {
            cache.put(&format!("cold {i}"), Arc::new(i), 1);
            if cache.get("hot", 1).is_none() {
                hot_misses += 1;
                cache.put("hot", Arc::new(-1), 1);
            }
        }
        assert_eq!(hot_misses, 0, "the hot key was evicted {hot_misses} times");
        let cold_kept = (0..1_000)
            .filter(|i| cache.get(&format!("cold {i}"), 1).is_some())
            .count();
        assert!(
            cold_kept <= 100,
            "the budget holds: {cold_kept} cold keys kept"
        );
    }

    #[test]
    fn the_budget_is_of_weight_and_a_value_heavier_than_it_is_not_kept() {
        let cache = VersionedCache::new(100, |s: &String| s.len());
        cache.put("a", Arc::new("x".repeat(60)), 1);
        cache.put("a", Arc::new("x".repeat(80)), 2);
        cache.put("b", Arc::new("x".repeat(15)), 1);
        assert!(
            cache.get("a", 2).is_some() && cache.get("b", 1).is_some(),
            "replacing a value frees its old weight"
        );
        cache.put("c", Arc::new("x".repeat(30)), 1);
        assert!(cache.get("c", 1).is_some());
        let kept: usize = ["a", "b", "c"]
            .iter()
            .filter_map(|k| cache.get(k, 1).or_else(|| cache.get(k, 2)))
            .map(|v| v.len())
            .sum();
        assert!(kept <= 100, "{kept} bytes kept in a budget of 100");
        cache.put("d", Arc::new("x".repeat(101)), 1);
        assert!(cache.get("d", 1).is_none(), "heavier than the whole budget");
        assert!(
            cache.get("c", 1).is_some(),
            "and nothing was dropped for it"
        );
    }
}
