//! The adapter's metrics, recorded through the [`metrics`] facade: whoever mounts [`Api`]
//! gets them in the recorder they installed (the voiceplane binary installs a Prometheus one
//! and serves it at `GET /metrics`); with no recorder installed they cost a few branches.
//!
//! The labels have a bounded set of values: `operation` is a route's operation id
//! (`agent_view`), or [`UNMATCHED`] for a request no route takes; `status` is the
//! three-digit status code.
//!
//! [`Api`]: crate::Api

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

/// Records one answered request.
pub(crate) fn record_request(operation: &'static str, status: StatusCode, latency: Duration) {
    metrics::counter!(REQUESTS_TOTAL, "operation" => operation, "status" => status_label(status))
        .increment(1);
    metrics::histogram!(REQUEST_DURATION_SECONDS, "operation" => operation)
        .record(latency.as_secs_f64());
}

/// The status as a label value, without allocating for the common ones.
fn status_label(status: StatusCode) -> metrics::SharedString {
    let fixed = match status.as_u16() {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        206 => "206",
        304 => "304",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        412 => "412",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        other => return metrics::SharedString::from(other.to_string()),
    };
    metrics::SharedString::const_str(fixed)
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
