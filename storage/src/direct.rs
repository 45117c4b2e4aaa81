//! The hot reads of a SQLite file, run on the calling thread.
//!
//! sqlx gives every SQLite connection a thread of its own and hands each statement and each
//! row across a channel to it and back. On a two-core machine that hand-off cost more than
//! everything else a read does: an authenticated agent read (two statements) spent about 55 %
//! of its CPU in futex waits and wake-ups (see docs/ARCHITECTURE.md, "The hot read path").
//! These reads run the same SQL, built by SeaORM for SQLite, through rusqlite instead: the
//! credential version, a key by the hash of its secret, an agent with its numbers, and a page
//! of calls. Everything else still goes through SeaORM and sqlx, and so does every write but
//! an incoming call's, which runs here as one transaction on one thread (`write.rs`).
//!
//! A read is tens of microseconds, but it can also wait: on the file's locks (up to the 5 s
//! busy timeout, while another process recovers or checkpoints the database) or on a slow
//! disk. On an async worker that wait would stall every request queued on the worker, so each
//! read runs on tokio's blocking threads ([`DirectReads::run`]), at most [`readers`] of them at
//! once: a semaphore permit travels with the read onto its thread, so even reads whose request
//! was dropped count until they end, and a stuck disk holds that many threads, not more. The
//! statements of one request run in one hand-off (an agent and its numbers, say). What a hot
//! read costs in the common case is not a hand-off at all: keys and agents come from memory,
//! and the change versions from the WAL index header (below), read inline with one `pread`
//! of a file that is always in memory (SQLite maps it; it takes no lock).
//!
//! Connections are opened on demand, kept idle for the next read, and are read-only
//! (`query_only`); in WAL mode a reader never waits for a writer. They share the file's
//! committed state with the pool, as any two connections outside a transaction do. An
//! in-memory database (one connection by definition) is read through sqlx as before.
//!
//! The change versions, read for every authenticated request, are read only when something
//! has been committed since the last read ([`DirectReads::versions`]). A read transaction
//! costs SQLite a mutex and two `fcntl` locks on the WAL index: a quarter of an agent read's
//! CPU once keys and agents came from memory. Every commit, by any process, rewrites the
//! header at the start of the WAL index (the `-shm` file, <https://sqlite.org/walformat.html>),
//! raising its change counter; SQLite's readers themselves compare that header, without a
//! lock, to decide whether their snapshot is current. One `pread` of it tells the same here.
//!
//! Pages of calls are kept the same way ([`DirectReads::calls_page`]): each with the header it
//! was read under, and answered from memory while the header is unchanged, which means nothing
//! at all has been committed to the file since. A page polled by several consoles, or by one
//! between two changes, is read once; any commit, of a call or of anything else, makes the
//! next request of every page read it again.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rusqlite::config::DbConfig;
use rusqlite::types::Value as Lite;
use rusqlite::{Connection, OpenFlags, Row};
use sea_orm::{DbBackend, Statement, Value};
use tokio::sync::Semaphore;
use voiceplane_core::cache::ChangeVersions;
use voiceplane_core::model::CallJson;
use voiceplane_core::{Error, Result};

use crate::entity::{agent, api_key, call, phone_number};
use crate::kept::{KeptPages, Looked, page_key};
use crate::repo::changes::READ_VERSIONS as READ_VERSIONS_SQL;

mod write;
pub(crate) use write::WriteTurn;

/// Idle connections kept for the next reads: one for each reader.
const MAX_IDLE: usize = 8;

