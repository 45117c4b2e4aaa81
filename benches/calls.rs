//! Benchmark (not a test) of calls as data, on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres, over `VOICEPLANE_BENCH_CALLS` calls
//! (default 1,000,000) of one organization, seeded by bulk `INSERT`s: five agents, five
//! statuses, 60 days of `created_at`, and every tenth call with a transcript of one or two
//! messages (100,000 transcripts at the default size):
//!
//! 1. a filtered page (agent + status + a 45-day `created_after`/`created_before` range) at
//!    depth 100 and at depth 10,000, reached by walking with cursors: per-page latency at both
//!    depths and their ratio (a keyset page should cost the same however deep it is);
//! 2. `q` (one or two words) over the transcripts: first page, p50/p99;
//! 3. stats of a 30-day month grouped by day;
//!
//! and the query plans (`EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` on Postgres) of the three
//! statements, to show the indexes they use.
//!
//! ```sh
//! cargo bench --bench calls
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench calls
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{
    CallFilter, CallQuery, CallSearch, CallStatus, StatsGroupBy, StatsGrouping,
};
use voiceplane_core::page::{PageParams, PageQuery};
use voiceplane_core::time::Timestamp;
use voiceplane_storage::calls::queries::{list_statement, stats_statement};
use voiceplane_suite::sample::{DAY, START, Words, explain, ms, percentile, seed_calls};
use voiceplane_suite::{TestContext, new_agent};

const DEFAULT_CALLS: usize = 1_000_000;
const PAGE: u32 = 50;
const PAGE_RUNS: usize = 200;
const SEARCHES: usize = 200;
const STATS_RUNS: usize = 10;

