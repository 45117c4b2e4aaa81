//! The declarations against themselves, their handlers and `http/README.md`; resolution.

use voiceplane_core::role::Permission;

use super::*;
use crate::openapi::spec::Schemas;
use crate::operation::{Auth, Conditional};

/// The id of the operation `method path` resolves to, and its captures.
fn resolved(method: Method, path: &str) -> Result<(&'static str, Vec<String>), RouteError> {
    resolve(&method, path).map(|(op, captures)| {
        let n = op.template.matches('{').count();
        (op.id, captures.into_iter().take(n).collect())
    })
}

fn get(path: &str) -> Result<(&'static str, Vec<String>), RouteError> {
    resolved(Method::GET, path)
}

fn ok(id: &'static str, captures: &[&str]) -> Result<(&'static str, Vec<String>), RouteError> {
    Ok((id, captures.iter().map(|c| (*c).to_owned()).collect()))
}

/// Fills each `{param}` of a template with a sample value.
fn sample_path(template: &str) -> String {
    template
        .split('/')
        .map(|seg| {
            if seg.starts_with('{') {
                format!("v_{}", &seg[1..seg.len() - 1])
            } else {
                seg.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn placeholders(template: &str) -> Vec<&str> {
    template
        .split('/')
        .filter(|s| s.starts_with('{'))
        .map(|s| &s[1..s.len() - 1])
        .collect()
}

#[test]
fn every_operation_resolves_to_itself_with_its_parameters() {
    for op in operations() {
        let method = Method::from_bytes(op.method.as_bytes()).unwrap();
        let (found, captures) =
            resolve(&method, &sample_path(op.template)).unwrap_or_else(|e| panic!("{op:?}: {e:?}"));
        assert_eq!(found.id, op.id);
        let expected: Vec<String> = placeholders(op.template)
            .iter()
            .map(|p| format!("v_{p}"))
            .collect();
        assert_eq!(&captures[..expected.len()], expected.as_slice(), "{op:?}");
    }
}

#[test]
fn declarations_are_unique_and_handlers_take_their_templates_parameters() {
    let all: Vec<&Operation> = operations().collect();
    let mut schemas = Schemas::new();
    for (i, op) in all.iter().enumerate() {
        assert!(op.template.starts_with('/'), "{op:?}");
        let params = placeholders(op.template);
        assert!(params.len() <= Captures::default().len(), "{op:?}");
        assert_eq!(
            op.describe(&mut schemas).path_params,
            params.len(),
            "{op:?}"
        );
        for other in &all[i + 1..] {
            assert!(
                (op.method, op.template) != (other.method, other.template),
                "{op:?} is declared twice"
            );
            assert_ne!(op.id, other.id, "two operations are named {}", op.id);
        }
    }
}

/// An operation that takes an `Actor` is authenticated before it runs, one that takes an
/// invitee's token is not, and one declared public takes no credentials at all.
#[test]
fn declared_authentication_is_what_the_handler_takes() {
    let mut schemas = Schemas::new();
    for op in operations() {
        let takes = op.describe(&mut schemas).credentials.unwrap_or(Auth::None);
        assert_eq!(takes, op.auth, "{op:?}");
    }
}

/// A write of a resource with a tagged view is conditional, so that `If-Match` is never
/// silently ignored; nothing else claims to be.
#[test]
fn conditional_declarations_follow_the_views() {
    let all: Vec<&Operation> = operations().collect();
    let view_at = |template: &str| {
        all.iter()
            .filter(|op| op.template == template && op.conditional == Conditional::TaggedView)
            .count()
    };
    for op in &all {
        match op.conditional {
            Conditional::TaggedView => {
                assert_eq!(op.method, "GET", "{op:?}");
                assert_eq!(view_at(op.template), 1, "{op:?}");
            }
            Conditional::TaggedWrite | Conditional::Write => {
                assert!(matches!(op.method, "PATCH" | "PUT" | "DELETE"), "{op:?}");
                assert_eq!(view_at(op.template), 1, "{op:?} writes no tagged view");
            }
            Conditional::None => {
                assert!(
                    op.method == "POST" || view_at(op.template) == 0,
                    "{op:?} is at a tagged view's path but ignores its preconditions"
                );
            }
        }
    }
    let at = |method: &str, template: &str| {
        all.iter()
            .find(|op| op.method == method && op.template == template)
            .map(|op| op.conditional)
    };
    assert_eq!(
        at("GET", "/api/organization/settings"),
        Some(Conditional::TaggedView)
    );
    assert_eq!(
        at("PATCH", "/api/agents/{agent_id}"),
        Some(Conditional::TaggedWrite)
    );
    assert_eq!(
        at("DELETE", "/api/agents/{agent_id}"),
        Some(Conditional::Write)
    );
    assert_eq!(
        at("PATCH", "/api/auth/organizations/members/{membership_id}"),
        Some(Conditional::None)
    );
}

#[test]
fn every_operation_is_documented_with_real_permissions() {
    let mut named = 0;
    for op in operations() {
        assert!(
            !op.summary.is_empty() && op.summary.trim() == op.summary,
            "{op:?} has no summary"
        );
        assert!(
            op.description.len() > op.summary.len(),
            "{op:?} has no description (or one shorter than its summary)"
        );
        for needed in op.description.split("Needs `").skip(1) {
            let name = needed.split('`').next().unwrap_or_default();
            assert!(
                Permission::ALL.iter().any(|p| p.name() == name),
                "{op:?} names the unknown permission {name}"
            );
            named += 1;
        }
    }
    assert!(named > 50, "{named}");
}

/// The `## Operations` table of `http/README.md`, generated from the declarations.
fn readme_table() -> String {
    let mut table = String::from(
        "| method | path | operation | credentials | what it does |\n|---|---|---|---|---|\n",
    );
    for op in operations() {
        let credentials = match op.auth {
            Auth::Organization => "organization",
            Auth::None => "none",
            Auth::Invitee => "bearer JWT",
            Auth::Provider => "provider signature",
        };
        table.push_str(&format!(
            "| {} | `{}` | `{}` | {credentials} | {} |\n",
            op.method, op.template, op.id, op.summary
        ));
    }
    table
}

/// `http/README.md` shows the table the declarations generate. With `VOICEPLANE_BLESS=1` the
/// test writes it there instead.
#[test]
fn the_readme_table_is_generated_from_the_declarations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find("| method | path | operation |")
        .expect("http/README.md has an operations table");
    let end = readme[start..]
        .find("\n\n")
        .map_or(readme.len(), |n| start + n + 1);
    let table = readme_table();
    if std::env::var_os("VOICEPLANE_BLESS").is_some() {
        let blessed = format!("{}{table}{}", &readme[..start], &readme[end..]);
        std::fs::write(path, blessed).unwrap();
        return;
    }
    assert!(
        readme[start..end] == table,
        "http/README.md's operations table differs from the declarations; run \
         `VOICEPLANE_BLESS=1 cargo test -p voiceplane-http the_readme_table` to regenerate it"
    );
}

#[test]
fn path_params_are_captured() {
    assert_eq!(
        get("/api/calls/call_abc123"),
        ok("call_view", &["call_abc123"])
    );
    assert_eq!(
        resolved(Method::PATCH, "/api/calls/call_x"),
        ok("call_update", &["call_x"])
    );
    assert_eq!(
        get("/api/knowledge-base/doc_1"),
        ok("document_view", &["doc_1"])
    );
    assert_eq!(
        resolved(Method::POST, "/api/webhooks/wh_1/deliveries/dlv_2/retry"),
        ok("delivery_retry", &["wh_1", "dlv_2"])
    );
}

#[test]
fn literal_segments_win_over_parameters_and_methods_choose() {
    assert_eq!(get("/healthz"), ok("health_live", &[]));
    assert_eq!(resolved(Method::POST, "/api/calls"), ok("call_create", &[]));
    assert_eq!(get("/api/calls"), ok("call_list", &[]));
    // A literal segment beside `{call_sid}`: stats is not a call.
    assert_eq!(get("/api/calls/stats"), ok("call_stats", &[]));
    // A literal segment beside `{documentation_id}`: search is not a document.
    assert_eq!(
        resolved(Method::POST, "/api/knowledge-base/search"),
        ok("document_search", &[])
    );
    assert_eq!(
        resolved(
            Method::POST,
            "/api/knowledge-base/doc_0123456789ab/reprocess"
        ),
        ok("document_reprocess", &["doc_0123456789ab"])
    );
    assert_eq!(
        get("/api/auth/organizations/members"),
        ok("member_list", &[])
    );
}

#[test]
fn head_resolves_to_the_get_route() {
    assert_eq!(resolved(Method::HEAD, "/api/tools"), ok("tool_list", &[]));
    assert_eq!(
        resolved(Method::HEAD, "/api/agents/agent_1"),
        ok("agent_view", &["agent_1"])
    );
    assert_eq!(
        resolved(Method::HEAD, "/api/knowledge-base/doc_1/reprocess"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["POST"]
        })
    );
}

#[test]
fn unknown_paths_are_not_found() {
    for path in [
        "",
        "/",
        "/x",
        "/api",
        "/api/",
        "/api/calls/",
        "/api/calls//",
        "/api/calls/call_1/extra",
        "/api//calls",
        "/healthz/",
        "/API/calls",
        "api/calls",
    ] {
        assert_eq!(get(path), Err(RouteError::NotFound), "{path:?}");
    }
}

#[test]
fn wrong_method_lists_the_allowed_ones() {
    assert_eq!(
        resolved(Method::DELETE, "/api/calls"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["POST", "GET", "HEAD"]
        })
    );
    assert_eq!(
        resolved(Method::PUT, "/api/calls/call_1"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["GET", "HEAD", "PATCH", "DELETE"]
        })
    );
    assert_eq!(
        resolved(Method::POST, "/healthz"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["GET", "HEAD"]
        })
    );
}