/// How many direct reads run at once, each on a blocking thread: one per core (a read is CPU
/// work, when it does not wait), at least 2 so that one stuck read does not hold up the others,
/// and at most one per idle connection kept.
pub(crate) fn readers() -> usize {
    std::thread::available_parallelism()
        .map_or(4, std::num::NonZero::get)
        .clamp(2, MAX_IDLE)
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct DirectReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// The WAL index being watched, once opened; `Some(None)` when it cannot be (the
    /// database is not in WAL mode), and the versions are then read every time.
    wal: OnceLock<Option<WalWatch>>,
    /// One permit per read running on a blocking thread.
    running: Arc<Semaphore>,
    /// The connection of the direct writes (`write.rs`), between them.
    writer: Mutex<Option<Connection>>,
    /// Pages of calls by their statement, with the WAL-index header each was read under.
    pages: KeptPages<[u8; WAL_HEADER]>,
}

/// The reads that block, handed to the closure of [`DirectReads::run`] on a blocking thread:
/// only there can they be made.
pub(crate) struct Reads<'a>(&'a DirectReads);

impl Reads<'_> {
    /// Every row `statement` (built for SQLite) returns, decoded by `decoder`.
    pub(crate) fn all<T>(&self, statement: &Statement, decoder: &Decoder<T>) -> Result<Vec<T>> {
        self.0.all(statement, decoder)
    }

    /// The first row `statement` returns, decoded by `decoder`.
    pub(crate) fn one<T>(&self, statement: &Statement, decoder: &Decoder<T>) -> Result<Option<T>> {
        Ok(self.all(statement, decoder)?.into_iter().next())
    }
}

/// The size of one copy of the WAL-index header; the file starts with two.
const WAL_HEADER: usize = 48;

/// The WAL index of the database, and the versions last read with the header it had then.
#[derive(Debug)]
struct WalWatch {
    /// Keeps the database's SHARED lock (which a WAL-mode connection holds between its
    /// transactions) for as long as the watch lives. SQLite deletes or rebuilds the `-shm` file
    /// only under an EXCLUSIVE lock, when the last connection closes, so `shm` stays the live
    /// index. Never used again (the mutex only makes the watch shareable between threads).
    _anchor: Mutex<Connection>,
    shm: File,
    last: Mutex<Option<([u8; WAL_HEADER], ChangeVersions)>>,
}

impl WalWatch {
    fn open(reads: &DirectReads) -> Option<Self> {
        let anchor = reads.open().ok()?;
        let mode: String = anchor
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") {
            return None;
        }
        // A read takes the SHARED lock the anchor then keeps, and maps the WAL index.
        anchor.query_row(READ_VERSIONS_SQL, [], |_| Ok(())).ok()?;
        let mut shm = reads.path.clone().into_os_string();
        shm.push("-shm");
        let shm = File::open(shm).ok()?;
        Some(Self {
            _anchor: Mutex::new(anchor),
            shm,
            last: Mutex::default(),
        })
    }

    /// The first copy of the header, when both copies agree (a commit writes the second copy,
    /// then the first: a header caught in between is no answer). Taken without a lock: the
    /// kept versions' lock, held across this system call, queued every core's authenticated
    /// requests behind one another's `pread`.
    fn header(&self) -> Option<[u8; WAL_HEADER]> {
        let mut both = [0u8; 2 * WAL_HEADER];
        self.shm.read_exact_at(&mut both, 0).ok()?;
        let (first, second) = both.split_at(WAL_HEADER);
        // Byte 12 is `isInit`: an index not yet built says nothing.
        (first == second && first[12] == 1).then(|| first.try_into().ok())?
    }

    fn last(&self) -> MutexGuard<'_, Option<([u8; WAL_HEADER], ChangeVersions)>> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The file of a `sqlite:` URL, unless it names an in-memory database.
pub(crate) fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(PathBuf::from(path))
}

fn failed(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(
                code.code,
                rusqlite::ErrorCode::DatabaseBusy
                    | rusqlite::ErrorCode::DatabaseLocked
                    | rusqlite::ErrorCode::CannotOpen
            ) =>
        {
            Error::Unavailable(format!("the database cannot be used: {e}"))
        }
        e => Error::Internal(format!("a direct statement failed: {e}")),
    }
}

