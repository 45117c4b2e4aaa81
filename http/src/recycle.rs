//! The two maps every request allocates, kept per thread for the requests to come.
//!
//! hyper hands the header map of each answer it wrote, emptied, to the next request it reads
//! on the connection; the request's map was then dropped when its operation finished, and the
//! answer made a new one: two allocations freed and two made per request (about 600
//! instructions). The request's extensions, which the server fills with the peer's address,
//! were a map allocated and freed per request too. Here the request's maps, once its operation
//! is done ([`keep`]), answer (headers) and carry (extensions) a later request on the thread: a
//! header map goes round answer, hyper, request, answer. A few of each are kept per thread, and
//! only header maps with room for an answer and not much more.

use std::cell::RefCell;

use http::request::Parts;
use http::{Extensions, HeaderMap};

/// Room for what the layers add to a response on the way out (the request id, rate-limit and
/// security headers: 11 on an agent read), so that its map is not grown and rehashed on the
/// way.
pub(crate) const RESPONSE_HEADERS: usize = 12;

/// Most maps of each kind a thread keeps.
const KEPT: usize = 4;

thread_local! {
    static HEADER_MAPS: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
    static EXTENSIONS: RefCell<Vec<Extensions>> = const { RefCell::new(Vec::new()) };
}

/// Keeps the maps of `parts`, a request's that is done with, emptied (their values dropped
/// now, credentials among them), leaving empty ones that own nothing.
pub(crate) fn keep(parts: &mut Parts) {
    let headers = std::mem::take(&mut parts.headers);
    if (RESPONSE_HEADERS..=4 * RESPONSE_HEADERS).contains(&headers.capacity()) {
        put(&HEADER_MAPS, headers, HeaderMap::clear);
    }
    let extensions = std::mem::take(&mut parts.extensions);
    if !extensions.is_empty() {
        put(&EXTENSIONS, extensions, Extensions::clear);
    }
}

/// An empty header map with room for [`RESPONSE_HEADERS`]: a kept one, else a new one.
pub(crate) fn headers() -> HeaderMap {
    take(&HEADER_MAPS).unwrap_or_else(|| HeaderMap::with_capacity(RESPONSE_HEADERS))
}

/// Empty extensions, whose map is allocated when one was kept.
pub(crate) fn extensions() -> Extensions {
    take(&EXTENSIONS).unwrap_or_default()
}

fn put<T: 'static>(
    pool: &'static std::thread::LocalKey<RefCell<Vec<T>>>,
    mut map: T,
    clear: fn(&mut T),
) {
    clear(&mut map);
    // Not while the pool is borrowed (a drop inside a drop), nor once the thread's storage is
    // gone: the map is simply dropped then.
    let _ = pool.try_with(|maps| {
        if let Ok(mut maps) = maps.try_borrow_mut()
            && maps.len() < KEPT
        {
            maps.push(map);
        }
    });
}

fn take<T: 'static>(pool: &'static std::thread::LocalKey<RefCell<Vec<T>>>) -> Option<T> {
    pool.try_with(|maps| maps.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use http::{HeaderValue, Request, StatusCode, header};

    use super::*;

    fn parts(headers: HeaderMap) -> Parts {
        let mut request = Request::new(());
        *request.headers_mut() = headers;
        request.into_parts().0
    }

    /// A request's maps that are done with answer and carry the next request on the thread,
    /// emptied; a header map too small for an answer, or much larger, is not kept.
    #[test]
    fn a_requests_maps_serve_the_next_one_emptied() {
        HEADER_MAPS.with_borrow_mut(Vec::clear);
        EXTENSIONS.with_borrow_mut(Vec::clear);
        let mut headers = HeaderMap::with_capacity(RESPONSE_HEADERS);
        headers.insert("x-api-key", HeaderValue::from_static("vp_secret"));
        headers.append("accept", HeaderValue::from_static("a"));
        headers.append("accept", HeaderValue::from_static("b"));
        let capacity = headers.capacity();
        let mut done = parts(headers);
        done.extensions.insert(StatusCode::OK);
        keep(&mut done);
        assert!(done.headers.is_empty() && done.extensions.is_empty());

        let response = crate::response::json(StatusCode::OK, &());
        assert_eq!(response.headers().capacity(), capacity, "the kept map");
        assert_eq!(response.headers().len(), 1, "only its content type");
        assert!(response.headers().contains_key(header::CONTENT_TYPE));
        assert!(response.headers().get("x-api-key").is_none());
        let extensions = extensions();
        assert!(extensions.is_empty());
        assert_eq!(extensions.get::<StatusCode>(), None);

        for unfit in [
            HeaderMap::with_capacity(2),
            HeaderMap::with_capacity(8 * RESPONSE_HEADERS),
        ] {
            let capacity = unfit.capacity();
            keep(&mut parts(unfit));
            assert_ne!(headers_capacity(), capacity);
        }
        for _ in 0..2 * KEPT {
            keep(&mut parts(HeaderMap::with_capacity(RESPONSE_HEADERS)));
        }
        assert_eq!(HEADER_MAPS.with_borrow(Vec::len), KEPT);
    }

    fn headers_capacity() -> usize {
        headers().capacity()
    }
}
