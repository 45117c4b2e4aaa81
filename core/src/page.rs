//! Keyset pagination: an opaque cursor naming the last item of a page, and the page itself.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::time::Timestamp;

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
        let bad = || {
            Error::invalid(
                "cursor is not a valid page cursor; pass the `next_cursor` of a previous page of this list",
            )
        };
        let raw = URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let (micros, id) = raw.split_once(':').ok_or_else(bad)?;
        let micros: i64 = micros.parse().map_err(|_| bad())?;
        if !kind.matches(id) {
            return Err(bad());
        }
        Ok(Self {
            created_at: Timestamp::from_micros(micros),
            id: id.to_owned(),
        })
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
        let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(format!(
                "limit must be between 1 and {MAX_LIMIT}, got {limit}"
            )));
        }
        let after = params
            .cursor
            .as_deref()
            .map(|c| Cursor::decode(c, kind))
            .transpose()?;
        Ok(Self { limit, after })
    }

    /// Rows to fetch: one more than the page holds.
    pub fn fetch(&self) -> u64 {
        u64::from(self.limit) + 1
    }
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
    pub fn from_rows(mut rows: Vec<T>, query: &PageQuery, key: impl Fn(&T) -> Cursor) -> Self {
        let has_more = rows.len() > query.limit as usize;
        rows.truncate(query.limit as usize);
        let next_cursor = if has_more {
            rows.last().map(|last| key(last).encode())
        } else {
            None
        };
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

#[cfg(test)]
mod tests {
    use super::*;

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