impl DirectReads {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self::with_readers(path, readers())
    }

    fn with_readers(path: PathBuf, readers: usize) -> Self {
        Self {
            path,
            idle: Mutex::default(),
            wal: OnceLock::new(),
            running: Arc::new(Semaphore::new(readers)),
            writer: Mutex::default(),
            pages: KeptPages::default(),
        }
    }

    /// Runs `read` on a blocking thread once fewer than [`readers`] reads are running (the
    /// wait is async: it holds no thread).
    pub(crate) async fn run<T, F>(self: &Arc<Self>, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Reads<'_>) -> Result<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.running)
            .acquire_owned()
            .await
            .map_err(|_| Error::Unavailable("the database is closed".into()))?;
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            // Released when the read ends, not when its request goes away.
            let _permit = permit;
            read(Reads(&this))
        })
        .await
        .map_err(|e| Error::Internal(format!("a direct read did not finish: {e}")))?
    }

    /// The change versions: from the watch while the WAL-index header is the one seen at
    /// the last read, inline (see the module documentation); else read on a reader thread.
    pub(crate) async fn versions(self: &Arc<Self>) -> Result<ChangeVersions> {
        if let Some(kept) = self.kept_versions() {
            return Ok(kept);
        }
        self.run(|reads| reads.0.read_versions()).await
    }

    /// The calls `statement` (a page of calls, built for SQLite) selects, written as JSON: the
    /// page kept from an earlier read of the same statement while the WAL-index header is the
    /// one taken before that read (see the module documentation), else read on a reader
    /// thread. The header is taken before the read, as for the versions: a page kept can only
    /// be newer than its header, and is answered only while nothing has been committed after
    /// that header. A page is kept from its second read on: one asked for only once (a
    /// filter typed once, a database that commits between any two reads) costs no copy.
    pub(crate) async fn calls_page(
        self: &Arc<Self>,
        statement: Statement,
    ) -> Result<Arc<Vec<CallJson>>> {
        let key = page_key(&statement);
        let again = match self.pages.look(&key) {
            Looked::Kept(kept) if self.header() == Some(kept.mark) => return Ok(kept.calls),
            Looked::Kept(_) | Looked::Again => true,
            Looked::First => false,
        };
        self.run(move |reads| {
            let header = again.then(|| reads.0.watched_header()).flatten();
            let calls = Arc::new(reads.all(&statement, &CALL_JSON)?);
            if let Some(header) = header {
                reads.0.pages.keep(key, header, &calls);
            }
            Ok(calls)
        })
        .await
    }

    /// Every reader's permit: no read runs on a reader thread until they are dropped.
    #[cfg(test)]
    pub(crate) async fn hold_readers(&self) -> tokio::sync::SemaphorePermit<'_> {
        let readers = u32::try_from(readers()).unwrap_or(u32::MAX);
        self.running
            .acquire_many(readers)
            .await
            .unwrap_or_else(|_| unreachable!())
    }

    /// The watch, once opened; `None` before (opening it opens a connection, which may wait).
    fn watch(&self) -> Option<&WalWatch> {
        self.wal.get()?.as_ref()
    }

    /// The WAL-index header now; `None` before the watch is opened.
    fn header(&self) -> Option<[u8; WAL_HEADER]> {
        self.watch()?.header()
    }

    /// The watch, opening it first if need be (which may wait: on a reader thread only);
    /// `None` when the database is not in WAL mode.
    fn opened_watch(&self) -> Option<&WalWatch> {
        self.wal.get_or_init(|| WalWatch::open(self)).as_ref()
    }

    /// The WAL-index header now, opening the watch first if need be (on a reader thread
    /// only); `None` when the database is not in WAL mode.
    fn watched_header(&self) -> Option<[u8; WAL_HEADER]> {
        self.opened_watch()?.header()
    }

    /// The versions kept, if the header still says nothing was committed since they were
    /// read; `None` before the watch is opened.
    fn kept_versions(&self) -> Option<ChangeVersions> {
        let watch = self.watch()?;
        let header = watch.header()?;
        let (seen, versions) = (*watch.last())?;
        (header == seen).then_some(versions)
    }

    /// The change versions, read only when the WAL-index header has changed since the last
    /// read (see the module documentation). The header is taken before the row is read, so
    /// the pair kept can only be older than the header says, never newer: an unchanged header
    /// means nothing has been committed since the row was read.
    fn read_versions(&self) -> Result<ChangeVersions> {
        let watch = self.opened_watch();
        let header = watch.and_then(WalWatch::header);
        if let (Some(watch), Some(header)) = (watch, header)
            && let Some((seen, versions)) = *watch.last()
            && header == seen
        {
            return Ok(versions);
        }
        let read = Statement::from_string(DbBackend::Sqlite, READ_VERSIONS_SQL);
        let versions = Reads(self)
            .one(&read, &VERSIONS)?
            .ok_or_else(crate::repo::changes::missing_row)?;
        if let (Some(watch), Some(header)) = (watch, header) {
            *watch.last() = Some((header, versions));
        }
        Ok(versions)
    }

    /// A connection to the file that waits on its locks as the pool's do, with a statement
    /// cache.
    fn connect(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(crate::SQLITE_BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = self.connect()?;
        conn.pragma_update(None, "query_only", true)?;
        // The bundled SQLite keeps ANALYZE's samples (STAT4), and a statement whose range
        // bounds are parameters is then compiled again whenever their values change, so that
        // the plan can follow them: every calls page paid a fresh parse and plan, a fifth of
        // its CPU. The query planner stability guarantee keeps the plan the first
        // preparation chose, which the pages already fix with `INDEXED BY`.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        Ok(conn)
    }

    /// Runs `read` on an idle connection (or a new one), then keeps the connection.
    fn with<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let taken = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self.open().map_err(failed)?,
        };
        let result = read(&conn).map_err(failed);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
        result
    }

    /// Every row `statement` (built for SQLite) returns, decoded by `decoder`; blocks.
    fn all<T>(&self, statement: &Statement, decoder: &Decoder<T>) -> Result<Vec<T>> {
        debug_assert_eq!(statement.db_backend, DbBackend::Sqlite);
        let params = values(statement)?;
        self.with(|conn| {
            let mut prepared = conn.prepare_cached(&statement.sql)?;
            // Columns are found by name once per statement, not once per row and field.
            let at = decoder
                .names
                .iter()
                .map(|name| prepared.column_index(name))
                .collect::<rusqlite::Result<Vec<usize>>>()?;
            let rows = prepared.query_map(rusqlite::params_from_iter(params), |row| {
                (decoder.build)(&mut Fields {
                    row,
                    at: &at,
                    next: 0,
                })
            })?;
            rows.collect()
        })
    }
}

