//! Rate limits, in this process's memory (GCRA, `governor`): one budget per credential (an API
//! key, or a user for a JWT) of `per_second` requests with bursts of `burst`; per client IP, a
//! budget of failed authentications; and per telephony integration, a budget of refused
//! provider signatures (kept apart from the addresses: the providers share theirs among all
//! tenants). Every authenticated answer carries the IETF
//! `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers; a refused request is
//! a 429 with `Retry-After`.
//!
//! Limits are per instance: behind a load balancer spreading requests over N instances, a
//! credential may send up to N times the configured rate.
//!
//! Memory stays bounded: every [`PRUNE_EVERY`] checks, the states of keys whose budget is full
//! again (idle long enough) are dropped.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};

use crate::error::ApiError;

/// Checks between two prunings of idle keys.
const PRUNE_EVERY: u64 = 4096;

/// Default of [`RateLimits::per_second`].
pub const DEFAULT_PER_SECOND: u32 = 50;
/// Default of [`RateLimits::burst`].
pub const DEFAULT_BURST: u32 = 100;
/// Default of [`RateLimits::auth_failures_per_minute`].
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 30;

/// `RateLimit-Limit`: the burst, the most requests a full budget allows at once.
pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
/// `RateLimit-Remaining`: requests the budget still allows at once.
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
/// `RateLimit-Reset`: seconds until the budget is full again.
pub const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// The rate limits of an [`Api`](crate::Api) (see [`Api::with_rate_limits`](crate::Api::with_rate_limits)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimits {
    /// Sustained requests per second per credential; `0` disables the credential limit.
    pub per_second: u32,
    /// Requests a credential may send at once; at least 1 (`0` counts as 1).
    pub burst: u32,
    /// Failed authentications (401) per minute per client IP, also the burst; `0` disables.
    /// Over it, the IP's requests are refused with 429 before their credentials are looked up.
    /// The same budget, per integration, limits provider webhooks with a refused signature
    /// (403), which never count toward an IP's: over it, the integration's badly signed
    /// webhooks get 429, its well signed ones are still served.
    pub auth_failures_per_minute: u32,
    /// Proxies whose `X-Forwarded-For` is believed: when the connection comes from one of
    /// them, the client is the right-most address of `X-Forwarded-For` that is not itself a
    /// trusted proxy. Otherwise the client is the connection's peer.
    pub trusted_proxies: Vec<IpNetwork>,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_second: DEFAULT_PER_SECOND,
            burst: DEFAULT_BURST,
            auth_failures_per_minute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
            trusted_proxies: Vec::new(),
        }
    }
}

/// An IP address or a CIDR block (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNetwork {
    addr: IpAddr,
    prefix: u8,
}

impl IpNetwork {
    /// Whether `ip` lies in this network. IPv4-mapped IPv6 addresses count as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNetwork {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = || format!("`{s}` is not an IP address or CIDR block (e.g. 10.0.0.0/8)");
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr = canonical(addr.parse::<IpAddr>().map_err(|_| bad())?);
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Self { addr, prefix })
    }
}

/// `ip`, with an IPv4-mapped IPv6 address as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A limiter per key, its map hashed with `S`.
type Keyed<K, S> =
    RateLimiter<K, HashMapStateStore<K, S>, DefaultClock, StateInformationMiddleware>;

/// The limiters of one [`Api`](crate::Api), shared by its clones.
pub(crate) struct Limiters {
    config: RateLimits,
    /// Keyed by an authenticated credential (ids the server made), hashed with foldhash,
    /// seeded at random per map: std's SipHash of the key, twice per request, was about 250
    /// instructions of every authenticated request.
    credentials: Option<Keyed<String, foldhash::fast::RandomState>>,
    /// Keyed by the client's address, which a caller holding many addresses chooses: std's
    /// SipHash, keyed at random, at which no one can aim collisions. Only a failed
    /// authentication hashes it.
    auth_failures: Option<Keyed<IpAddr, std::hash::RandomState>>,
    /// Keyed by the integration a provider's webhook names in its path, which the caller
    /// chooses: SipHash as for addresses. Only a refused signature hashes it.
    signature_failures: Option<Keyed<String, std::hash::RandomState>>,
    /// IPs over their failed-authentication budget, and until when.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    /// How many entries `blocked` holds, written under its lock: nearly always 0, and then an
    /// authenticated request takes neither the lock every core shares nor the clock.
    blocked_len: AtomicUsize,
    checks: AtomicU64,
}

