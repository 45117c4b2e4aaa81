//! How an operation authenticates its caller ([`Auth`]), and what the adapter reads from a
//! request's headers to do it: the credentials and the organization.
//!
//! Credential values are never logged and never echoed in an error detail.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use voiceplane_core::auth::Credentials;

use crate::error::ApiError;

/// How the caller of an operation authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// An organization credential: `X-API-Key` or a bearer JWT, plus `X-Organization-Id`.
    /// The caller is authenticated before anything else runs, behind the per-IP limit of
    /// failed authentications, and spends its credential's rate limit.
    Organization,
    /// No credentials.
    None,
    /// A bearer JWT only, without `X-Organization-Id`: someone who is not a member yet
    /// (accepting an invitation). The operation checks the token itself.
    Invitee,
    /// A telephony provider's webhook: its signature over the request, checked by the
    /// operation with the integration's secret, is the credential. Failures count toward the
    /// per-IP limit of failed authentications.
    Provider,
}

/// `X-API-Key`.
pub(crate) const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// `X-Organization-Id`.
pub(crate) const X_ORGANIZATION_ID: HeaderName = HeaderName::from_static("x-organization-id");

/// The values of one header, as a pass over a request's headers finds them ([`read`]'s, and
/// `Api::handle`'s for `X-Request-Id`): the first, and whether there were more.
#[derive(Default)]
pub(crate) struct Found<'h> {
    first: Option<&'h HeaderValue>,
    repeated: bool,
}

impl<'h> Found<'h> {
    pub(crate) fn add(&mut self, value: &'h HeaderValue) {
        if self.first.is_some() {
            self.repeated = true;
        } else {
            self.first = Some(value);
        }
    }

    /// The single value, or `None` when the header was sent more than once.
    pub(crate) fn single(&self) -> Option<Option<&'h HeaderValue>> {
        (!self.repeated).then_some(self.first)
    }

    /// The single value of a credential header; 401 when it was sent more than once, since
    /// two credentials make the request ambiguous.
    fn credential(&self, shown: &str) -> Result<Option<&'h HeaderValue>, ApiError> {
        self.single().ok_or_else(|| {
            ApiError::unauthenticated(format!("the {shown} header must be sent at most once"))
        })
    }
}