/// How rows of one shape are read: the columns by name, and a constructor that takes their
/// values in that order ([`decoder!`] writes both from one list, so they cannot disagree).
pub(crate) struct Decoder<T> {
    names: &'static [&'static str],
    build: fn(&mut Fields<'_, '_>) -> rusqlite::Result<T>,
}

/// The values of one row, in the order of a [`Decoder`]'s names.
pub(crate) struct Fields<'r, 's> {
    row: &'r Row<'s>,
    at: &'r [usize],
    next: usize,
}

impl<'r> Fields<'r, '_> {
    fn next<V: rusqlite::types::FromSql>(&mut self) -> rusqlite::Result<V> {
        let index = self.at[self.next];
        self.next += 1;
        self.row.get(index)
    }

    /// The next value as SQLite holds it, borrowed from the row.
    pub(crate) fn next_ref(&mut self) -> rusqlite::Result<rusqlite::types::ValueRef<'r>> {
        let index = self.at[self.next];
        self.next += 1;
        self.row.get_ref(index)
    }
}

/// A [`Decoder`] of `$module::$model` reading each listed field from the column of its name; struct
/// expressions evaluate their fields in the order written, which is the names' order, and the
/// compiler insists on every field of the model.
macro_rules! decoder {
    ($module:ident :: $model:ident { $($field:ident),* $(,)? }) => {
        Decoder {
            names: &[$(stringify!($field)),*],
            build: |f| Ok($module::$model { $($field: f.next()?),* }),
        }
    };
}

