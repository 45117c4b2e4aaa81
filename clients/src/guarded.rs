//! Requests to URLs chosen by API users (webhook endpoints, analysis models, the runtime's HTTP
//! tools and integration base URLs), which must not become a way into the network voiceplane
//! runs in: no redirects, no proxy, and unless the target policy allows private targets, a
//! connection only to public addresses.
//!
//! An IP-literal URL is judged before sending ([`allowed_literal`]); a hostname is resolved by
//! our own resolver ([`resolve_checked`]), which refuses the whole answer when any address in
//! it is not public, so the connection can only be made to addresses that were checked,
//! however the name resolved when the URL was stored (DNS rebinding). No proxy is used, since
//! a proxy would resolve the name itself, out of our sight.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Url, redirect};
use voiceplane_core::webhooks::{PrivateAddress, TargetPolicy};

use crate::{install_crypto_provider, without_url};

/// A client builder for URLs chosen by API users: no redirects, no proxy, and unless `policy`
/// allows private targets, a resolver that refuses names of private addresses. IP literals
/// never reach the resolver: check them with [`allowed_literal`].
pub(crate) fn guarded(policy: TargetPolicy) -> reqwest::ClientBuilder {
    install_crypto_provider();
    let builder = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .no_proxy();
    if policy.allow_private {
        builder
    } else {
        builder.dns_resolver(PublicOnly(policy))
    }
}

/// Refuses `url` when its host is an IP address `policy` does not allow.
pub(crate) fn allowed_literal(policy: TargetPolicy, url: &Url) -> Result<(), PrivateAddress> {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    match literal {
        Some(ip) => policy.check_addr(ip),
        None => Ok(()),
    }
}

/// The addresses of `host` (a name or an IP literal) at `port`, all of them allowed by
/// `policy`; for connections reqwest does not make (the WebSocket of speech to text).
pub(crate) async fn resolve_checked(
    policy: TargetPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(Unresolved)?
        .collect();
    // Refusing only the bad addresses would still let a name that mixes public and private
    // answers probe the private ones.
    for addr in &addrs {
        policy.check_addr(addr.ip())?;
    }
    Ok(addrs)
}

/// Resolves names with the system resolver and refuses any answer holding an address the
/// policy does not allow.
struct PublicOnly(TargetPolicy);

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolve_checked(policy, &host, 0).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// A name the system resolver could not resolve.
#[derive(Debug)]
pub(crate) struct Unresolved(pub(crate) std::io::Error);

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot resolve the host name: {}", self.0)
    }
}

impl std::error::Error for Unresolved {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The first error of type `E` in `err`'s chain of causes.
pub(crate) fn find<E: std::error::Error + 'static>(err: &reqwest::Error) -> Option<&E> {
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        source = e.source();
    }
    None
}

/// The sentence for a request to `target` ("the endpoint", "the tool") that got no response,
/// safe to show its owner: it names neither the URL (which may carry the receiver's own
/// token) nor a body. The full error goes to the log, without the URL, under `what`.
pub(crate) fn transport_sentence(
    err: reqwest::Error,
    target: &str,
    timeout: Duration,
    what: &str,
) -> String {
    let sentence = if let Some(refused) = find::<PrivateAddress>(&err) {
        format!(
            "{target}'s address {} is private; private targets are not allowed",
            refused.0
        )
    } else if find::<Unresolved>(&err).is_some() {
        format!("{target}'s host name could not be resolved")
    } else if err.is_timeout() {
        format!("{target} did not answer within {}", short(timeout))
    } else if err.is_connect() {
        format!("could not connect to {target}")
    } else {
        format!("the request to {target} failed")
    };
    tracing::warn!(error = %without_url(err), "{what} failed: {sentence}");
    sentence
}

/// The first `limit` bytes of the body (fewer if it ends or fails first), and whether more
/// followed; the rest is never read, so a receiver cannot make us download more.
pub(crate) async fn read_prefix(response: &mut reqwest::Response, limit: usize) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            return (body, true);
        }
    }
    (body, false)
}

/// `10 s`, `300 ms`.
pub(crate) fn short(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_short() {
        assert_eq!(short(Duration::from_secs(10)), "10 s");
        assert_eq!(short(Duration::from_millis(300)), "300 ms");
        assert_eq!(short(Duration::from_millis(1500)), "1500 ms");
    }

    #[test]
    fn private_literals_are_refused() {
        let url = Url::parse("http://10.0.0.5/x").unwrap();
        assert!(allowed_literal(TargetPolicy::default(), &url).is_err());
        let allowed = TargetPolicy {
            allow_private: true,
        };
        assert!(allowed_literal(allowed, &url).is_ok());
        let named = Url::parse("http://tools.example/x").unwrap();
        assert!(allowed_literal(TargetPolicy::default(), &named).is_ok());
    }
}