fn calls_wanted() -> usize {
    std::env::var("VOICEPLANE_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CALLS)
}

async fn page_at(
    ctx: &TestContext,
    admin: &Actor,
    filter: &CallFilter,
    cursor: Option<String>,
) -> (usize, Option<String>) {
    let page = ctx
        .service
        .call_list(
            admin,
            filter,
            &CallSearch::default(),
            &PageParams {
                limit: Some(PAGE),
                cursor,
            },
        )
        .await
        .unwrap();
    (page.items.len(), page.next_cursor)
}

/// Median latency of the page after `cursor`, asked `PAGE_RUNS` times.
async fn time_page(
    ctx: &TestContext,
    admin: &Actor,
    filter: &CallFilter,
    cursor: &Option<String>,
) -> Duration {
    let mut times = Vec::new();
    for _ in 0..PAGE_RUNS {
        let started = Instant::now();
        let (n, _) = page_at(ctx, admin, filter, cursor.clone()).await;
        times.push(started.elapsed());
        assert_eq!(n, PAGE as usize);
    }
    times.sort();
    percentile(&times, 0.5)
}

async fn run(ctx: &TestContext, name: &str) {
    let admin = ctx.admin("Bench").await;
    let org = admin.organization_id.clone();
    let mut agents = Vec::new();
    for i in 0..5 {
        let agent = ctx
            .service
            .agent_create(&admin, new_agent(&format!("Agent {i}")))
            .await
            .unwrap();
        agents.push(agent.agent_id);
    }
    let n = calls_wanted();
    let started = Instant::now();
    seed_calls(ctx.repo.connection(), &org, &agents, n).await;
    println!(
        "{name}: seeded {n} calls ({} transcripts) in {:.1} s",
        n.div_ceil(10),
        started.elapsed().as_secs_f64()
    );
    let backend = ctx.repo.connection().get_database_backend();

    // 1. A filtered page at depth 100 and at depth 10,000.
    let filter = CallFilter {
        agent_id: Some(agents[2].clone()),
        status: Some(CallStatus::Completed),
        created_after: Some(Timestamp::from_micros(START + 5 * DAY)),
        created_before: Some(Timestamp::from_micros(START + 50 * DAY)),
        ..CallFilter::default()
    };
    let mut cursor = None;
    let mut depth = 0;
    let mut at_100 = None;
    let walk = Instant::now();
    while depth < 10_000 {
        if depth == 100 {
            at_100 = Some(cursor.clone());
        }
        let (got, next) = page_at(ctx, &admin, &filter, cursor).await;
        depth += got;
        cursor = next;
        assert!(cursor.is_some(), "the filter keeps more than 10,050 calls");
    }
    let walked = walk.elapsed();
    let at_10k = cursor;
    let at_100_cursor = at_100.unwrap();
    let t100 = time_page(ctx, &admin, &filter, &at_100_cursor).await;
    let t10k = time_page(ctx, &admin, &filter, &at_10k).await;
    println!(
        "{name}: filtered page of {PAGE} (agent + status + 45 days): depth 100 p50 {}, \
         depth 10,000 p50 {}, ratio {:.2}; walking 10,000 calls took {:.2} s",
        ms(t100),
        ms(t10k),
        t10k.as_secs_f64() / t100.as_secs_f64(),
        walked.as_secs_f64(),
    );
    let query = CallQuery {
        agent_id: filter.agent_id.clone(),
        status: filter.status,
        created_after: filter.created_after,
        created_before: filter.created_before,
        ..CallQuery::default()
    };
    let deep = PageQuery::from_params_scoped(
        &PageParams {
            limit: Some(PAGE),
            cursor: at_10k,
        },
        voiceplane_core::ids::IdKind::Call,
        &query.digest(),
    )
    .unwrap();
    let shallow = PageQuery::from_params_scoped(
        &PageParams {
            limit: Some(PAGE),
            cursor: at_100_cursor,
        },
        voiceplane_core::ids::IdKind::Call,
        &query.digest(),
    )
    .unwrap();
    println!(
        "{name}: plan of the filtered page at depth 100:\n{}",
        explain(
            ctx.repo.connection(),
            list_statement(backend, &org, &query, &shallow)
        )
        .await
    );
    println!(
        "{name}: plan of the filtered page at depth 10,000:\n{}",
        explain(
            ctx.repo.connection(),
            list_statement(backend, &org, &query, &deep)
        )
        .await
    );

    // 2. `q` over the transcripts.
    let mut rng = Words(0x2545_f491_4f6c_dd1d);
    let mut times = Vec::new();
    let mut hits = 0;
    for i in 0..SEARCHES {
        let q: Vec<String> = (0..1 + i % 2).map(|_| rng.word()).collect();
        let started = Instant::now();
        let page = ctx
            .service
            .call_list(
                &admin,
                &CallFilter::default(),
                &CallSearch {
                    q: Some(q.join(" ")),
                },
                &PageParams {
                    limit: Some(20),
                    cursor: None,
                },
            )
            .await
            .unwrap();
        times.push(started.elapsed());
        hits += page.items.len();
    }
    times.sort();
    println!(
        "{name}: q over {} transcripts, {SEARCHES} queries of 1-2 words, first page of 20 \
         (mean {:.1} calls): p50 {} p99 {}",
        n.div_ceil(10),
        hits as f64 / SEARCHES as f64,
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
    );
    let search = CallQuery {
        terms: vec![rng.word()],
        ..CallQuery::default()
    };
    let first = PageQuery {
        limit: 20,
        after: None,
    };
    println!(
        "{name}: plan of q:\n{}",
        explain(
            ctx.repo.connection(),
            list_statement(backend, &org, &search, &first)
        )
        .await
    );

    // 3. Stats of a month, by day.
    let month = CallFilter {
        created_after: Some(Timestamp::from_micros(START + 10 * DAY)),
        created_before: Some(Timestamp::from_micros(START + 40 * DAY)),
        ..CallFilter::default()
    };
    let grouping = StatsGrouping {
        group_by: Some(StatsGroupBy::Day),
    };
    let mut times = Vec::new();
    let mut stats = None;
    for _ in 0..STATS_RUNS {
        let started = Instant::now();
        stats = Some(
            ctx.service
                .call_stats(&admin, &month, &grouping)
                .await
                .unwrap(),
        );
        times.push(started.elapsed());
    }
    times.sort();
    let stats = stats.unwrap();
    assert_eq!(stats.groups.len(), 30);
    println!(
        "{name}: stats of a month ({} calls) by day: p50 {} max {}",
        stats.totals.calls,
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 1.0)),
    );
    let month_query = CallQuery {
        created_after: month.created_after,
        created_before: month.created_before,
        ..CallQuery::default()
    };
    println!(
        "{name}: plan of stats by day:\n{}",
        explain(
            ctx.repo.connection(),
            stats_statement(backend, &org, &month_query, Some(StatsGroupBy::Day))
        )
        .await
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ctx = TestContext::sqlite().await;
    run(&ctx, "sqlite").await;
    ctx.cleanup().await;
    if let Some(ctx) = TestContext::postgres("calls bench").await {
        run(&ctx, "postgres").await;
        ctx.cleanup().await;
    }
}
