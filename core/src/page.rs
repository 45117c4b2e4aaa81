//! Keyset pagination: an opaque cursor naming the last item of a page, and the page itself.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::time::Timestamp;

/// A short digest of a list's filters written as canonical JSON: what a cursor carries to be
/// refused under other filters.
pub(crate) fn filter_digest(canonical: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    crate::auth::to_hex(&Sha256::digest(canonical.to_string().as_bytes())[..6])
}

/// Default page size of cursor lists.
pub const DEFAULT_LIMIT: u32 = 50;
/// Largest page size of cursor lists.
pub const MAX_LIMIT: u32 = 100;

/// The position after which the next page starts: the `(created_at, id)` of the last item
/// returned. Lists are ordered by `created_at` descending, then `id` descending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// `created_at` of the last item seen.
    pub created_at: Timestamp,
    /// Id of the last item seen.
    pub id: String,
}

impl Cursor {
    /// URL-safe base64 of `<micros>:<id>`.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", self.created_at.as_micros(), self.id))
    }

    /// Decodes a cursor produced by [`encode`](Self::encode) for a list of `kind` items; any
    /// other input is a 400.
    pub fn decode(s: &str, kind: IdKind) -> Result<Self> {
        Self::decode_scoped(s, kind, "")
    }

    /// URL-safe base64 of `<micros>:<id>:<scope>`, where `scope` is a short digest of the
    /// filters the list was asked with; an empty scope (an unfiltered list) gives exactly
    /// [`encode`](Self::encode), so cursors made before filters existed stay valid.
    pub fn encode_scoped(&self, scope: &str) -> String {
        if scope.is_empty() {
            return self.encode();
        }
        URL_SAFE_NO_PAD.encode(format!(
            "{}:{}:{scope}",
            self.created_at.as_micros(),
            self.id
        ))
    }

    /// Decodes a cursor produced by [`encode_scoped`](Self::encode_scoped) with the same
    /// `scope`; a cursor of the same list made under other filters is a 400 that says so, any
    /// other input is a 400 as in [`decode`](Self::decode).
    pub fn decode_scoped(s: &str, kind: IdKind, scope: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "cursor is not a valid page cursor; pass the `next_cursor` of a previous page of this list",
            )
        };
        let raw = URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let (micros, rest) = raw.split_once(':').ok_or_else(bad)?;
        let micros: i64 = micros.parse().map_err(|_| bad())?;
        let (id, made_under) = rest.split_once(':').unwrap_or((rest, ""));
        if !kind.matches(id) {
            return Err(bad());
        }
        if made_under != scope {
            return Err(Error::invalid(
                "the cursor belongs to another set of filters; send the filters it was made \
                 with, or start again without a cursor",
            ));
        }
        Ok(Self {
            created_at: Timestamp::from_micros(micros),
            id: id.to_owned(),
        })
    }
}

/// A position in a list kept in ascending `seq` order (a call's transcript): the last `seq`
/// seen, as an opaque cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqCursor(pub i64);

impl SeqCursor {
    /// URL-safe base64 of `seq:<n>`.
    pub fn encode(self) -> String {
        URL_SAFE_NO_PAD.encode(format!("seq:{}", self.0))
    }

    /// Decodes a cursor produced by [`encode`](Self::encode); any other input is a 400.
    pub fn decode(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "cursor is not a valid page cursor; pass the `next_cursor` of a previous page of this list",
            )
        };
        let raw = URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let seq = raw
            .strip_prefix("seq:")
            .and_then(|n| n.parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .ok_or_else(bad)?;
        Ok(Self(seq))
    }
}

/// What a caller asks of a cursor list: the query string of every list.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PageParams {
    /// Items per page.
    #[cfg_attr(feature = "openapi", schemars(range(min = 1, max = 100), extend("default" = DEFAULT_LIMIT)))]
    pub limit: Option<u32>,
    /// The `pagination.next_cursor` of the previous page; omitted (or empty) for the first
    /// page.
    #[serde(default, deserialize_with = "empty_as_none")]
    pub cursor: Option<String>,
}