/// The tree answers as the table read in order would, for every template filled with plain
/// values, with values equal to the static segments of its siblings (`/api/calls/dial` is both
/// a template and a call sid), empty and doubled segments, trailing slashes and every method.
#[test]
fn the_route_tree_agrees_with_the_table_in_order() {
    let statics: Vec<&str> = operations()
        .flat_map(|op| op.template.split('/'))
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let mut paths = vec![
        String::new(),
        "/".to_owned(),
        "//".to_owned(),
        "/api".to_owned(),
        "/api/".to_owned(),
        "/wp-login.php".to_owned(),
        "/api/nope".to_owned(),
        "/healthz/x".to_owned(),
    ];
    for op in operations() {
        let filled = sample_path(op.template);
        paths.push(format!("{filled}/"));
        paths.push(filled.replace("/api/", "/api//"));
        paths.push(filled.clone());
        paths.push(format!("{filled}/extra"));
        let segments: Vec<&str> = op.template.split('/').collect();
        for (i, seg) in segments.iter().enumerate() {
            if !seg.starts_with('{') {
                continue;
            }
            for value in statics.iter().chain(&["", "x y", "%7B"]) {
                let mut path = segments.clone();
                path[i] = value;
                paths.push(path.join("/"));
            }
        }
    }
    let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    for path in &paths {
        for method in methods {
            let method = Method::from_bytes(method.as_bytes()).unwrap();
            let tree = resolve(&method, path).map(|(op, c)| (op.id, c));
            let table = scan(&method, path).map(|(op, c)| (op.id, c));
            assert_eq!(tree, table, "{method} {path:?}");
        }
    }
}
