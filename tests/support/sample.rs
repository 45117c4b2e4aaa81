//! What the benchmarks share: reproducible text, seeded calls and percentiles of timings.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, Statement, TransactionTrait};

/// A small deterministic generator (xorshift), so that every run and both databases get the
/// same data.
pub struct Words(pub u64);

impl Words {
    /// The next pseudo-random number.
    pub fn number(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word of a 5,000-word vocabulary, skewed like natural text: low ranks are common.
    pub fn word(&mut self) -> String {
        let r = (self.number() % 10_000) as f64 / 10_000.0;
        let rank = (r * r * 5_000.0) as u64;
        let mut w = String::new();
        let mut n = rank + 26;
        while n > 0 {
            w.push(char::from(b'a' + (n % 26) as u8));
            n /= 26;
        }
        w
    }

    /// A sentence of 8 to 17 words, capitalized, with a full stop.
    pub fn sentence(&mut self) -> String {
        let n = 8 + self.number() % 10;
        let mut s: Vec<String> = (0..n).map(|_| self.word()).collect();
        s[0] = s[0][..1].to_uppercase() + &s[0][1..];
        s.join(" ") + "."
    }
}

/// The `p` quantile (0 to 1) of `sorted` timings.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `d` in milliseconds, three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// The first seeded call's `created_at`: 2026-01-01T00:00:00Z.
pub const START: i64 = 1_767_225_600_000_000;
/// A day in microseconds.
pub const DAY: i64 = 86_400_000_000;
/// Seeded calls are spread evenly over this many days from [`START`].
pub const DAYS: i64 = 60;
const BATCH: usize = 1_000;
/// Batches per transaction while seeding.
const BATCHES_PER_TXN: usize = 20;
const STATUSES: [&str; 5] = ["completed", "failed", "no_answer", "busy", "in_progress"];
const REASONS: [&str; 3] = ["user_hangup", "agent_hangup", "error"];

/// The id of the `i`th seeded call ([`seed_calls`]): the higher `i`, the newer the call.
pub fn seeded_call_sid(i: usize) -> String {
    format!("call_{i:024}")
}

/// The `created_at` of the `i`th of `n` seeded calls.
pub fn seeded_created_at(i: usize, n: usize) -> i64 {
    START + i as i64 * (DAYS * DAY / n as i64)
}

/// Seeds `n` calls of `org` spread over `agents` (five statuses, [`DAYS`] days of
/// `created_at`, and a transcript of one or two messages on every tenth) with literal
/// multi-row `INSERT`s, then runs `ANALYZE`.
pub async fn seed_calls(db: &DatabaseConnection, org: &str, agents: &[String], n: usize) {
    let mut rng = Words(0x9e37_79b9_7f4a_7c15);
    let mut done = 0;
    while done < n {
        let txn = db.begin().await.expect("a seeding transaction starts");
        for _ in 0..BATCHES_PER_TXN {
            if done >= n {
                break;
            }
            let end = (done + BATCH).min(n);
            let mut calls = Vec::with_capacity(end - done);
            let mut messages = Vec::new();
            for i in done..end {
                let r = rng.number();
                let sid = seeded_call_sid(i);
                let created = seeded_created_at(i, n);
                let agent = &agents[(r % agents.len() as u64) as usize];
                let status = STATUSES[((r >> 8) % 5) as usize];
                let reason = REASONS[((r >> 16) % 3) as usize];
                let duration = (r >> 24) % 600;
                let cost = duration as f64 * 0.01;
                let turns = if i % 10 == 0 { 1 + (r >> 40) % 2 } else { 0 };
                calls.push(format!(
                    "('{sid}','{org}','{agent}','Agent','+1415555{:04}','+1650555{:04}',\
                     '{}','{status}',TRUE,{cost},{duration}.0,{turns},NULL,NULL,'{reason}',NULL,\
                     {created},{created},NULL,NULL,NULL,{turns})",
                    r % 10_000,
                    (r >> 12) % 10_000,
                    ["inbound", "outbound", "preview"][((r >> 32) % 3) as usize],
                ));
                for seq in 1..=turns {
                    messages.push(format!(
                        "('{org}','{sid}',{seq},'{}','{}',NULL,NULL,NULL,NULL,NULL,{created})",
                        if seq == 1 { "user" } else { "agent" },
                        rng.sentence()
                    ));
                }
            }
            txn.execute_unprepared(&format!(
                "INSERT INTO calls (call_sid, organization_id, agent_id, agent_name, to_number, \
                 from_number, call_type, status, recording_enabled, total_cost, \
                 duration_seconds, turn_count, start_time, end_time, end_reason, \
                 billing_status, created_at, updated_at, recording_key, \
                 recording_content_type, recording_size, message_seq) VALUES {}",
                calls.join(",")
            ))
            .await
            .expect("seeded calls insert");
            if !messages.is_empty() {
                txn.execute_unprepared(&format!(
                    "INSERT INTO call_messages (organization_id, call_sid, seq, role, text, \
                     start_ms, end_ms, tool_name, tool_arguments, tool_result, created_at) \
                     VALUES {}",
                    messages.join(",")
                ))
                .await
                .expect("seeded messages insert");
            }
            done = end;
        }
        txn.commit().await.expect("a seeding transaction commits");
    }
    db.execute_unprepared("ANALYZE")
        .await
        .expect("ANALYZE runs");
}

/// The plan of `statement` as the database explains it, one line per step.
pub async fn explain(db: &DatabaseConnection, statement: Statement) -> String {
    let backend = db.get_database_backend();
    let (prefix, column) = match backend {
        DatabaseBackend::Postgres => ("EXPLAIN ", 0),
        _ => ("EXPLAIN QUERY PLAN ", 3),
    };
    let sql = format!("{prefix}{}", statement.sql);
    let rows = db
        .query_all_raw(Statement { sql, ..statement })
        .await
        .expect("EXPLAIN runs");
    rows.iter()
        .map(|r| {
            let line: String = r.try_get_by_index(column).expect("a plan line is text");
            format!("    {line}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The CPU time this process (server, database client and load generator) has used.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime, fields 14 and 15 of the line (11 and 12 after the command), in ticks
    // of 1/100 s on Linux.
    (ticks(11) + ticks(12)) / 100.0
}
