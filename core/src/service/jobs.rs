//! The service's durable jobs: the runner that executes them, with a handler for every kind
//! of job the service enqueues.

use std::sync::Arc;

use super::Service;
use crate::jobs::{JobRepository, JobRunner, JobWaker, RunnerConfig};

impl Service {
    /// A runner for this service's jobs, over its repository and clock; jobs this service
    /// enqueues wake it at once. Run it with [`JobRunner::run`] in every instance.
    pub fn job_runner(&self, config: RunnerConfig) -> JobRunner {
        let repo: Arc<dyn JobRepository> = self.repo.clone();
        JobRunner::new(repo, self.clock.clone(), self.jobs.clone(), config)
    }

    /// Wakes this process's runners after a job was written.
    pub fn job_waker(&self) -> &JobWaker {
        &self.jobs
    }
}
