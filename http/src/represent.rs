//! The answers of the hottest view, an agent, kept with their entity tags while the agent
//! they were written from is the one the service keeps: a voice runtime reads its agent for
//! every call, and serializing it and hashing the body for the `ETag` were a tenth of that
//! read's CPU once the agent itself came from memory.
//!
//! An answer is trusted only while the service hands back the very `Arc` it was written from
//! (the service replaces it when the agent, or anything it carries, changes anywhere), so a
//! kept answer is never older than the agent the service would answer.
//!
//! Pages of calls the same way: a page the repository keeps in memory comes back as the same
//! `Arc` of rows until something is committed, and its body (about 24 KB for 50 calls) was
//! copied together from those rows for every answer.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use voiceplane_core::model::{Agent, CallJson};
use voiceplane_core::page::SharedPage;

use crate::error::ApiError;
use crate::response::{self, Pagination};

/// Bytes of answers kept, about: agents up to this much JSON (a prompt can be long).
const BUDGET: u64 = 32 * 1024 * 1024;

/// Answers kept at first; the table grows with use.
const INITIAL_ENTRIES: usize = 1024;

/// A complete `200` answer and its entity tag.
#[derive(Clone)]
pub(crate) struct Tagged {
    pub(crate) body: Bytes,
    pub(crate) etag: HeaderValue,
}

#[derive(Clone)]
struct Kept {
    agent: Arc<Agent>,
    answer: Tagged,
}

#[derive(Clone)]
struct ByLength;

impl Weighter<String, Kept> for ByLength {
    fn weight(&self, key: &String, kept: &Kept) -> u64 {
        // The agent kept alive weighs about what its JSON does.
        u64::try_from(key.len() + 2 * kept.answer.body.len()).unwrap_or(u64::MAX)
    }
}

/// A page of calls' body, and the rows it was written from.
#[derive(Clone)]
struct KeptPage {
    rows: Arc<Vec<CallJson>>,
    len: usize,
    body: Bytes,
}

#[derive(Clone)]
struct ByBody;

impl Weighter<usize, KeptPage> for ByBody {
    fn weight(&self, _: &usize, kept: &KeptPage) -> u64 {
        // The rows kept alive weigh about what the body does: once a commit has the repository
        // read the page again, only this entry holds the old ones, until it is evicted.
        u64::try_from(2 * kept.body.len()).unwrap_or(u64::MAX)
    }
}

/// Bytes of page bodies and their rows kept, about: as many as the repository keeps.
const PAGES_BUDGET: u64 = 16 * 1024 * 1024;

/// See the module documentation.
pub(crate) struct Representations {
    agents: Cache<String, Kept, ByLength>,
    /// By the address of their rows: an entry holds its rows alive, so no other page's rows
    /// can have that address while it is kept.
    pages: Cache<usize, KeptPage, ByBody>,
}

impl std::fmt::Debug for Representations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Representations").finish_non_exhaustive()
    }
}

impl Representations {
    pub(crate) fn new() -> Self {
        Self {
            agents: Cache::with_weighter(INITIAL_ENTRIES, BUDGET, ByLength),
            pages: Cache::with_weighter(INITIAL_ENTRIES, PAGES_BUDGET, ByBody),
        }
    }

    /// The body of `page`: the one kept for its very rows, else written now (and kept).
    pub(crate) fn calls_page(&self, page: &SharedPage<CallJson>) -> Result<Bytes, ApiError> {
        let address = Arc::as_ptr(page.rows()) as usize;
        if let Some(kept) = self.pages.get(&address)
            && Arc::ptr_eq(&kept.rows, page.rows())
            && kept.len == page.items().len()
        {
            return Ok(kept.body);
        }
        let pagination = Pagination::new(
            page.next_cursor.as_deref(),
            page.has_more,
            page.items().len(),
        );
        let body = Bytes::from(response::page_of_json(page.items(), pagination, |call| {
            &call.json
        })?);
        // Rows that only this page holds were read for it and are not kept by the repository:
        // keeping their body would only churn memory (a page never read before paid 8 % more).
        if Arc::strong_count(page.rows()) == 1 {
            return Ok(body);
        }
        self.pages.insert(
            address,
            KeptPage {
                rows: Arc::clone(page.rows()),
                len: page.items().len(),
                body: body.clone(),
            },
        );
        Ok(body)
    }

