//! Search over the organization's document chunks: the lexical ranking of the database,
//! blended with vector similarity when an embeddings provider is configured.

use std::collections::HashMap;

use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::knowledge::{Embedder, cosine, search_terms};
use crate::model::{DocumentSearch, SearchHit};
use crate::role::Permission;
use crate::service::Service;

/// Candidate chunks read per search from each ranking, per result asked for.
const CANDIDATES_PER_RESULT: u32 = 4;

/// Embedded chunks ranked by vector similarity per search, at most: the ranking is a scan in
/// this process.
const MAX_VECTOR_SCAN: u32 = 50_000;

impl Service {
    /// The organization's chunks that best match `input.query`, best first.
    pub async fn document_search(
        &self,
        actor: &Actor,
        input: DocumentSearch,
    ) -> Result<Vec<SearchHit>> {
        actor.require(Permission::KbRead)?;
        let query = input.query.trim();
        if query.is_empty() || query.chars().count() > 1000 {
            return Err(Error::invalid("query must be 1 to 1000 characters"));
        }
        let limit = input.limit.unwrap_or(5);
        if !(1..=50).contains(&limit) {
            return Err(Error::invalid("limit must be an integer between 1 and 50"));
        }
        let ids = match &input.document_ids {
            Some(ids) => Some(Self::check_ids(IdKind::Document, "document_ids", ids)?),
            None => None,
        };
        let candidates = limit * CANDIDATES_PER_RESULT;
        let mut hits = self
            .repo
            .chunk_search(
                &actor.organization_id,
                &search_terms(query),
                ids.as_deref(),
                candidates,
            )
            .await?;
        if let Some(embedder) = &self.knowledge.embedder {
            self.blend_vectors(embedder.as_ref(), actor, query, ids.as_deref(), &mut hits)
                .await?;
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.documentation_id.cmp(&b.documentation_id))
                .then(a.chunk_index.cmp(&b.chunk_index))
        });
        hits.truncate(limit as usize);
        Ok(hits)
    }

    /// Blends vector similarity into `hits`: every embedded chunk is ranked by its cosine with
    /// the query's vector; a chunk with a vector scores the mean of its lexical score and its
    /// similarity, the best of them joining `hits`. Without the query's vector (provider
    /// down), the lexical ranking stands.
    async fn blend_vectors(
        &self,
        embedder: &dyn Embedder,
        actor: &Actor,
        query: &str,
        ids: Option<&[String]>,
        hits: &mut Vec<SearchHit>,
    ) -> Result<()> {
        let stored = self
            .repo
            .chunk_vectors(&actor.organization_id, ids, MAX_VECTOR_SCAN)
            .await?;
        if stored.is_empty() {
            return Ok(());
        }
        let q = match embedder.embed(&[query.to_owned()]).await {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(_) | Err(_) => {
                tracing::warn!("search ranked lexically only: the query could not be embedded");
                return Ok(());
            }
        };
        let mut ranked: Vec<(f64, usize)> = stored
            .iter()
            .enumerate()
            .map(|(i, c)| (f64::from(cosine(&q, &c.embedding).max(0.0)), i))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        // One lookup per lexical hit, not a scan of every stored chunk.
        let similarity: HashMap<(&str, i64), f64> = ranked
            .iter()
            .map(|(s, i)| {
                let c = &stored[*i];
                ((c.documentation_id.as_str(), c.chunk_index), *s)
            })
            .collect();
        for hit in hits.iter_mut() {
            if let Some(s) = similarity.get(&(hit.documentation_id.as_str(), hit.chunk_index)) {
                hit.score = (hit.score + s) / 2.0;
            }
        }
        for (s, i) in ranked
            .iter()
            .take(hits.len().max(CANDIDATES_PER_RESULT as usize * 5))
        {
            let c = &stored[*i];
            if !hits
                .iter()
                .any(|h| h.documentation_id == c.documentation_id && h.chunk_index == c.chunk_index)
            {
                hits.push(SearchHit {
                    documentation_id: c.documentation_id.clone(),
                    chunk_index: c.chunk_index,
                    text: c.text.clone(),
                    score: s / 2.0,
                });
            }
        }
        Ok(())
    }
}