/// An empty value means the parameter was not given.
pub(crate) fn empty_as_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    let value: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(value.filter(|v| !v.is_empty()))
}

/// A validated page request, as handed to a repository: fetch `limit + 1` rows strictly after
/// `after` so that the extra row tells whether more exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageQuery {
    /// Items wanted on this page.
    pub limit: u32,
    /// Start strictly after this position; `None` for the first page.
    pub after: Option<Cursor>,
}

impl PageQuery {
    /// Validates `params` for a list of `kind` items.
    pub fn from_params(params: &PageParams, kind: IdKind) -> Result<Self> {
        let limit = checked_limit(params)?;
        let after = params
            .cursor
            .as_deref()
            .map(|c| Cursor::decode(c, kind))
            .transpose()?;
        Ok(Self { limit, after })
    }

    /// Validates `params` for a list of `kind` items asked with filters whose digest is
    /// `scope` (see [`Cursor::encode_scoped`]).
    pub fn from_params_scoped(params: &PageParams, kind: IdKind, scope: &str) -> Result<Self> {
        let limit = checked_limit(params)?;
        let after = params
            .cursor
            .as_deref()
            .map(|c| Cursor::decode_scoped(c, kind, scope))
            .transpose()?;
        Ok(Self { limit, after })
    }

    /// Rows to fetch: one more than the page holds.
    pub fn fetch(&self) -> u64 {
        u64::from(self.limit) + 1
    }
}

/// The page size `params` asks for, within bounds.
pub fn checked_limit(params: &PageParams) -> Result<u32> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::invalid(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {limit}"
        )));
    }
    Ok(limit)
}

/// One page of a cursor list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// Whether more items follow.
    pub has_more: bool,
    /// Cursor for the next page; `None` when `has_more` is false.
    pub next_cursor: Option<String>,
    /// Total items in the whole list, for lists that report it.
    pub total_count: Option<u64>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows fetched by a repository; `key` gives the
    /// `(created_at, id)` of an item.
    pub fn from_rows(rows: Vec<T>, query: &PageQuery, key: impl Fn(&T) -> Cursor) -> Self {
        Self::from_rows_by(rows, query.limit, |item| key(item).encode())
    }

    /// Builds a page from up to `limit + 1` rows; `cursor` gives the cursor that names an
    /// item as the last one seen.
    pub fn from_rows_by(mut rows: Vec<T>, limit: u32, cursor: impl Fn(&T) -> String) -> Self {
        let (len, has_more, next_cursor) = cut(&rows, limit, cursor);
        rows.truncate(len);
        Self {
            items: rows,
            has_more,
            next_cursor,
            total_count: None,
        }
    }

    /// Number of items on this page.
    pub fn page_size(&self) -> usize {
        self.items.len()
    }
}

/// A [`Page`] whose rows are shared, with a page kept in memory say: answering it copies
/// none of them.
#[derive(Debug, Clone)]
pub struct SharedPage<T> {
    rows: Arc<Vec<T>>,
    len: usize,
    /// Whether more items follow.
    pub has_more: bool,
    /// Cursor for the next page; `None` when `has_more` is false.
    pub next_cursor: Option<String>,
}

impl<T> SharedPage<T> {
    /// [`Page::from_rows_by`] over shared rows: up to `limit + 1` of them, of which the first
    /// `limit` are the page.
    pub fn from_rows_by(rows: Arc<Vec<T>>, limit: u32, cursor: impl Fn(&T) -> String) -> Self {
        let (len, has_more, next_cursor) = cut(&rows, limit, cursor);
        Self {
            rows,
            len,
            has_more,
            next_cursor,
        }
    }

    /// The items, newest first.
    pub fn items(&self) -> &[T] {
        &self.rows[..self.len]
    }

