//! Pages of calls kept in memory between two changes, for either database: each with the mark
//! it was read under (a SQLite file's WAL-index header, `direct.rs`; an organization's calls
//! version on Postgres, `repo/calls/queries.rs`), and answered only while the database still
//! shows that mark. The mark is always taken before the page is read, so a kept page can only
//! be newer than its mark, never older.
//!
//! A page is kept from its second read on: the first leaves a 64-bit hash of its key among
//! the last [`SEEN_PAGES`], so a filter asked for once (or a database that changes between
//! any two reads) costs no copy and no mark.

use std::hash::BuildHasher as _;
use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;
use sea_orm::{Statement, Value};
use voiceplane_core::model::CallJson;

/// The most bytes of calls' JSON kept: a few hundred pages of 50 calls.
const KEPT_PAGES_BYTES: u64 = 16 * 1024 * 1024;

/// How many pages read once are remembered (by a hash of their key), to keep them from their
/// second read on.
const SEEN_PAGES: usize = 4096;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct KeptPages<M> {
    pages: Cache<String, KeptPage<M>, PageBytes>,
    /// The hashes of the keys of pages read once, by `hasher`.
    seen: Cache<u64, ()>,
    hasher: quick_cache::DefaultHashBuilder,
}

/// A page of calls, and the mark taken before it was read.
#[derive(Debug, Clone)]
pub(crate) struct KeptPage<M> {
    pub(crate) mark: M,
    pub(crate) calls: Arc<Vec<CallJson>>,
}

/// What [`KeptPages::look`] found for a page.
pub(crate) enum Looked<M> {
    /// Kept under this mark: the caller compares it with the database's.
    Kept(KeptPage<M>),
    /// Read before: read it with a mark, and keep it.
    Again,
    /// Never read (that this instance remembers): read it without a mark.
    First,
}

/// A kept page weighs its JSON, its ids and its key.
#[derive(Debug, Clone, Copy)]
struct PageBytes;

impl<M> Weighter<String, KeptPage<M>> for PageBytes {
    fn weight(&self, key: &String, page: &KeptPage<M>) -> u64 {
        let calls: usize = page
            .calls
            .iter()
            .map(|c| size_of::<CallJson>() + c.json.len() + c.call_sid.len())
            .sum();
        u64::try_from(size_of::<KeptPage<M>>() + key.len() + calls).unwrap_or(u64::MAX)
    }
}

impl<M: Clone> Default for KeptPages<M> {
    fn default() -> Self {
        Self {
            pages: Cache::with_weighter(512, KEPT_PAGES_BYTES, PageBytes),
            seen: Cache::new(SEEN_PAGES),
            hasher: quick_cache::DefaultHashBuilder::default(),
        }
    }
}

impl<M: Clone> KeptPages<M> {
    /// What is known of the page `key`; a page never read is remembered as read once.
    pub(crate) fn look(&self, key: &str) -> Looked<M> {
        if let Some(kept) = self.pages.get(key) {
            return Looked::Kept(kept);
        }
        // A collision only keeps a page from its first read.
        let hash = self.hasher.hash_one(key);
        if self.seen.get(&hash).is_some() {
            Looked::Again
        } else {
            self.seen.insert(hash, ());
            Looked::First
        }
    }

    /// Keeps `calls`, the page `key` read after `mark` was taken.
    pub(crate) fn keep(&self, key: String, mark: M, calls: &Arc<Vec<CallJson>>) {
        let calls = Arc::clone(calls);
        self.pages.insert(key, KeptPage { mark, calls });
    }
}

/// What identifies a page: its SQL and its values (the organization's id among them), each
/// value tagged with its type and a text with its length, so that no two lists of values
/// read the same.
pub(crate) fn page_key(statement: &Statement) -> String {
    use std::fmt::Write as _;
    let mut key = String::with_capacity(statement.sql.len() + 160);
    key.push_str(&statement.sql);
    for value in statement.values.iter().flat_map(|v| v.0.iter()) {
        let _ = match value {
            Value::String(Some(s)) => write!(key, "\0s{}:{s}", s.len()),
            Value::BigInt(Some(n)) => write!(key, "\0i{n}"),
            Value::Int(Some(n)) => write!(key, "\0i{n}"),
            other => write!(key, "\0{other:?}"),
        };
    }
    key
}

#[cfg(test)]
mod tests {
    use sea_orm::DbBackend;

    use super::*;

    /// Values that would read the same if joined (a text holding the separator, a number and
    /// its text) give pages of their own.
    #[test]
    fn page_keys_tell_values_apart() {
        let key = |values: Vec<Value>| {
            page_key(&Statement::from_sql_and_values(
                DbBackend::Sqlite,
                "SELECT ? ?",
                values,
            ))
        };
        let s = |t: &str| Value::String(Some(t.to_owned()));
        let keys = [
            key(vec![s("a\0s1:b"), s("c")]),
            key(vec![s("a"), s("b\0s1:c")]),
            key(vec![s("a"), s("b")]),
            key(vec![s("1"), Value::BigInt(Some(1))]),
            key(vec![Value::BigInt(Some(1)), s("1")]),
            key(vec![Value::String(None), s("1")]),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            key(vec![s("a"), s("b")]),
            keys[2],
            "the same statement, the same page"
        );
    }

    /// A page is kept from its second read on, and then found with its mark.
    #[test]
    fn a_page_is_kept_from_its_second_read() {
        let kept = KeptPages::<u8>::default();
        assert!(matches!(kept.look("a"), Looked::First));
        assert!(matches!(kept.look("a"), Looked::Again));
        assert!(matches!(kept.look("b"), Looked::First));
        kept.keep("a".to_owned(), 7, &Arc::default());
        assert!(matches!(
            kept.look("a"),
            Looked::Kept(KeptPage { mark: 7, .. })
        ));
    }
}
