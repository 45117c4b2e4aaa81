//! The chunks of processed documents, and the one place where knowledge-base search speaks
//! each database's full-text dialect: FTS5 `MATCH` ranked by `bm25` on SQLite, `tsvector @@
//! tsquery` ranked by `ts_rank_cd` under a GIN index on Postgres. Both rank chunks that contain
//! any of the query's words, and both scores are mapped to `(0, 1)` as `r / (1 + r)`.

use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DatabaseBackend, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Statement, Value,
};
use voiceplane_core::knowledge::{decode_vector, encode_vector};
use voiceplane_core::model::{ChunkVector, Document, NewChunk, SearchHit};
use voiceplane_core::{Error, Result};

use crate::convert::db_err;
use crate::entity::chunk;

/// Rows per insert statement: well under either database's limit on parameters.
const INSERT_BATCH: usize = 200;

/// Replaces `document`'s chunks with `chunks` on `db` (the transaction that records the end
/// of its processing).
pub(super) async fn replace<C: ConnectionTrait>(
    db: &C,
    document: &Document,
    chunks: &[NewChunk],
) -> Result<()> {
    chunk::Entity::delete_many()
        .filter(chunk::Column::DocumentationId.eq(&document.documentation_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    for batch in chunks.chunks(INSERT_BATCH) {
        let rows = batch.iter().map(|c| chunk::ActiveModel {
            chunk_id: NotSet,
            organization_id: Set(document.organization_id.clone()),
            documentation_id: Set(document.documentation_id.clone()),
            chunk_index: Set(c.chunk_index),
            text: Set(c.text.clone()),
            embedding: Set(c.embedding.as_deref().map(encode_vector)),
        });
        chunk::Entity::insert_many(rows)
            .exec_without_returning(db)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// The full-text query of `terms` in `backend`'s syntax. The terms are letters and digits
/// only (`search_terms`), so quoting them cannot be escaped from.
fn full_text_query(backend: DatabaseBackend, terms: &[String]) -> String {
    match backend {
        DatabaseBackend::Postgres => terms.join(" | "),
        _ => terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR "),
    }
}

/// The search statement: `$1` the full-text query, `$2` the organization, `$3` the limit, then
/// one parameter per document id.
fn search_sql(backend: DatabaseBackend, document_ids: usize) -> String {
    let ids: Vec<String> = (0..document_ids).map(|i| format!("${}", i + 4)).collect();
    let only = if ids.is_empty() {
        String::new()
    } else {
        format!(" AND c.documentation_id IN ({})", ids.join(", "))
    };
    match backend {
        DatabaseBackend::Postgres => format!(
            "SELECT c.documentation_id, c.chunk_index, c.text, \
             ts_rank_cd(c.tsv, q)::float8 AS rank \
             FROM kb_chunks c, to_tsquery('english', $1) q \
             WHERE c.tsv @@ q AND c.organization_id = $2{only} \
             ORDER BY rank DESC, c.documentation_id, c.chunk_index LIMIT $3"
        ),
        // bm25() is lower for better matches. CROSS JOIN keeps the full-text match as the
        // outer loop: one index query, then a key lookup per match. With a plain JOIN the
        // planner may walk the organization's chunks and run the match once per chunk.
        _ => format!(
            "SELECT c.documentation_id, c.chunk_index, c.text, \
             -bm25(kb_chunks_fts) AS rank \
             FROM kb_chunks_fts CROSS JOIN kb_chunks c ON c.chunk_id = kb_chunks_fts.rowid \
             WHERE kb_chunks_fts MATCH $1 AND c.organization_id = $2{only} \
             ORDER BY rank DESC, c.documentation_id, c.chunk_index LIMIT $3"
        )
        .replace('$', "?"),
    }
}

/// The chunks of `organization_id` (of `document_ids` only, when given) that contain any of
/// `terms`, best first.
pub(super) async fn search<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    terms: &[String],
    document_ids: Option<&[String]>,
    limit: u32,
) -> Result<Vec<SearchHit>> {
    if terms.is_empty() || document_ids.is_some_and(<[String]>::is_empty) {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let ids = document_ids.unwrap_or_default();
    let mut values: Vec<Value> = vec![
        full_text_query(backend, terms).into(),
        organization_id.into(),
        i64::from(limit).into(),
    ];
    values.extend(ids.iter().map(|id| Value::from(id.as_str())));
    let rows = db
        .query_all_raw(Statement::from_sql_and_values(
            backend,
            search_sql(backend, ids.len()),
            values,
        ))
        .await
        .map_err(db_err)?;
    let get = |e: sea_orm::DbErr| Error::Internal(format!("kb_chunks search row: {e}"));
    rows.iter()
        .map(|row| {
            let rank: f64 = row.try_get("", "rank").map_err(get)?;
            let rank = rank.max(0.0);
            Ok(SearchHit {
                documentation_id: row.try_get("", "documentation_id").map_err(get)?,
                chunk_index: row.try_get("", "chunk_index").map_err(get)?,
                text: row.try_get("", "text").map_err(get)?,
                score: rank / (1.0 + rank),
            })
        })
        .collect()
}

/// The embedded chunks of `organization_id` (of `document_ids` only, when given), at most
/// `limit`.
pub(super) async fn vectors<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    document_ids: Option<&[String]>,
    limit: u32,
) -> Result<Vec<ChunkVector>> {
    let mut select = chunk::Entity::find()
        .filter(chunk::Column::OrganizationId.eq(organization_id))
        .filter(chunk::Column::Embedding.is_not_null());
    if let Some(ids) = document_ids {
        select = select.filter(chunk::Column::DocumentationId.is_in(ids.iter().cloned()));
    }
    let rows = select
        .order_by_asc(chunk::Column::ChunkId)
        .limit(u64::from(limit))
        .all(db)
        .await
        .map_err(db_err)?;
    Ok(rows
        .into_iter()
        .filter_map(|m| {
            let embedding = decode_vector(m.embedding.as_deref()?)?;
            Some(ChunkVector {
                documentation_id: m.documentation_id,
                chunk_index: m.chunk_index,
                text: m.text,
                embedding,
            })
        })
        .collect())
}