    /// `{"success": true, "data": agent}` and its tag: the ones kept for this very agent,
    /// else written now (and kept).
    pub(crate) fn agent(&self, agent: &Arc<Agent>) -> Result<Tagged, ApiError> {
        if let Some(kept) = self.agents.get(&agent.agent_id)
            && Arc::ptr_eq(&kept.agent, agent)
        {
            return Ok(kept.answer);
        }
        let body = Bytes::from(response::data_bytes(&**agent)?);
        let etag = crate::conditional::etag_of_body(&body).ok_or_else(|| {
            ApiError::from(voiceplane_core::Error::Internal(
                "an entity tag is not a header value".into(),
            ))
        })?;
        let answer = Tagged { body, etag };
        self.agents.insert(
            agent.agent_id.clone(),
            Kept {
                agent: Arc::clone(agent),
                answer: answer.clone(),
            },
        );
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use voiceplane_core::time::Timestamp;

    use super::*;

    fn rows(sids: &[&str]) -> Arc<Vec<CallJson>> {
        Arc::new(
            sids.iter()
                .map(|sid| CallJson {
                    created_at: Timestamp::from_micros(1),
                    call_sid: (*sid).to_owned(),
                    json: format!(r#"{{"call_sid":"{sid}"}}"#),
                })
                .collect(),
        )
    }

    fn page(rows: &Arc<Vec<CallJson>>, limit: u32) -> SharedPage<CallJson> {
        SharedPage::from_rows_by(Arc::clone(rows), limit, |c| c.call_sid.clone())
    }

    /// The body is written once for rows the repository keeps and hands back again, and
    /// written anew for other rows, even equal ones, for another cut of the same rows, and
    /// for rows nothing else keeps.
    #[test]
    fn a_calls_page_body_is_kept_for_its_very_rows() {
        let kept = Representations::new();
        let first = rows(&["call_a", "call_b", "call_c"]);
        let body = kept.calls_page(&page(&first, 2)).unwrap();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.starts_with(
                r#"{"success":true,"data":[{"call_sid":"call_a"},{"call_sid":"call_b"}],"#
            ) && text.contains(r#""has_more":true"#)
                && text.contains(r#""next_cursor":"call_b""#),
            "{text}"
        );
        let again = kept.calls_page(&page(&first, 2)).unwrap();
        assert_eq!(again.as_ptr(), body.as_ptr(), "the same bytes, not a copy");

        let whole = kept.calls_page(&page(&first, 3)).unwrap();
        assert!(std::str::from_utf8(&whole).unwrap().contains("call_c"));

        let equal = rows(&["call_a", "call_b", "call_c"]);
        let other = kept.calls_page(&page(&equal, 2)).unwrap();
        assert_eq!(other, body);
        assert_ne!(
            other.as_ptr(),
            body.as_ptr(),
            "other rows are written for themselves"
        );

        let changed = rows(&["call_new", "call_a", "call_b"]);
        let fresh = kept.calls_page(&page(&changed, 2)).unwrap();
        assert!(std::str::from_utf8(&fresh).unwrap().contains("call_new"));

        let read_once = page(&rows(&["call_x"]), 2);
        let written = kept.calls_page(&read_once).unwrap();
        let rewritten = kept.calls_page(&read_once).unwrap();
        assert_eq!(written, rewritten);
        assert_ne!(written.as_ptr(), rewritten.as_ptr(), "not kept");
    }
}