/// Reads `X-API-Key`, `Authorization: Bearer <token>` and `X-Organization-Id`.
///
/// - A credential header that is not visible ASCII: 401 "… header is malformed".
/// - An `Authorization` header with another scheme: 401; the scheme name is
///   case-insensitive. `Bearer` without a token: 401.
/// - `X-Organization-Id` is passed on as sent (non-ASCII bytes replaced), so that the
///   service rejects a malformed one with the same 400 whatever its bytes.
///
/// Missing headers are left to [`voiceplane_core::Service::authenticate`].
pub(crate) fn read(headers: &HeaderMap) -> Result<Credentials, ApiError> {
    // One pass over the headers rather than a lookup of each name, which hashed the name:
    // three lookups were about 470 instructions of an authenticated request.
    let mut key = Found::default();
    let mut authorization = Found::default();
    let mut organization = Found::default();
    for (name, value) in headers {
        if *name == X_API_KEY {
            key.add(value);
        } else if *name == header::AUTHORIZATION {
            authorization.add(value);
        } else if *name == X_ORGANIZATION_ID {
            organization.add(value);
        }
    }
    let api_key = key
        .credential("X-API-Key")?
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .map_err(|_| ApiError::unauthenticated("the X-API-Key header is malformed"))
        })
        .transpose()?;
    let bearer = authorization
        .credential("Authorization")?
        .map(bearer_token)
        .transpose()?;
    let organization_id = organization
        .single()
        .ok_or_else(|| {
            ApiError::bad_request("the X-Organization-Id header must be sent at most once")
        })?
        .map(|v| match v.to_str() {
            // Visible ASCII, as every sane id is: checked in a quicker pass than the lossy
            // conversion's (about 120 instructions less), with the same string.
            Ok(ascii) => ascii.to_owned(),
            Err(_) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
        });
    Ok(Credentials {
        api_key,
        bearer,
        organization_id,
    })
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer_token(value: &HeaderValue) -> Result<String, ApiError> {
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthenticated("the Authorization header is malformed"))?
        .trim();
    let (scheme, token) = match value.split_once([' ', '\t']) {
        Some((scheme, token)) => (scheme, token.trim()),
        None => (value, ""),
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::unauthenticated(
            "Authorization header must use the Bearer scheme",
        ));
    }
    if token.is_empty() {
        return Err(ApiError::unauthenticated(
            "the Authorization header has no Bearer token",
        ));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        h
    }

    #[test]
    fn reads_the_three_headers() {
        let c = read(&headers(&[
            ("x-api-key", b"vpk_abc"),
            ("authorization", b"bearer   tok.en.sig "),
            ("x-organization-id", b"org_0123456789abcdef"),
        ]))
        .unwrap();
        assert_eq!(c.api_key.as_deref(), Some("vpk_abc"));
        assert_eq!(c.bearer.as_deref(), Some("tok.en.sig"));
        assert_eq!(c.organization_id.as_deref(), Some("org_0123456789abcdef"));

        let c = read(&headers(&[("Authorization", b"BEARER t")])).unwrap();
        assert_eq!(c.bearer.as_deref(), Some("t"));
        assert!(c.api_key.is_none() && c.organization_id.is_none());

        let c = read(&HeaderMap::new()).unwrap();
        assert!(c.api_key.is_none() && c.bearer.is_none() && c.organization_id.is_none());
    }

    #[test]
    fn rejects_bad_credential_headers_with_401() {
        for (pairs, detail) in [
            (
                vec![("authorization", &b"Basic dXNlcjpwYXNz"[..])],
                "Authorization header must use the Bearer scheme",
            ),
            (
                vec![("authorization", &b"tokenwithoutscheme"[..])],
                "Authorization header must use the Bearer scheme",
            ),
            (
                vec![("authorization", &b"Bearer"[..])],
                "the Authorization header has no Bearer token",
            ),
            (
                vec![("authorization", &b"Bearer \xff\xfe"[..])],
                "the Authorization header is malformed",
            ),
            (
                vec![("x-api-key", &b"vpk_\xc3\xa9"[..])],
                "the X-API-Key header is malformed",
            ),
            (
                vec![("x-api-key", &b"a"[..]), ("x-api-key", &b"b"[..])],
                "the X-API-Key header must be sent at most once",
            ),
        ] {
            let err = read(&headers(&pairs)).unwrap_err();
            assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
            assert_eq!(err.detail(), detail);
        }
    }

    #[test]
    fn headers_are_found_among_others_and_repeats_refused() {
        let c = read(&headers(&[
            ("host", b"example.com"),
            ("x-organization-id", b"org_1"),
            ("accept", b"*/*"),
            ("x-api-key", b"vpk_1"),
            ("x-request-id", b"r-1"),
        ]))
        .unwrap();
        assert_eq!(c.api_key.as_deref(), Some("vpk_1"));
        assert_eq!(c.organization_id.as_deref(), Some("org_1"));
        assert!(c.bearer.is_none());

        for (twice, status, detail) in [
            (
                [
                    ("authorization", &b"Bearer a"[..]),
                    ("accept", b"*/*"),
                    ("authorization", b"Bearer b"),
                ],
                StatusCode::UNAUTHORIZED,
                "the Authorization header must be sent at most once",
            ),
            (
                [
                    ("x-organization-id", b"org_1"),
                    ("host", b"x"),
                    ("x-organization-id", b"org_2"),
                ],
                StatusCode::BAD_REQUEST,
                "the X-Organization-Id header must be sent at most once",
            ),
        ] {
            let err = read(&headers(&twice)).unwrap_err();
            assert_eq!(err.status(), status);
            assert_eq!(err.detail(), detail);
        }
    }

    #[test]
    fn non_ascii_organization_is_left_to_the_service() {
        let c = read(&headers(&[("x-organization-id", b"org_\xff")])).unwrap();
        assert!(c.organization_id.unwrap().starts_with("org_"));
    }
}
