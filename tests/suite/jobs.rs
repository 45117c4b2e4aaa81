//! The durable job runner on the real repository: a job runs and is gone, failures are
//! retried with backoff until they succeed or run out of attempts, a hung run times out, a dead
//! runner's job is claimed again once its lease ends, concurrent runners never run a job twice,
//! shutdown hands back what is still running, and a runner that shares the queue with jobs it
//! has no handler for leaves them alone and sleeps.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use voiceplane_core::jobs::{
    Done, Job, JobError, JobHandler, JobRepository, JobRunner, JobState, JobStatus, JobWaker,
    NewJob, RunnerConfig,
};
use voiceplane_core::time::Timestamp;
use voiceplane_suite::{TestContext, db_tests, eventually};

fn new_job(id: &str, max_attempts: u32) -> NewJob {
    NewJob {
        job_id: format!("job_{id}"),
        kind: "test".into(),
        payload: json!({"n": id}),
        run_at: Timestamp::from_micros(0),
        max_attempts,
        unique_key: None,
    }
}

/// What the test handler does on each attempt, in order; `Ok` once they run out.
#[derive(Default)]
struct Script {
    outcomes: Mutex<Vec<Option<Result<Done, JobError>>>>,
    seen: Mutex<Vec<(String, u32)>>,
}

#[async_trait]
impl JobHandler for Script {
    async fn run(&self, job: &Job) -> Result<Done, JobError> {
        self.seen
            .lock()
            .unwrap()
            .push((job.job_id.clone(), job.attempts));
        let next = {
            let mut outcomes = self.outcomes.lock().unwrap();
            if outcomes.is_empty() {
                Some(Ok(Done::Finished))
            } else {
                outcomes.remove(0)
            }
        };
        match next {
            Some(outcome) => outcome,
            // `None` hangs: the runner's timeout or shutdown has to end it.
            None => std::future::pending().await,
        }
    }
}