    /// The rows it was cut from: the same `Arc` for every answer of a page kept in memory, so
    /// that what is written from it can be kept beside it.
    pub fn rows(&self) -> &Arc<Vec<T>> {
        &self.rows
    }
}

/// Of up to `limit + 1` rows: how many make the page, whether more follow, and the cursor
/// after the page's last row when they do.
fn cut<T>(rows: &[T], limit: u32, cursor: impl Fn(&T) -> String) -> (usize, bool, Option<String>) {
    let len = rows.len().min(limit as usize);
    let has_more = rows.len() > len;
    let next_cursor = if has_more {
        rows[..len].last().map(cursor)
    } else {
        None
    };
    (len, has_more, next_cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over shared rows, a page has the items, `has_more` and cursor of the page built from
    /// its own copy of them, whether the rows hold fewer, as many or more than the limit.
    #[test]
    fn a_shared_page_is_the_page_of_its_rows() {
        for rows in 0..=4 {
            let rows: Vec<u32> = (0..rows).collect();
            let owned = Page::from_rows_by(rows.clone(), 2, u32::to_string);
            let shared = SharedPage::from_rows_by(Arc::new(rows), 2, u32::to_string);
            assert_eq!(shared.items(), owned.items.as_slice());
            assert_eq!(
                (shared.has_more, shared.next_cursor),
                (owned.has_more, owned.next_cursor)
            );
        }
    }

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let c = Cursor {
            created_at: Timestamp::from_micros(1_700_000_000_000_001),
            id: "call_abc123".into(),
        };
        let s = c.encode();
        assert_eq!(Cursor::decode(&s, IdKind::Call).unwrap(), c);
        assert!(Cursor::decode(&s, IdKind::Tool).is_err());
        assert!(Cursor::decode("not base64!!", IdKind::Call).is_err());
        assert!(Cursor::decode(&URL_SAFE_NO_PAD.encode("x:call_1"), IdKind::Call).is_err());
    }

    #[test]
    fn scoped_cursors_belong_to_their_filters() {
        let c = Cursor {
            created_at: Timestamp::from_micros(1_700_000_000_000_001),
            id: "call_abc123".into(),
        };
        let scoped = c.encode_scoped("0123abcd");
        assert_eq!(
            Cursor::decode_scoped(&scoped, IdKind::Call, "0123abcd").unwrap(),
            c
        );
        let err = Cursor::decode_scoped(&scoped, IdKind::Call, "ffff0000").unwrap_err();
        assert!(err.to_string().contains("another set of filters"), "{err}");
        // Unscoped (older) cursors are cursors of the unfiltered list.
        assert_eq!(c.encode_scoped(""), c.encode());
        assert_eq!(
            Cursor::decode_scoped(&c.encode(), IdKind::Call, "").unwrap(),
            c
        );
        assert!(Cursor::decode_scoped(&c.encode(), IdKind::Call, "0123abcd").is_err());
        assert!(Cursor::decode(&scoped, IdKind::Call).is_err());
    }

    #[test]
    fn seq_cursors_round_trip() {
        assert_eq!(
            SeqCursor::decode(&SeqCursor(42).encode()).unwrap(),
            SeqCursor(42)
        );
        assert!(SeqCursor::decode(&URL_SAFE_NO_PAD.encode("seq:-1")).is_err());
        assert!(SeqCursor::decode("garbage!").is_err());
    }

    #[test]
    fn limit_bounds() {
        let p = |limit| PageParams {
            limit: Some(limit),
            cursor: None,
        };
        assert!(PageQuery::from_params(&p(0), IdKind::Call).is_err());
        assert!(PageQuery::from_params(&p(101), IdKind::Call).is_err());
        assert_eq!(
            PageQuery::from_params(&p(100), IdKind::Call)
                .unwrap()
                .fetch(),
            101
        );
        let d = PageQuery::from_params(&PageParams::default(), IdKind::Call).unwrap();
        assert_eq!(d.limit, DEFAULT_LIMIT);
    }
}