impl std::fmt::Debug for Limiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiters")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What the credential's budget says after a request was let through.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    limit: u32,
    remaining: u32,
    reset: Duration,
}

impl Budget {
    /// Adds the `RateLimit-*` headers.
    pub(crate) fn apply(&self, headers: &mut HeaderMap) {
        for (name, value) in [
            (RATELIMIT_LIMIT, u64::from(self.limit)),
            (RATELIMIT_REMAINING, u64::from(self.remaining)),
            (RATELIMIT_RESET, ceil_secs(self.reset)),
        ] {
            headers.insert(name, number(value));
        }
    }
}

/// The decimal digits of every number below 1,000, one after another: `0` to `9`, `10` to
/// `99`, `100` to `999`.
static DIGITS: [u8; 2890] = {
    let mut digits = [0u8; 2890];
    let mut n = 0;
    let mut at = 0;
    while n < 1000 {
        let width = if n < 10 {
            1
        } else if n < 100 {
            2
        } else {
            3
        };
        let mut rest = n;
        let mut i = width;
        while i > 0 {
            i -= 1;
            digits[at + i] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        at += width;
        n += 1;
    }
    digits
};

/// `n` as a header value. Below 1,000, which a budget's numbers are with the default limits
/// (a burst of 100), the digits are a slice of [`DIGITS`]: no allocation to make and free
/// (an agent read with the default burst: 43,616 → 43,009 instructions).
fn number(n: u64) -> HeaderValue {
    let (start, width) = match n {
        0..10 => (n, 1),
        10..100 => (10 + (n - 10) * 2, 2),
        100..1000 => (190 + (n - 100) * 3, 3),
        _ => return HeaderValue::from(n),
    };
    let start = usize::try_from(start).unwrap_or_default();
    match std::str::from_utf8(&DIGITS[start..start + width]) {
        Ok(digits) => HeaderValue::from_static(digits),
        Err(_) => HeaderValue::from(n),
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// A 429 that says when to try again, and (for a credential) its empty budget.
fn too_many(detail: String, wait: Duration, limit: Option<u32>) -> ApiError {
    let secs = ceil_secs(wait).max(1);
    let mut err = ApiError::new(StatusCode::TOO_MANY_REQUESTS, detail)
        .with_header(header::RETRY_AFTER, secs.to_string());
    if let Some(limit) = limit {
        err = err
            .with_header(RATELIMIT_LIMIT, limit.to_string())
            .with_header(RATELIMIT_REMAINING, "0".to_owned())
            .with_header(RATELIMIT_RESET, secs.to_string());
    }
    err
}

impl Limiters {
    pub(crate) fn new(config: RateLimits) -> Self {
        let burst = NonZeroU32::new(config.burst).unwrap_or(NonZeroU32::MIN);
        let credentials = NonZeroU32::new(config.per_second).map(|rate| {
            RateLimiter::hashmap_with_hasher(
                Quota::per_second(rate).allow_burst(burst),
                foldhash::fast::RandomState::default(),
            )
            .with_middleware::<StateInformationMiddleware>()
        });
        let auth_failures = NonZeroU32::new(config.auth_failures_per_minute).map(|rate| {
            RateLimiter::hashmap_with_hasher(
                Quota::per_minute(rate),
                std::hash::RandomState::default(),
            )
            .with_middleware::<StateInformationMiddleware>()
        });
        let signature_failures = NonZeroU32::new(config.auth_failures_per_minute).map(|rate| {
            RateLimiter::hashmap_with_hasher(
                Quota::per_minute(rate),
                std::hash::RandomState::default(),
            )
            .with_middleware::<StateInformationMiddleware>()
        });
        Self {
            config,
            credentials,
            auth_failures,
            signature_failures,
            blocked: Mutex::new(HashMap::new()),
            blocked_len: AtomicUsize::new(0),
            checks: AtomicU64::new(0),
        }
    }

    /// Drops idle keys now and then, so that memory follows the active callers only.
    fn maybe_prune(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY != PRUNE_EVERY - 1 {
            return;
        }
        if let Some(l) = &self.credentials {
            l.retain_recent();
            l.shrink_to_fit();
        }
        if let Some(l) = &self.auth_failures {
            l.retain_recent();
            l.shrink_to_fit();
        }
        if let Some(l) = &self.signature_failures {
            l.retain_recent();
            l.shrink_to_fit();
        }
        let now = Instant::now();
        if let Ok(mut blocked) = self.blocked.lock() {
            blocked.retain(|_, until| *until > now);
            blocked.shrink_to_fit();
            self.blocked_len.store(blocked.len(), Ordering::Relaxed);
        }
    }

    /// Spends one request of `credential`'s budget: its state for the headers, or a 429.
    pub(crate) fn check_credential(&self, credential: &String) -> Result<Option<Budget>, ApiError> {
        let Some(limiter) = &self.credentials else {
            return Ok(None);
        };
        self.maybe_prune();
        match limiter.check_key(credential) {
            Ok(snapshot) => {
                let quota = snapshot.quota();
                let limit = quota.burst_size().get();
                let remaining = snapshot.remaining_burst_capacity();
                let reset = quota.replenish_interval() * (limit - remaining);
                Ok(Some(Budget {
                    limit,
                    remaining,
                    reset,
                }))
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                Err(too_many(
                    format!(
                        "too many requests with this credential: at most {} per second, in \
                         bursts of up to {}; retry after the time in Retry-After",
                        self.config.per_second,
                        not_until.quota().burst_size()
                    ),
                    wait,
                    Some(not_until.quota().burst_size().get()),
                ))
            }
        }
    }

    /// 429 when `ip` spent its budget of failed authentications, before any lookup.
    pub(crate) fn check_blocked(&self, ip: Option<IpAddr>) -> Result<(), ApiError> {
        let Some(ip) = ip else { return Ok(()) };
        if self.auth_failures.is_none() || self.blocked_len.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let until = self
            .blocked
            .lock()
            .ok()
            .and_then(|b| b.get(&ip).copied())
            .filter(|until| *until > now);
        match until {
            Some(until) => Err(self.auth_failure_error(until - now)),
            None => Ok(()),
        }
    }

    /// Counts a failed authentication from `ip`; a 429 once its budget is spent.
    pub(crate) fn auth_failed(&self, ip: Option<IpAddr>) -> Result<(), ApiError> {
        let (Some(ip), Some(limiter)) = (ip, &self.auth_failures) else {
            return Ok(());
        };
        self.maybe_prune();
        match limiter.check_key(&ip) {
            Ok(_) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                if let Ok(mut blocked) = self.blocked.lock() {
                    blocked.insert(ip, Instant::now() + wait);
                    self.blocked_len.store(blocked.len(), Ordering::Relaxed);
                }
                tracing::warn!(%ip, "too many failed authentications; refusing for a while");
                Err(self.auth_failure_error(wait))
            }
        }
    }

    /// Counts a refused provider signature for `integration`; a 429 once its budget is spent.
    /// Nothing is blocked: the next webhook is verified again, and served when well signed.
    pub(crate) fn signature_failed(&self, integration: &str) -> Result<(), ApiError> {
        let Some(limiter) = &self.signature_failures else {
            return Ok(());
        };
        self.maybe_prune();
        // Integration ids are short; a longer path segment is not one, and is not kept whole.
        let key: String = integration.chars().take(64).collect();
        match limiter.check_key(&key) {
            Ok(_) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(limiter.clock().now());
                tracing::warn!(
                    integration = %key,
                    "too many webhooks with a bad signature for this integration"
                );
                Err(too_many(
                    format!(
                        "too many requests with a bad signature for this integration (at most \
                         {} per minute); retry after the time in Retry-After",
                        self.config.auth_failures_per_minute
                    ),
                    wait,
                    None,
                ))
            }
        }
    }

    fn auth_failure_error(&self, wait: Duration) -> ApiError {
        too_many(
            format!(
                "too many failed authentications from this address (at most {} per minute); \
                 retry after the time in Retry-After",
                self.config.auth_failures_per_minute
            ),
            wait,
            None,
        )
    }

    /// The client's address: the connection's peer (a [`SocketAddr`] in the request's
    /// extensions, as [`serve()`](crate::serve) puts it), or, when the peer is a trusted
    /// proxy, the right-most untrusted address of `X-Forwarded-For`.
    pub(crate) fn client_ip(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = canonical(peer?);
        let trusted = |ip: IpAddr| self.config.trusted_proxies.iter().any(|n| n.contains(ip));
        if !trusted(peer) {
            return Some(peer);
        }
        let mut client = peer;
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in forwarded.iter().rev() {
            let Ok(ip) = hop.parse::<IpAddr>().map(canonical) else {
                break; // garbage: stop at the last address we can vouch for
            };
            client = ip;
            if !trusted(ip) {
                break;
            }
        }
        Some(client)
    }
}

/// The peer address of the connection, when the server put it in the request's extensions.
pub(crate) fn peer_of(extensions: &http::Extensions) -> Option<IpAddr> {
    extensions.get::<SocketAddr>().map(SocketAddr::ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_their_decimal_digits() {
        for n in (0..2000).chain([u64::from(u32::MAX), u64::MAX]) {
            assert_eq!(number(n), n.to_string().as_str(), "{n}");
        }
    }

    #[test]
    fn networks_parse_and_match() {
        let net: IpNetwork = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains("10.1.2.3".parse().unwrap()));
        assert!(net.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        let one: IpNetwork = "127.0.0.1".parse().unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let v6: IpNetwork = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("10.1.2.3".parse().unwrap()));
        let all: IpNetwork = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        for bad in ["", "10.0.0.0/33", "example.com", "10.0.0/8", "::/129"] {
            assert!(bad.parse::<IpNetwork>().is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let limiters = Limiters::new(RateLimits {
            trusted_proxies: vec!["10.0.0.0/8".parse().unwrap()],
            ..RateLimits::default()
        });
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("1.2.3.4, 203.0.113.9, 10.0.0.7"),
        );
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        // From the trusted proxy: the right-most untrusted hop.
        assert_eq!(
            limiters.client_ip(ip("10.0.0.1"), &headers),
            ip("203.0.113.9")
        );
        // From anyone else: the peer, whatever the header says.
        assert_eq!(
            limiters.client_ip(ip("198.51.100.1"), &headers),
            ip("198.51.100.1")
        );
        assert_eq!(limiters.client_ip(None, &headers), None);
        assert_eq!(
            limiters.client_ip(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn a_credential_gets_its_burst_then_429_with_headers() {
        let limiters = Limiters::new(RateLimits {
            per_second: 1,
            burst: 3,
            ..RateLimits::default()
        });
        let budgets: Vec<Budget> = (0..3)
            .map(|_| {
                limiters
                    .check_credential(&"apikey_aaaaaaaaaaaa".to_owned())
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            budgets.iter().map(|b| b.remaining).collect::<Vec<_>>(),
            [2, 1, 0]
        );
        assert!(budgets.iter().all(|b| b.limit == 3));
        let err = limiters
            .check_credential(&"apikey_aaaaaaaaaaaa".to_owned())
            .unwrap_err();
        assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
        let response = err.into_response();
        let retry: u64 = response.headers()[header::RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=2).contains(&retry), "{retry}");
        assert_eq!(response.headers()[RATELIMIT_REMAINING], "0");
        // Another credential has its own budget.
        assert!(
            limiters
                .check_credential(&"apikey_bbbbbbbbbbbb".to_owned())
                .is_ok()
        );
        // 0 disables.
        let off = Limiters::new(RateLimits {
            per_second: 0,
            ..RateLimits::default()
        });
        assert!(
            off.check_credential(&"apikey_aaaaaaaaaaaa".to_owned())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn failed_authentications_block_the_ip() {
        let limiters = Limiters::new(RateLimits {
            auth_failures_per_minute: 2,
            ..RateLimits::default()
        });
        let ip = Some("203.0.113.9".parse().unwrap());
        assert!(limiters.check_blocked(ip).is_ok());
        assert!(limiters.auth_failed(ip).is_ok());
        assert!(limiters.auth_failed(ip).is_ok());
        assert_eq!(
            limiters.auth_failed(ip).unwrap_err().status(),
            StatusCode::TOO_MANY_REQUESTS
        );
        assert!(limiters.check_blocked(ip).is_err());
        assert!(
            limiters
                .check_blocked(Some("198.51.100.1".parse().unwrap()))
                .is_ok()
        );
        assert!(limiters.check_blocked(None).is_ok());
    }

    #[test]
    fn bad_signatures_are_counted_per_integration_not_per_ip() {
        let limiters = Limiters::new(RateLimits {
            auth_failures_per_minute: 2,
            ..RateLimits::default()
        });
        let ip = Some("203.0.113.9".parse().unwrap());
        assert!(limiters.signature_failed("int_aaaaaaaaaaaa").is_ok());
        assert!(limiters.signature_failed("int_aaaaaaaaaaaa").is_ok());
        let err = limiters.signature_failed("int_aaaaaaaaaaaa").unwrap_err();
        assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(
            err.into_response()
                .headers()
                .contains_key(header::RETRY_AFTER)
        );
        assert!(limiters.signature_failed("int_bbbbbbbbbbbb").is_ok());
        // No address was blocked, nor charged.
        assert!(limiters.check_blocked(ip).is_ok());
        assert!(limiters.auth_failed(ip).is_ok());
    }
}
