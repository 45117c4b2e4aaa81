//! What the adapter reads from a request besides the body: credentials from headers and
//! page parameters from the query string.
//!
//! Credential values are never logged and never echoed in an error detail.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use voiceplane_core::auth::Credentials;
use voiceplane_core::page::{MAX_LIMIT, PageParams};

use crate::error::ApiError;

/// `X-API-Key`.
pub(crate) const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// `X-Organization-Id`.
pub(crate) const X_ORGANIZATION_ID: HeaderName = HeaderName::from_static("x-organization-id");

/// The single value of header `name`; 401 when it is sent more than once, since two
/// credentials make the request ambiguous.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    shown: &str,
) -> Result<Option<&'h HeaderValue>, ApiError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(ApiError::unauthenticated(format!(
            "the {shown} header must be sent at most once"
        )));
    }
    Ok(first)
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
pub(crate) fn credentials(headers: &HeaderMap) -> Result<Credentials, ApiError> {
    let api_key = single(headers, &X_API_KEY, "X-API-Key")?
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .map_err(|_| ApiError::unauthenticated("the X-API-Key header is malformed"))
        })
        .transpose()?;
    let bearer = single(headers, &header::AUTHORIZATION, "Authorization")?
        .map(bearer_token)
        .transpose()?;
    let organization_id = single(headers, &X_ORGANIZATION_ID, "X-Organization-Id")
        .map_err(|e| e.with_status(http::StatusCode::BAD_REQUEST))?
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
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

/// `limit` and `cursor` from a query string; other parameters are ignored, and the first
/// occurrence of a repeated one wins. `limit` must be an unsigned integer (the range 1–100
/// is checked by the service); an empty `cursor` means the first page.
pub(crate) fn page_params(query: Option<&str>) -> Result<PageParams, ApiError> {
    let mut params = PageParams::default();
    let (mut seen_limit, mut seen_cursor) = (false, false);
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*name {
            "limit" if !seen_limit => {
                seen_limit = true;
                let limit = value.parse::<u32>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "limit must be an integer between 1 and {MAX_LIMIT}"
                    ))
                })?;
                params.limit = Some(limit);
            }
            "cursor" if !seen_cursor => {
                seen_cursor = true;
                if !value.is_empty() {
                    params.cursor = Some(value.into_owned());
                }
            }
            _ => {}
        }
    }
    Ok(params)
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
        let c = credentials(&headers(&[
            ("x-api-key", b"vpk_abc"),
            ("authorization", b"bearer   tok.en.sig "),
            ("x-organization-id", b"org_0123456789abcdef"),
        ]))
        .unwrap();
        assert_eq!(c.api_key.as_deref(), Some("vpk_abc"));
        assert_eq!(c.bearer.as_deref(), Some("tok.en.sig"));
        assert_eq!(c.organization_id.as_deref(), Some("org_0123456789abcdef"));

        let c = credentials(&headers(&[("Authorization", b"BEARER t")])).unwrap();
        assert_eq!(c.bearer.as_deref(), Some("t"));
        assert!(c.api_key.is_none() && c.organization_id.is_none());

        let c = credentials(&HeaderMap::new()).unwrap();
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
            let err = credentials(&headers(&pairs)).unwrap_err();
            assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
            assert_eq!(err.detail(), detail);
        }
    }

    #[test]
    fn non_ascii_organization_is_left_to_the_service() {
        let c = credentials(&headers(&[("x-organization-id", b"org_\xff")])).unwrap();
        assert!(c.organization_id.unwrap().starts_with("org_"));
    }

    #[test]
    fn page_params_parse() {
        assert_eq!(page_params(None).unwrap(), PageParams::default());
        assert_eq!(
            page_params(Some("limit=10&cursor=abc_-&other=1")).unwrap(),
            PageParams {
                limit: Some(10),
                cursor: Some("abc_-".into())
            }
        );
        assert_eq!(
            page_params(Some("limit=5&limit=x&cursor=")).unwrap(),
            PageParams {
                limit: Some(5),
                cursor: None
            }
        );
        // Out of range is the service's call (it names the value); not a number is ours.
        assert_eq!(page_params(Some("limit=0")).unwrap().limit, Some(0));
        for bad in [
            "limit=x",
            "limit=",
            "limit=-1",
            "limit=1.5",
            "limit=99999999999",
        ] {
            let err = page_params(Some(bad)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
            assert_eq!(err.detail(), "limit must be an integer between 1 and 100");
        }
    }
}
