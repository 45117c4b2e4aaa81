//! The answers of the hottest view, an agent, kept with their entity tags while the agent
//! they were written from is the one the service keeps: a voice runtime reads its agent for
//! every call, and serializing it and hashing the body for the `ETag` were a tenth of that
//! read's CPU once the agent itself came from memory.
//!
//! An answer is trusted only while the service hands back the very `Arc` it was written from
//! (the service replaces it when the agent, or anything it carries, changes anywhere), so a
//! kept answer is never older than the agent the service would answer.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use voiceplane_core::model::Agent;

use crate::error::ApiError;
use crate::response;

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

/// See the module documentation.
pub(crate) struct Representations {
    agents: Cache<String, Kept, ByLength>,
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
        }
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
