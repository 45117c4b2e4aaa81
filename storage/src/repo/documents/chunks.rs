//! The chunks of processed documents, and the one place where knowledge-base search speaks
//! each database's full-text dialect: FTS5 `MATCH` ranked by its `bm25` on SQLite, `tsvector
//! @@ tsquery` under a GIN index ranked by the same BM25 written in SQL on Postgres
//! ([`POSTGRES_BM25`]). Both rank chunks that contain any of the query's words, and both
//! scores are mapped to `(0, 1)` as `r / (1 + r)`.

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

/// BM25 (k1 = 1.2, b = 0.75, as SQLite's `bm25`) over the organization's chunks, on Postgres.
///
/// `ts_rank_cd` weighs every word alike and ignores a chunk's length: searching "<a word one
/// document has> warranty" scored the one chunk with the rare word as any chunk saying
/// "warranty" once (0.1), below one saying it twice, and a tie went to whichever random
/// documentation id sorts first, so which chunk came first changed with the documents that
/// happened to exist (SQLite's `bm25` never had this). Here a word counts by its
/// rarity among the organization's chunks (`idf`), its count in the chunk saturates (`tf`,
/// `ts_rank_cd` with unit weights of a one-word query: its number of occurrences), and a long
/// chunk counts less. Each word's matches are read through the GIN index; the average length
/// is that of the chunks matched (the organization's whole would cost a scan of them all). A
/// `document_ids` filter (`{only}`) narrows what is ranked, not the statistics, so a score does
/// not depend on it. Text is read for the chunks returned only.
const POSTGRES_BM25: &str = "\
    WITH words AS ( \
        SELECT w AS word, quote_literal(w)::tsquery AS q \
        FROM unnest(tsvector_to_array(to_tsvector('english', $1))) w \
    ), \
    terms AS MATERIALIZED ( \
        SELECT c.chunk_id, c.documentation_id, c.chunk_index, w.word, \
               length(c.tsv)::float8 AS len, \
               ts_rank_cd('{1,1,1,1}', c.tsv, w.q)::float8 AS tf \
        FROM words w JOIN kb_chunks c ON c.tsv @@ w.q \
        WHERE c.organization_id = $2 \
    ), \
    chunks AS ( \
        SELECT count(*)::float8 AS n, (SELECT avg(len) FROM terms) AS len \
        FROM kb_chunks WHERE organization_id = $2 \
    ), \
    idf AS ( \
        SELECT t.word, ln(1 + (k.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf \
        FROM terms t, chunks k GROUP BY t.word, k.n \
    ), \
    ranked AS ( \
        SELECT t.chunk_id, t.documentation_id, t.chunk_index, \
               sum(i.idf * t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * t.len / k.len))) AS rank \
        FROM terms t JOIN idf i ON i.word = t.word, chunks k \
        WHERE true{only} \
        GROUP BY t.chunk_id, t.documentation_id, t.chunk_index \
        ORDER BY rank DESC, t.documentation_id, t.chunk_index LIMIT $3 \
    ) \
    SELECT r.documentation_id, r.chunk_index, c.text, r.rank::float8 AS rank \
    FROM ranked r JOIN kb_chunks c ON c.chunk_id = r.chunk_id \
    ORDER BY r.rank DESC, r.documentation_id, r.chunk_index";

/// The search statement: `$1` the full-text query, `$2` the organization, `$3` the limit, then
/// one parameter per document id.
fn search_sql(backend: DatabaseBackend, document_ids: usize) -> String {
    let ids: Vec<String> = (0..document_ids).map(|i| format!("${}", i + 4)).collect();
    let only = |table: &str| {
        if ids.is_empty() {
            String::new()
        } else {
            format!(" AND {table}.documentation_id IN ({})", ids.join(", "))
        }
    };
    match backend {
        DatabaseBackend::Postgres => POSTGRES_BM25.replace("{only}", &only("t")),
        // bm25() is lower for better matches. CROSS JOIN keeps the full-text match as the
        // outer loop: one index query, then a key lookup per match. With a plain JOIN the
        // planner may walk the organization's chunks and run the match once per chunk.
        _ => format!(
            "SELECT c.documentation_id, c.chunk_index, c.text, \
             -bm25(kb_chunks_fts) AS rank \
             FROM kb_chunks_fts CROSS JOIN kb_chunks c ON c.chunk_id = kb_chunks_fts.rowid \
             WHERE kb_chunks_fts MATCH $1 AND c.organization_id = $2{} \
             ORDER BY rank DESC, c.documentation_id, c.chunk_index LIMIT $3",
            only("c")
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
