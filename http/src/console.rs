//! The web console (DESIGN §22): a page, a script and a style sheet compiled into the binary
//! (`http/console/`, plain ES modules: nothing to build), served under `/console/`. The console
//! is a client of the public API only: it signs in with an organization id and an API key kept
//! in the tab's `sessionStorage`, and reaches the API at the parent of its own folder, so it
//! works wherever the API is mounted.
//!
//! [`Console`] is a tower service that answers the console's paths (404 for any other), for
//! programs that route `/console` themselves; [`WithConsole`] puts it in front of another
//! service, the binary's [`Api`](crate::Api). Every answer carries a Content-Security-Policy
//! that allows scripts and styles from this origin only (no inline script or style), requests
//! to this origin only, and audio from this origin or any `https:` object store (presigned
//! recording URLs).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderValue, Method, Request, Response, StatusCode, header};

use crate::response::{ResponseBody, full};

/// The console's folder; `/console` itself redirects to it.
pub const PATH: &str = "/console/";

/// The policy of every console answer.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; media-src 'self' https: blob:; connect-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `(file, content type, bytes)` of every asset.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "",
        "text/html; charset=utf-8",
        include_bytes!("../console/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../console/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../console/style.css"),
    ),
];

/// Whether `path` is the console's.
pub fn serves(path: &str) -> bool {
    path == "/console" || path.starts_with(PATH)
}

/// The console's answers; cheap to clone.
#[derive(Debug, Clone, Copy, Default)]
pub struct Console;

impl Console {
    /// The answer to `method` on `path`.
    pub fn respond(&self, method: &Method, path: &str) -> Response<ResponseBody> {
        if !serves(path) {
            return problem(StatusCode::NOT_FOUND, format!("no route for {path}"));
        }
        if method != Method::GET && method != Method::HEAD {
            let mut response = problem(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not allowed on the console; use GET"),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        if path == "/console" {
            // Relative, so that it holds under any mount point.
            let mut response = Response::new(full(""));
            *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
            response
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("console/"));
            return response;
        }
        let file = &path[PATH.len()..];
        let Some((_, content_type, bytes)) = ASSETS.iter().find(|(name, _, _)| *name == file)
        else {
            return problem(
                StatusCode::NOT_FOUND,
                format!("the console has no file {file}"),
            );
        };
        let body = if method == Method::HEAD {
            full("")
        } else {
            full(*bytes)
        };
        let mut response = Response::new(body);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        secured(response)
    }
}

/// A `{detail}` answer with the console's headers.
fn problem(status: StatusCode, detail: String) -> Response<ResponseBody> {
    let mut response = crate::response::json(status, &serde_json::json!({ "detail": detail }));
    *response.status_mut() = status;
    secured(response)
}

fn secured(mut response: Response<ResponseBody>) -> Response<ResponseBody> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

impl<B> tower_service::Service<Request<B>> for Console {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        std::future::ready(Ok(self.respond(req.method(), req.uri().path())))
    }
}

/// `inner` with the console in front of it: the console's paths are answered by [`Console`],
/// every other request goes to `inner`. Without a console (`console.enabled = false`),
/// everything goes to `inner`.
#[derive(Debug, Clone)]
pub struct WithConsole<S> {
    inner: S,
    console: Option<Console>,
}

impl<S> WithConsole<S> {
    /// `inner`, with the console in front of it when `enabled`.
    pub fn new(inner: S, enabled: bool) -> Self {
        Self {
            inner,
            console: enabled.then_some(Console),
        }
    }
}

impl<S, B> tower_service::Service<Request<B>> for WithConsole<S>
where
    S: tower_service::Service<Request<B>, Response = Response<ResponseBody>, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ConsoleFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        match self.console {
            Some(console) if serves(req.uri().path()) => ConsoleFuture::Console(Some(Box::new(
                console.respond(req.method(), req.uri().path()),
            ))),
            _ => ConsoleFuture::Inner(self.inner.call(req)),
        }
    }
}

/// The future of [`WithConsole`]: the inner service's, as it is, for every request the
/// console does not answer (not boxed again: the [`Api`](crate::Api)'s future is a box
/// already, and a second one cost an allocation and a copy of every request).
pub enum ConsoleFuture<F> {
    /// The console's answer, taken by the first poll. Boxed, so that this future stays the
    /// size of the inner one, which every layer above moves.
    Console(Option<Box<Response<ResponseBody>>>),
    /// Any other request.
    Inner(F),
}

impl<F> Future for ConsoleFuture<F>
where
    F: Future<Output = Result<Response<ResponseBody>, Infallible>> + Unpin,
{
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Console(answer) => match answer.take() {
                Some(response) => Poll::Ready(Ok(*response)),
                None => panic!("ConsoleFuture polled after it completed"),
            },
            Self::Inner(inner) => Pin::new(inner).poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_answers_its_files_under_its_policy() {
        let console = Console;
        let page = console.respond(&Method::GET, "/console/");
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(
            page.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(
            csp.contains("script-src 'self';") && !csp.contains("unsafe"),
            "{csp}"
        );
        let script = console.respond(&Method::GET, "/console/app.js");
        assert_eq!(
            script.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        let redirect = console.respond(&Method::GET, "/console");
        assert_eq!(redirect.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(redirect.headers()[header::LOCATION], "console/");
        assert_eq!(
            console
                .respond(&Method::GET, "/console/secrets.txt")
                .status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            console.respond(&Method::POST, "/console/").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(
            console.respond(&Method::GET, "/api/agents").status(),
            StatusCode::NOT_FOUND
        );
    }

    /// The page loads nothing inline: the policy forbids it, and the browser would refuse it.
    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let page = std::str::from_utf8(ASSETS[0].2).unwrap();
        assert!(
            !page.contains("<script>") && !page.contains("style="),
            "{page}"
        );
        let script = std::str::from_utf8(ASSETS[1].2).unwrap();
        assert!(!script.contains("innerHTML"), "values are written as text");
    }
}
