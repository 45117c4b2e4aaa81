//! The adapter's metrics, recorded through the [`metrics`] facade: whoever mounts [`Api`]
//! gets them in the recorder they installed (the voiceplane binary installs a Prometheus one
//! and serves it at `GET /metrics`); with no recorder installed they cost a few branches.
//!
//! The labels have a bounded set of values: `operation` is a route's operation id
//! (`agent_view`), or [`UNMATCHED`] for a request no route takes; `status` is the
//! three-digit status code.
//!
//! [`Api`]: crate::Api

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use http::StatusCode;

/// Counter: requests answered, by `operation` and `status`.
pub const REQUESTS_TOTAL: &str = "voiceplane_http_requests_total";

/// Histogram: seconds from a request's arrival to its response's head, by `operation`
/// (streamed bodies continue after it).
pub const REQUEST_DURATION_SECONDS: &str = "voiceplane_http_request_duration_seconds";

/// The `operation` of requests that match no route (404) or no method of their route (405):
/// one value, so that scanners probing random paths add no series.
pub const UNMATCHED: &str = "unmatched";

/// Upper bounds, in seconds, of the buckets suited to [`REQUEST_DURATION_SECONDS`]: from a
/// cached read (about a millisecond) to a slow upload. The facade has no notion of buckets;
/// a Prometheus recorder takes them with `set_buckets_for_metric`.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The statuses whose series handles are kept; others are looked up at each request.
const KEPT_STATUSES: [(u16, &str); 20] = [
    (200, "200"),
    (201, "201"),
    (202, "202"),
    (204, "204"),
    (206, "206"),
    (304, "304"),
    (400, "400"),
    (401, "401"),
    (403, "403"),
    (404, "404"),
    (405, "405"),
    (409, "409"),
    (412, "412"),
    (413, "413"),
    (415, "415"),
    (422, "422"),
    (429, "429"),
    (500, "500"),
    (502, "502"),
    (503, "503"),
];

fn kept(status: StatusCode) -> Option<usize> {
    KEPT_STATUSES
        .iter()
        .position(|(c, _)| *c == status.as_u16())
}

/// The series handles of one operation, each registered with the recorder at its first use:
/// a request then costs two atomic updates, not two label sets built, hashed and looked up.
/// Registering on first use keeps `/metrics` listing only the series that happened.
#[derive(Default)]
struct Series {
    duration: OnceLock<metrics::Histogram>,
    requests: [OnceLock<metrics::Counter>; KEPT_STATUSES.len()],
}

/// The handles of every operation (and of [`UNMATCHED`]) of one [`Api`](crate::Api), from the
/// recorder installed when each was first used: install a recorder before serving.
pub(crate) struct RequestMetrics {
    /// Hashed with foldhash: SipHash of the id was a third of recording a request.
    by_operation: HashMap<&'static str, Series, foldhash::fast::FixedState>,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics").finish_non_exhaustive()
    }
}

impl RequestMetrics {
    pub(crate) fn new() -> Self {
        let by_operation = crate::ops::operations()
            .map(|op| op.id)
            .chain([UNMATCHED])
            .map(|id| (id, Series::default()))
            .collect();
        Self { by_operation }
    }

    /// Records one answered request.
    pub(crate) fn record(&self, operation: &'static str, status: StatusCode, latency: Duration) {
        let seconds = latency.as_secs_f64();
        let Some(series) = self.by_operation.get(operation) else {
            record_request(operation, status, seconds);
            return;
        };
        series
            .duration
            .get_or_init(|| metrics::histogram!(REQUEST_DURATION_SECONDS, "operation" => operation))
            .record(seconds);
        let counter = || metrics::counter!(REQUESTS_TOTAL, "operation" => operation, "status" => status_label(status));
        match kept(status) {
            Some(at) => series.requests[at].get_or_init(counter).increment(1),
            None => counter().increment(1),
        }
    }
}

/// Records one answered request, looking its series up.
fn record_request(operation: &'static str, status: StatusCode, seconds: f64) {
    metrics::counter!(REQUESTS_TOTAL, "operation" => operation, "status" => status_label(status))
        .increment(1);
    metrics::histogram!(REQUEST_DURATION_SECONDS, "operation" => operation).record(seconds);
}

/// The status as a label value, without allocating for the common ones.
fn status_label(status: StatusCode) -> metrics::SharedString {
    match kept(status) {
        Some(at) => metrics::SharedString::const_str(KEPT_STATUSES[at].1),
        None => metrics::SharedString::from(status.as_u16().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_labels_are_the_three_digits() {
        for code in [200u16, 201, 304, 404, 418, 503, 599] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(&*status_label(status), code.to_string());
        }
    }
}