impl Script {
    fn with(outcomes: Vec<Option<Result<Done, JobError>>>) -> Arc<Self> {
        Arc::new(Self {
            outcomes: Mutex::new(outcomes),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<(String, u32)> {
        self.seen.lock().unwrap().clone()
    }
}

fn config(worker: &str) -> RunnerConfig {
    RunnerConfig {
        worker: worker.into(),
        lease: Duration::from_secs(60),
        timeout: Duration::from_secs(10),
        concurrency: 4,
        lanes: Default::default(),
        backoff_base: Duration::from_micros(1),
        backoff_max: Duration::from_millis(1),
        idle_check: Duration::from_millis(200),
        shutdown_grace: Duration::from_secs(5),
    }
}

/// A runner for `script` on the context's repository, started; stop it with the sender.
fn start(
    ctx: &TestContext,
    script: Arc<Script>,
    config: RunnerConfig,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
    JobWaker,
) {
    let waker = JobWaker::default();
    let runner = JobRunner::new(
        Arc::new(ctx.repo.clone()),
        ctx.clock.clone(),
        waker.clone(),
        config,
    )
    .with_handler("test", script);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    (stop, task, waker)
}

async fn status(ctx: &TestContext, id: &str) -> Option<JobStatus> {
    ctx.repo.job_get(id).await.unwrap().map(|s| s.status)
}

async fn a_job_runs_once_and_is_gone(ctx: &TestContext) {
    let mut job = new_job("a", 3);
    job.unique_key = Some("sweep".into());
    assert!(ctx.repo.job_enqueue(&job).await.unwrap());
    // The same key again is not a second job.
    let mut again = new_job("b", 3);
    again.unique_key = Some("sweep".into());
    assert!(!ctx.repo.job_enqueue(&again).await.unwrap());

    let script = Script::with(vec![]);
    let (stop, task, waker) = start(ctx, script.clone(), config("w1"));
    waker.wake();
    eventually("the job is gone", || async {
        status(ctx, "job_a").await.is_none()
    })
    .await;
    assert_eq!(script.seen(), vec![("job_a".to_owned(), 1)]);
    assert_eq!(status(ctx, "job_b").await, None);
    // The key is free once the job is done.
    assert!(ctx.repo.job_enqueue(&again).await.unwrap());
    eventually("the second job is gone", || async {
        status(ctx, "job_b").await.is_none()
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn failures_are_retried_until_success_or_out_of_attempts(ctx: &TestContext) {
    let retry = || Some(Err(JobError::Retry("upstream down".into())));
    // Job r: fails twice, then succeeds. Job f: fails three times out of three.
    ctx.repo.job_enqueue(&new_job("r", 5)).await.unwrap();
    let script = Script::with(vec![retry(), retry()]);
    let (stop, task, _) = start(ctx, script.clone(), config("w1"));
    eventually("job r is done", || async {
        status(ctx, "job_r").await.is_none()
    })
    .await;
    let attempts: Vec<u32> = script.seen().iter().map(|(_, a)| *a).collect();
    assert_eq!(attempts, [1, 2, 3]);
    stop.send(()).unwrap();
    task.await.unwrap();

    ctx.repo.job_enqueue(&new_job("f", 3)).await.unwrap();
    let script = Script::with(vec![retry(), retry(), retry()]);
    let (stop, task, _) = start(ctx, script.clone(), config("w2"));
    eventually("job f has failed", || async {
        status(ctx, "job_f").await == Some(JobStatus::Failed)
    })
    .await;
    let state = ctx.repo.job_get("job_f").await.unwrap().unwrap();
    assert_eq!(state.job.attempts, 3);
    assert_eq!(state.last_error.as_deref(), Some("upstream down"));
    assert_eq!(script.seen().len(), 3, "no attempt after the last one");

    // A failure no retry can fix ends the job at once.
    *script.outcomes.lock().unwrap() = vec![Some(Err(JobError::Fail("the call is gone".into())))];
    ctx.repo.job_enqueue(&new_job("g", 5)).await.unwrap();
    eventually("job g has failed", || async {
        status(ctx, "job_g").await == Some(JobStatus::Failed)
    })
    .await;
    let state = ctx.repo.job_get("job_g").await.unwrap().unwrap();
    assert_eq!(state.job.attempts, 1);
    assert_eq!(state.last_error.as_deref(), Some("the call is gone"));
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn a_hung_run_times_out_and_is_retried(ctx: &TestContext) {
    ctx.repo.job_enqueue(&new_job("h", 3)).await.unwrap();
    let script = Script::with(vec![None]);
    let mut cfg = config("w1");
    cfg.timeout = Duration::from_millis(100);
    let (stop, task, _) = start(ctx, script.clone(), cfg);
    eventually("job h is done", || async {
        status(ctx, "job_h").await.is_none()
    })
    .await;
    assert_eq!(
        script.seen(),
        vec![("job_h".to_owned(), 1), ("job_h".to_owned(), 2)]
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn a_dead_runners_job_is_claimed_again_after_its_lease(ctx: &TestContext) {
    ctx.repo.job_enqueue(&new_job("d", 3)).await.unwrap();
    let kinds = vec!["test".to_owned()];
    let now = ctx.clock.peek();
    // Another kind is not this runner's to claim.
    let other = ctx
        .repo
        .job_claim("dead", &["other".to_owned()], now, now.add_seconds(30), 10)
        .await
        .unwrap();
    assert!(other.is_empty());
    let claimed = ctx
        .repo
        .job_claim("dead", &kinds, now, now.add_seconds(30), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].attempts, 1);
    // While the lease holds, nobody else gets it; the dead runner never completes it.
    let later = now.add_seconds(29);
    let none = ctx
        .repo
        .job_claim("alive", &kinds, later, later.add_seconds(30), 10)
        .await
        .unwrap();
    assert!(none.is_empty());
    let after = now.add_seconds(31);
    let again = ctx
        .repo
        .job_claim("alive", &kinds, after, after.add_seconds(30), 10)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].job_id.as_str(), again[0].attempts), ("job_d", 2));
    // The dead runner's late completion does not touch what another runner holds.
    ctx.repo.job_complete("job_d", "dead").await.unwrap();
    assert_eq!(status(ctx, "job_d").await, Some(JobStatus::Running));
    ctx.repo.job_complete("job_d", "alive").await.unwrap();
    assert_eq!(status(ctx, "job_d").await, None);
}

async fn concurrent_runners_run_each_job_exactly_once(ctx: &TestContext) {
    let count = 60;
    for i in 0..count {
        ctx.repo
            .job_enqueue(&new_job(&format!("c{i:03}"), 3))
            .await
            .unwrap();
    }
    let script = Script::with(vec![]);
    let (stop1, task1, _) = start(ctx, script.clone(), config("w1"));
    let (stop2, task2, _) = start(ctx, script.clone(), config("w2"));
    eventually("every job ran", || async { script.seen().len() >= count }).await;
    eventually("every job is gone", || async {
        ctx.repo
            .job_next_due(&["test".into()])
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let mut ids: Vec<String> = script.seen().into_iter().map(|(id, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "a job ran twice or not at all");
    assert_eq!(script.seen().len(), count);
    stop1.send(()).unwrap();
    stop2.send(()).unwrap();
    task1.await.unwrap();
    task2.await.unwrap();
}

async fn shutdown_hands_back_a_running_job(ctx: &TestContext) {
    ctx.repo.job_enqueue(&new_job("s", 3)).await.unwrap();
    let script = Script::with(vec![None]);
    let mut cfg = config("w1");
    cfg.shutdown_grace = Duration::from_millis(50);
    let (stop, task, _) = start(ctx, script.clone(), cfg);
    eventually("job s is running", || async { !script.seen().is_empty() }).await;
    stop.send(()).unwrap();
    task.await.unwrap();
    let state = ctx.repo.job_get("job_s").await.unwrap().unwrap();
    assert_eq!(state.status, JobStatus::Queued);
    assert_eq!(state.job.attempts, 0, "a handed-back run is not an attempt");
}

async fn a_recurring_job_runs_again_when_it_asks(ctx: &TestContext) {
    ctx.repo.job_enqueue(&new_job("rec", 2)).await.unwrap();
    let later = ctx.clock.peek().add_seconds(3600);
    let script = Script::with(vec![
        Some(Err(JobError::Retry("busy".into()))),
        Some(Ok(Done::RunAgainAt(later))),
    ]);
    let (stop, task, _) = start(ctx, script.clone(), config("w1"));
    eventually("job rec is rescheduled", || async {
        ctx.repo
            .job_get("job_rec")
            .await
            .unwrap()
            .is_some_and(|s| s.status == JobStatus::Queued && s.job.run_at == later)
    })
    .await;
    let state = ctx.repo.job_get("job_rec").await.unwrap().unwrap();
    assert_eq!(state.job.attempts, 0, "a new run starts its attempts over");
    assert_eq!(state.last_error, None);
    assert_eq!(script.seen().len(), 2, "not due before its time");
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// The events sweep, scheduled once however many instances ask, deletes the events older
/// than the retention period, keeps the others, and schedules its next run.
async fn the_events_sweep_deletes_expired_events_and_runs_again(ctx: &TestContext) {
    use voiceplane_core::model::EventFilter;
    use voiceplane_core::page::PageParams;
    use voiceplane_suite::new_tool;

    let admin = ctx.admin("Acme").await;
    for name in ["old-1", "old-2"] {
        ctx.service
            .tool_create(&admin, new_tool(name))
            .await
            .unwrap();
    }
    ctx.clock.advance(31 * 24 * 3600);
    ctx.service
        .tool_create(&admin, new_tool("recent"))
        .await
        .unwrap();
    let list = || async {
        ctx.service
            .event_list(&admin, &EventFilter::default(), &PageParams::default())
            .await
            .unwrap()
            .items
    };
    assert_eq!(list().await.len(), 3);

    // Two instances starting schedule one sweep.
    ctx.service.jobs_schedule_recurring().await.unwrap();
    ctx.service.jobs_schedule_recurring().await.unwrap();
    let mut cfg = config("w1");
    cfg.idle_check = Duration::from_millis(20);
    let runner = ctx.service.job_runner(cfg);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    eventually("the expired events are gone", || async {
        list().await.len() == 1
    })
    .await;
    let kept = list().await;
    assert_eq!(kept[0].data["tool_name"], "recent");
    eventually("the sweep is scheduled again", || async {
        ctx.repo
            .job_next_due(&[voiceplane_core::service::EVENTS_SWEEP.into()])
            .await
            .unwrap()
            .is_some_and(|due| due > ctx.clock.peek().add_seconds(3500))
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// The repository, counting what a runner asks of it. `woken` is set by the test just before
/// it wakes the runner, so that the calls made before it tell what the runner does on its own.
struct Counting {
    inner: voiceplane_storage::SeaRepository,
    woken: AtomicBool,
    claims_unwoken: AtomicUsize,
    next_due_unwoken: AtomicUsize,
}

impl Counting {
    fn unwoken(&self, counter: &AtomicUsize) {
        if !self.woken.load(Ordering::SeqCst) {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl JobRepository for Counting {
    async fn job_enqueue(&self, job: &NewJob) -> voiceplane_core::Result<bool> {
        self.inner.job_enqueue(job).await
    }
    async fn job_claim(
        &self,
        worker: &str,
        kinds: &[String],
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> voiceplane_core::Result<Vec<Job>> {
        self.unwoken(&self.claims_unwoken);
        self.inner
            .job_claim(worker, kinds, now, lease_until, limit)
            .await
    }
    async fn job_complete(&self, job_id: &str, worker: &str) -> voiceplane_core::Result<()> {
        self.inner.job_complete(job_id, worker).await
    }
    async fn job_retry(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        error: &str,
    ) -> voiceplane_core::Result<()> {
        self.inner.job_retry(job_id, worker, run_at, error).await
    }
    async fn job_fail(
        &self,
        job_id: &str,
        worker: &str,
        error: &str,
    ) -> voiceplane_core::Result<()> {
        self.inner.job_fail(job_id, worker, error).await
    }
    async fn job_reschedule(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        claimed_run_at: Timestamp,
    ) -> voiceplane_core::Result<()> {
        self.inner
            .job_reschedule(job_id, worker, run_at, claimed_run_at)
            .await
    }
    async fn job_extend(
        &self,
        job_id: &str,
        worker: &str,
        lease_until: Timestamp,
    ) -> voiceplane_core::Result<()> {
        self.inner.job_extend(job_id, worker, lease_until).await
    }
    async fn job_release(&self, job_id: &str, worker: &str) -> voiceplane_core::Result<()> {
        self.inner.job_release(job_id, worker).await
    }
    async fn job_next_due(&self, kinds: &[String]) -> voiceplane_core::Result<Option<Timestamp>> {
        self.unwoken(&self.next_due_unwoken);
        self.inner.job_next_due(kinds).await
    }
    async fn job_get(&self, job_id: &str) -> voiceplane_core::Result<Option<JobState>> {
        self.inner.job_get(job_id).await
    }
}

/// A runner whose queue holds a due job of a kind it has no handler for (a newer version's,
/// say) claims once, finds nothing it can run, and sleeps until woken: it does not ask the
/// database again and again because that job is due. Woken for a job of its own, it runs it,
/// and the foreign job is still untouched.
async fn an_idle_runner_leaves_foreign_jobs_alone_and_sleeps(ctx: &TestContext) {
    let mut foreign = new_job("foreign", 3);
    foreign.kind = "from.a.newer.version".into();
    ctx.repo.job_enqueue(&foreign).await.unwrap();
    let repo = Arc::new(Counting {
        inner: ctx.repo.clone(),
        woken: AtomicBool::new(false),
        claims_unwoken: AtomicUsize::new(0),
        next_due_unwoken: AtomicUsize::new(0),
    });
    let script = Script::with(vec![]);
    let waker = JobWaker::default();
    let mut cfg = config("w1");
    // Long enough that only the test's wake-up can end the sleep.
    cfg.idle_check = Duration::from_secs(3600);
    let runner = JobRunner::new(repo.clone(), ctx.clock.clone(), waker.clone(), cfg)
        .with_handler("test", script.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    eventually("the runner has gone idle", || async {
        repo.next_due_unwoken.load(Ordering::SeqCst) >= 1
    })
    .await;
    // Twenty statements of the test's own: time, counted in work, for a runner that spins to
    // claim again (one claim and one next-due read a turn), while the foreign job stays
    // untouched.
    for _ in 0..20 {
        let state = ctx.repo.job_get("job_foreign").await.unwrap().unwrap();
        assert_eq!((state.status, state.job.attempts), (JobStatus::Queued, 0));
    }

    // The proof that it sleeps rather than spins: a job of its own, enqueued and woken for,
    // runs; by then a spinning runner would have claimed again and again.
    ctx.repo.job_enqueue(&new_job("own", 3)).await.unwrap();
    repo.woken.store(true, Ordering::SeqCst);
    waker.wake();
    eventually("the runner's own job ran", || async {
        script.seen().len() == 1
    })
    .await;
    assert_eq!(
        (
            repo.claims_unwoken.load(Ordering::SeqCst),
            repo.next_due_unwoken.load(Ordering::SeqCst)
        ),
        (1, 1),
        "before it was woken, the runner claimed once and then slept"
    );
    let state = ctx.repo.job_get("job_foreign").await.unwrap().unwrap();
    assert_eq!(
        (state.status, state.job.attempts),
        (JobStatus::Queued, 0),
        "the foreign job is left alone"
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// A recurring job hurried while it runs (its `run_at` moved, as a campaign's pacer is when one
/// of its calls ends) keeps the earlier time when it asks to run again later; one nobody
/// touched runs when it asked.
async fn a_wake_up_during_a_run_is_not_lost(ctx: &TestContext) {
    use sea_orm::ConnectionTrait;
    let kinds = vec!["test".to_owned()];
    let now = ctx.clock.peek();
    for (id, hurried) in [("h", true), ("q", false)] {
        ctx.repo.job_enqueue(&new_job(id, 3)).await.unwrap();
        let claimed = ctx
            .repo
            .job_claim("w", &kinds, now, now.add_seconds(30), 1)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let soon = now.add_seconds(5);
        if hurried {
            ctx.repo
                .connection()
                .execute_unprepared(&format!(
                    "UPDATE jobs SET run_at = {} WHERE job_id = 'job_{id}'",
                    soon.as_micros()
                ))
                .await
                .unwrap();
        }
        let later = now.add_seconds(3600);
        ctx.repo
            .job_reschedule(&format!("job_{id}"), "w", later, claimed[0].run_at)
            .await
            .unwrap();
        let state = ctx
            .repo
            .job_get(&format!("job_{id}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state.status, JobStatus::Queued);
        assert_eq!(state.job.run_at, if hurried { soon } else { later }, "{id}");
    }
}

/// A lane's jobs never wait behind another lane's: while every run of the general lane is
/// held by a hung job, a job of the telephony lane (a dial, say) still runs at once.
async fn a_lane_of_its_own_never_waits_behind_other_jobs(ctx: &TestContext) {
    let hung = Script::with(vec![None, None, None, None]);
    let dial = Script::with(vec![]);
    for i in 0..4 {
        ctx.repo
            .job_enqueue(&new_job(&format!("slow{i}"), 1))
            .await
            .unwrap();
    }
    let mut urgent = new_job("dial", 1);
    urgent.kind = "dial".into();
    ctx.repo.job_enqueue(&urgent).await.unwrap();
    let waker = JobWaker::default();
    let mut config = config("w-lanes");
    config.lanes = [("telephony".to_owned(), 2)].into();
    let runner = JobRunner::new(
        Arc::new(ctx.repo.clone()),
        ctx.clock.clone(),
        waker.clone(),
        config,
    )
    .with_handler("test", hung.clone())
    .with_handler_in("telephony", "dial", dial.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    waker.wake();
    eventually("the hung jobs hold the general lane", || async {
        hung.seen().len() == 4
    })
    .await;
    eventually("the lane's job runs", || async {
        status(ctx, "job_dial").await.is_none()
    })
    .await;
    assert_eq!(dial.seen(), vec![("job_dial".to_owned(), 1)]);
    assert_eq!(status(ctx, "job_slow0").await, Some(JobStatus::Running));
    stop.send(()).unwrap();
    task.await.unwrap();
}

db_tests!(
    a_lane_of_its_own_never_waits_behind_other_jobs,
    a_wake_up_during_a_run_is_not_lost,
    an_idle_runner_leaves_foreign_jobs_alone_and_sleeps,
    a_job_runs_once_and_is_gone,
    failures_are_retried_until_success_or_out_of_attempts,
    a_hung_run_times_out_and_is_retried,
    a_dead_runners_job_is_claimed_again_after_its_lease,
    concurrent_runners_run_each_job_exactly_once,
    shutdown_hands_back_a_running_job,
    a_recurring_job_runs_again_when_it_asks,
    the_events_sweep_deletes_expired_events_and_runs_again,
);