/// The statement's values as SQLite values.
fn values(statement: &Statement) -> Result<Vec<Lite>> {
    let Some(values) = &statement.values else {
        return Ok(Vec::new());
    };
    values
        .0
        .iter()
        .map(|v| {
            Ok(match v {
                Value::String(Some(s)) => Lite::Text(s.clone()),
                Value::BigInt(Some(n)) => Lite::Integer(*n),
                Value::Int(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::SmallInt(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::TinyInt(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::BigUnsigned(Some(n)) => Lite::Integer(
                    i64::try_from(*n).map_err(|_| Error::Internal("value out of range".into()))?,
                ),
                Value::Unsigned(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::Bool(Some(b)) => Lite::Integer(i64::from(*b)),
                Value::Double(Some(x)) => Lite::Real(*x),
                Value::Float(Some(x)) => Lite::Real(f64::from(*x)),
                Value::Bytes(Some(b)) => Lite::Blob(b.clone()),
                Value::String(None)
                | Value::BigInt(None)
                | Value::Int(None)
                | Value::SmallInt(None)
                | Value::TinyInt(None)
                | Value::BigUnsigned(None)
                | Value::Unsigned(None)
                | Value::Bool(None)
                | Value::Double(None)
                | Value::Float(None)
                | Value::Bytes(None) => Lite::Null,
                other => {
                    return Err(Error::Internal(format!(
                        "no SQLite value for {other:?} in a direct statement"
                    )));
                }
            })
        })
        .collect()
}

/// The numbers of the change version row.
static VERSIONS: Decoder<ChangeVersions> = Decoder {
    names: &["credentials", "agents"],
    build: |f| {
        Ok(ChangeVersions {
            credentials: f.next()?,
            agents: f.next()?,
        })
    },
};

pub(crate) static API_KEY: Decoder<api_key::Model> = decoder!(api_key::Model {
    key_id,
    organization_id,
    user_id,
    name,
    role,
    prefix,
    secret_hash,
    status,
    created_at,
    last_used_at,
    expires_at,
    revoked_at,
    scopes,
});

pub(crate) static AGENT: Decoder<agent::Model> = decoder!(agent::Model {
    agent_id,
    organization_id,
    agent_name,
    language,
    stt_provider,
    tts_provider,
    tts_voice,
    llm_provider,
    llm_model,
    system_prompt,
    speak_first,
    end_call_tool,
    llm_temperature,
    recording_enabled,
    voicemail_detection,
    voicemail_response_delay,
    custom_tools,
    kb_document_ids,
    created_at,
    updated_at,
    runtime_stream_url,
    published_version,
    deployment,
    analysis,
    analysis_key,
});

pub(crate) static PHONE_NUMBER: Decoder<phone_number::Model> = decoder!(phone_number::Model {
    phone_number_id,
    organization_id,
    phone_number,
    provider,
    status,
    supports_inbound,
    supports_outbound,
    assigned_agent_id,
    integration_id,
    created_at,
    updated_at,
    provider_number_id,
    connected_at,
});

/// A call written as `Call` serializes it (`repo::calls::json`).
pub(crate) static CALL_JSON: Decoder<voiceplane_core::model::CallJson> = Decoder {
    names: crate::repo::calls::json::COLUMNS,
    build: |fields| Ok(crate::repo::calls::json::write(fields)?),
};

pub(crate) static CALL: Decoder<call::Model> = decoder!(call::Model {
    call_sid,
    organization_id,
    agent_id,
    agent_name,
    to_number,
    from_number,
    call_type,
    status,
    recording_enabled,
    total_cost,
    duration_seconds,
    turn_count,
    start_time,
    end_time,
    end_reason,
    billing_status,
    created_at,
    updated_at,
    recording_key,
    recording_content_type,
    recording_size,
    message_seq,
    provider,
    provider_call_id,
    phone_number_id,
    answered_by,
    dynamic_variables,
    metadata,
    provider_error,
    agent_version,
    timezone,
    dial_started_at,
    campaign_id,
    recipient_id,
    cost_breakdown,
    analysis_status,
    analysis,
    analysis_error,
    successful,
    runtime_token,
    latency,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_are_read_directly() {
        assert_eq!(
            sqlite_file("sqlite:///tmp/a.db?mode=rwc"),
            Some(PathBuf::from("/tmp/a.db"))
        );
        assert_eq!(
            sqlite_file("sqlite://data/v.db"),
            Some(PathBuf::from("data/v.db"))
        );
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://x.db?mode=memory"), None);
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }

    /// At most `readers` reads hold a blocking thread, even when the request that started
    /// one is gone: the next read waits for the permit without a thread, then runs.
    #[tokio::test]
    async fn reads_beyond_the_bound_wait_for_a_running_one_to_end() {
        use std::sync::atomic::{AtomicBool, Ordering};

        let reads = Arc::new(DirectReads::with_readers(PathBuf::from("unused.db"), 1));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (started, running) = tokio::sync::oneshot::channel::<()>();
        // A read stuck (on a lock, a slow disk) until released, whose request goes away.
        let stuck = tokio::spawn({
            let reads = Arc::clone(&reads);
            async move {
                reads
                    .run(move |_| {
                        let _ = started.send(());
                        let _ = released.recv();
                        Ok(())
                    })
                    .await
            }
        });
        running.await.unwrap();
        stuck.abort();
        assert!(stuck.await.unwrap_err().is_cancelled());

        let ran = Arc::new(AtomicBool::new(false));
        let next = tokio::spawn({
            let (reads, ran) = (Arc::clone(&reads), Arc::clone(&ran));
            async move {
                reads
                    .run(move |_| {
                        ran.store(true, Ordering::SeqCst);
                        Ok(())
                    })
                    .await
            }
        });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(
            !ran.load(Ordering::SeqCst) && !next.is_finished(),
            "a second read ran beside the stuck one"
        );
        assert_eq!(reads.running.available_permits(), 0);
        release.send(()).unwrap();
        next.await.unwrap().unwrap();
        assert!(ran.load(Ordering::SeqCst));
    }

    /// Another process's commit, here another connection's, is seen on the next read; in
    /// between, the versions come from the watch.
    #[tokio::test]
    async fn versions_follow_every_commit_of_another_connection() {
        let dir = std::env::temp_dir().join(format!("vp-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = wal;
                 CREATE TABLE change_version (id INTEGER PRIMARY KEY, credentials BIGINT, agents BIGINT);
                 INSERT INTO change_version VALUES (1, 0, 0);",
            )
            .unwrap();
        let reads = Arc::new(DirectReads::new(path));
        let at = |credentials, agents| ChangeVersions {
            credentials,
            agents,
        };
        assert_eq!(reads.versions().await.unwrap(), at(0, 0));
        let watched = || reads.watch().unwrap().last().map(|(_, v)| v);
        assert_eq!(watched(), Some(at(0, 0)), "the WAL index is watched");
        for n in 1..=3 {
            writer
                .execute("UPDATE change_version SET agents = agents + 1", [])
                .unwrap();
            assert_eq!(reads.versions().await.unwrap(), at(0, n));
            assert_eq!(
                reads.versions().await.unwrap(),
                at(0, n),
                "unchanged: from the watch"
            );
        }
        writer
            .execute("UPDATE change_version SET credentials = 9", [])
            .unwrap();
        assert_eq!(reads.versions().await.unwrap(), at(9, 3));
        drop((reads, writer));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
