//! An organization's calls version (migration m0026), read once for every request that was
//! already waiting when the read was sent.
//!
//! A kept page of calls costs one read of its version per request (`queries.rs`), and pages
//! polled by many clients at once would send as many. A version is good for a request if it
//! was read by a statement sent after the request arrived: the statement then sees every
//! commit the request could know of. So requests take a ticket as they arrive and line up;
//! the first reads the version, noting the last ticket given out before it sent the
//! statement, and every request behind it holding a ticket up to that one takes the same
//! number without a round trip. The next arrivals wait for the read after it. One request
//! alone pays one round trip, as before; under load a read answers everyone queued behind it.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use voiceplane_core::Result;

/// Organizations whose line is kept; one evicted while in use only gets a second line.
const ORGANIZATIONS: usize = 10_000;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct CallVersions {
    lines: Cache<String, Arc<Line>>,
}

impl Default for CallVersions {
    fn default() -> Self {
        Self {
            lines: Cache::new(ORGANIZATIONS),
        }
    }
}

/// One organization's requests for its version.
#[derive(Debug, Default)]
struct Line {
    /// Tickets given out, the last one's number.
    tickets: AtomicU64,
    /// The last version read, with the last ticket given out before its statement was sent.
    last: tokio::sync::Mutex<Option<(u64, i64)>>,
}

impl CallVersions {
    /// The calls version of `organization_id`, as `read` reads it (see the module
    /// documentation).
    pub(crate) async fn current<F>(&self, organization_id: &str, read: F) -> Result<i64>
    where
        F: AsyncFnOnce() -> Result<i64>,
    {
        let line = self
            .lines
            .get_or_insert_with(organization_id, || Ok::<_, Infallible>(Arc::default()))
            .unwrap_or_else(|e| match e {});
        let ticket = line.tickets.fetch_add(1, Ordering::SeqCst) + 1;
        // tokio's mutex serves its waiters in order.
        let mut last = line.last.lock().await;
        if let Some((covers, version)) = *last
            && covers >= ticket
        {
            return Ok(version);
        }
        let covers = line.tickets.load(Ordering::SeqCst);
        let version = read().await?;
        *last = Some((covers, version));
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Requests waiting while a read is sent share the next one; one alone reads again, and
    /// every version answered was read after its request arrived.
    #[tokio::test]
    async fn a_read_answers_the_requests_waiting_for_it() {
        let versions = Arc::new(CallVersions::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let (release, gate) = tokio::sync::watch::channel(false);
        let read = {
            let reads = Arc::clone(&reads);
            move || {
                let reads = Arc::clone(&reads);
                let mut gate = gate.clone();
                async move || {
                    let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                    gate.wait_for(|open| *open).await.unwrap();
                    Ok(i64::try_from(n).unwrap())
                }
            }
        };
        // The first request's read is in flight (held at the gate) before the others arrive.
        let first = tokio::spawn({
            let (versions, read) = (Arc::clone(&versions), read.clone());
            async move { versions.current("org_1", read()).await.unwrap() }
        });
        while reads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let behind: Vec<_> = (0..5)
            .map(|_| {
                let (versions, read) = (Arc::clone(&versions), read.clone());
                tokio::spawn(async move { versions.current("org_1", read()).await.unwrap() })
            })
            .collect();
        // All five have their tickets once the line's count says so.
        let line = versions.lines.get("org_1").unwrap();
        while line.tickets.load(Ordering::SeqCst) < 6 {
            tokio::task::yield_now().await;
        }
        release.send(true).unwrap();
        assert_eq!(first.await.unwrap(), 1);
        for request in behind {
            assert_eq!(
                request.await.unwrap(),
                2,
                "they arrived after the first read was sent: the second read answers them all"
            );
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        assert_eq!(versions.current("org_1", read()).await.unwrap(), 3);
        assert_eq!(versions.current("org_2", read()).await.unwrap(), 4);
    }
}
