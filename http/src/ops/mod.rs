//! The operations, one module per area and, in each, one declared [`Operation`] beside the
//! `async fn` that handles it. A handler is named after the `Service` method it calls
//! (`agent_view`, `tool_list`, …); its parameters say what it reads (the path captures, then a
//! tuple of `FromRequest` inputs (`endpoint.rs`) in the order they are
//! checked) and its return type what it answers, and the OpenAPI document is described from
//! those same types.
//!
//! This module is the first stage of a request: [`resolve`] finds the operation of a method
//! and path among [`AREAS`].
//!
//! Paths are matched segment by segment and exactly: no trailing slash, no empty segments, no
//! percent-decoding (identifiers never need it; an encoded id simply fails validation with a
//! 400). A path that matches a template under another method gives
//! [`RouteError::MethodNotAllowed`] with the allowed methods; a path that matches no template
//! gives [`RouteError::NotFound`].

mod agents;
mod api_keys;
mod audit;
mod calls;
mod campaigns;
mod documents;
mod events;
mod health;
mod integrations;
mod members;
mod meta;
mod organization;
mod phone_numbers;
mod runtime;
mod suppressions;
mod telephony;
mod tools;
mod usage;
mod voices;
mod webhooks;

use http::Method;

use crate::operation::{Area, Captures, Operation};

/// Every area of the API, in the order the OpenAPI document and `http/README.md` list them.
pub const AREAS: &[Area] = &[
    health::AREA,
    meta::AREA,
    api_keys::AREA,
    calls::AREA,
    calls::transcripts::AREA,
    calls::recordings::AREA,
    usage::AREA,
    tools::AREA,
    agents::AREA,
    phone_numbers::AREA,
    integrations::AREA,
    documents::AREA,
    voices::AREA,
    organization::AREA,
    members::AREA,
    events::AREA,
    audit::AREA,
    webhooks::AREA,
    suppressions::AREA,
    campaigns::AREA,
    telephony::AREA,
    runtime::AREA,
];

/// Every operation, area by area.
pub fn operations() -> impl Iterator<Item = &'static Operation> {
    AREAS.iter().flat_map(|area| area.operations)
}

/// Why a request matched no operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// No template matches the path (HTTP 404).
    NotFound,
    /// Templates match the path, but none under the request's method (HTTP 405).
    MethodNotAllowed {
        /// The methods the path accepts, in table order; `HEAD` after `GET`.
        allow: Vec<&'static str>,
    },
}

/// The operations of each method in a radix tree of their templates, built on first use: a
/// request finds its operation in a few comparisons of its path, not one template match per
/// operation of the table.
struct Routes {
    by_method: Vec<(&'static str, matchit::Router<&'static Operation>)>,
}

fn routes() -> &'static Routes {
    static ROUTES: std::sync::OnceLock<Routes> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| {
        let mut by_method: Vec<(&'static str, matchit::Router<&'static Operation>)> = Vec::new();
        for op in operations() {
            let at = match by_method.iter().position(|(m, _)| *m == op.method) {
                Some(at) => at,
                None => {
                    by_method.push((op.method, matchit::Router::new()));
                    by_method.len() - 1
                }
            };
            // Templates are constants; the tests build this table, so a template the tree
            // refuses (two of one method that conflict) fails them, not a request.
            if let Err(e) = by_method[at].1.insert(op.template, op) {
                panic!(
                    "the route {} {} cannot be added: {e}",
                    op.method, op.template
                );
            }
        }
        Routes { by_method }
    })
}

/// The operation a request's method and path (without the query string) runs, with the path
/// parameters it captured. `HEAD` resolves to the `GET` of the path.
pub fn resolve(method: &Method, path: &str) -> Result<(&'static Operation, Captures), RouteError> {
    let wanted = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    if let Some((_, router)) = routes().by_method.iter().find(|(m, _)| *m == wanted)
        && let Ok(found) = router.at(path)
    {
        // One pass over the parameters (each step of matchit's iterator is about a hundred
        // instructions): the tree lets a parameter match an empty segment
        // (`/api/calls//hangup`), the table does not.
        let mut captures = [String::new(), String::new()];
        let mut empty = false;
        for (slot, (_, value)) in captures.iter_mut().zip(found.params.iter()) {
            empty |= value.is_empty();
            value.clone_into(slot);
        }
        if !empty {
            return Ok((found.value, captures));
        }
    }
    // A path no method's tree holds, even with an empty parameter, matches no template: a
    // 404 without reading the table (a scanner's `/wp-login.php`, a mistyped path).
    if !routes()
        .by_method
        .iter()
        .any(|(_, router)| router.at(path).is_ok())
    {
        return Err(RouteError::NotFound);
    }
    // Held under another method, or only with an empty parameter: the table says whether the
    // path exists (405, with the methods it allows, in table order) or not (404).
    scan(method, path)
}

/// [`resolve`] by matching every template of the table in order: the reference the tree is
/// tested against, and the answer for paths the method's tree does not hold.
fn scan(method: &Method, path: &str) -> Result<(&'static Operation, Captures), RouteError> {
    let mut allow: Vec<&'static str> = Vec::new();
    for op in operations() {
        let Some(captures) = match_template(op.template, path) else {
            continue;
        };
        if op.answers(method) {
            // Owned only for the operation that runs, not for every template of the path.
            return Ok((op, captures.map(str::to_owned)));
        }
        if !allow.contains(&op.method) {
            allow.push(op.method);
            if op.method == "GET" {
                allow.push("HEAD");
            }
        }
    }
    if allow.is_empty() {
        Err(RouteError::NotFound)
    } else {
        Err(RouteError::MethodNotAllowed { allow })
    }
}

/// Matches `path` against `template`; on success returns the captured segments in order
/// (unused slots empty). A placeholder never matches an empty segment.
fn match_template<'p>(template: &str, path: &'p str) -> Option<[&'p str; 2]> {
    let mut captures = [""; 2];
    let mut n = 0;
    let mut t = template.split('/');
    let mut p = path.split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(captures),
            (Some(ts), Some(ps)) => {
                if ts.starts_with('{') && ts.ends_with('}') {
                    if ps.is_empty() {
                        return None;
                    }
                    // The tests hold every template to at most `Captures`' length.
                    if let Some(slot) = captures.get_mut(n) {
                        *slot = ps;
                    }
                    n += 1;
                } else if ts != ps {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests;
