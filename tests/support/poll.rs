//! Waiting for what happens in the background (job runners, deliveries): poll a condition
//! with a deadline instead of sleeping for a guessed time.

use std::future::Future;
use std::time::Duration;

/// Polls `done` every 10 ms until it holds; fails naming `what` after 20 s.
pub async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
