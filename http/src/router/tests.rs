//! The route table against itself, the `Service` and `http/README.md`; resolution.

use super::*;

fn get(path: &str) -> Result<Route, RouteError> {
    resolve(&Method::GET, path)
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

#[test]
fn every_route_resolves_to_itself() {
    for &(method, template) in ROUTES {
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let route = resolve(&m, &sample_path(template))
            .unwrap_or_else(|e| panic!("{method} {template}: {e:?}"));
        assert_eq!(route.definition(), (method, template));
    }
}

#[test]
fn table_has_no_duplicates_and_params_match_templates() {
    assert_eq!(ROUTES.len(), ROUTE_PARAMS.len());
    for (i, &(method, template)) in ROUTES.iter().enumerate() {
        assert!(template.starts_with('/'), "{template}");
        let placeholders: Vec<&str> = template
            .split('/')
            .filter(|s| s.starts_with('{'))
            .map(|s| &s[1..s.len() - 1])
            .collect();
        assert_eq!(placeholders, ROUTE_PARAMS[i], "{method} {template}");
        for &(m2, t2) in &ROUTES[i + 1..] {
            assert!(
                (method, template) != (m2, t2),
                "duplicate {method} {template}"
            );
        }
    }
}

/// The names of the `pub fn`s of `Service`, read from its source files.
fn service_methods() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/src/service");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in source.lines() {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("pub async fn ")
                .or_else(|| line.strip_prefix("pub fn "));
            if let Some(rest) = rest {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn every_operation_id_is_a_service_method() {
    let methods = service_methods();
    assert!(methods.iter().any(|m| m == "agent_view"), "{methods:?}");
    for op in OPERATIONS {
        let is_method = methods.iter().any(|m| m == op.id);
        if ADAPTER_OPERATIONS.contains(&op.id) {
            assert!(!is_method, "{} is a Service method now: call it", op.id);
        } else {
            assert!(is_method, "operation {} names no Service method", op.id);
        }
    }
}

#[test]
fn operations_follow_the_route_table() {
    assert_eq!(OPERATIONS.len(), ROUTES.len());
    for (op, &(method, template)) in OPERATIONS.iter().zip(ROUTES) {
        assert_eq!((op.method, op.template), (method, template));
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let route = resolve(&m, &sample_path(template)).unwrap();
        assert_eq!(route.operation_id(), op.id);
        assert!(
            !op.summary.is_empty() && !op.summary.starts_with(' '),
            "{}",
            op.id
        );
    }
}

/// `http/README.md` lists every operation, one row each, as the table declares it.
#[test]
fn the_readme_lists_every_operation() {
    let readme = include_str!("../../README.md");
    let rows: Vec<String> = OPERATIONS
        .iter()
        .map(|op| format!("| {} | `{}` | `{}` |", op.method, op.template, op.id))
        .collect();
    for row in &rows {
        assert!(
            readme.contains(row.as_str()),
            "http/README.md lacks the row {row}"
        );
    }
    let listed = readme
        .lines()
        .filter(|l| {
            l.starts_with("| GET |")
                || l.starts_with("| POST |")
                || l.starts_with("| PUT |")
                || l.starts_with("| PATCH |")
                || l.starts_with("| DELETE |")
        })
        .count();
    assert_eq!(
        listed,
        rows.len(),
        "http/README.md lists operations that do not exist"
    );
}

#[test]
fn path_params_are_captured() {
    assert_eq!(
        get("/api/calls/call_abc123"),
        Ok(Route::CallView {
            call_sid: "call_abc123".into()
        })
    );
    assert_eq!(
        resolve(&Method::PATCH, "/api/calls/call_x"),
        Ok(Route::CallUpdate {
            call_sid: "call_x".into()
        })
    );
    assert_eq!(
        get("/api/agents/agent_0123456789abcdef"),
        Ok(Route::AgentView {
            agent_id: "agent_0123456789abcdef".into()
        })
    );
    assert_eq!(
        get("/api/phone-numbers/phon_1"),
        Ok(Route::PhoneNumberView {
            phone_number_id: "phon_1".into()
        })
    );
    assert_eq!(
        get("/api/knowledge-base/doc_1"),
        Ok(Route::DocumentView {
            documentation_id: "doc_1".into()
        })
    );
}

#[test]
fn collections_resolve_by_method() {
    assert_eq!(get("/healthz"), Ok(Route::Healthz));
    assert_eq!(get("/readyz"), Ok(Route::Readyz));
    assert_eq!(get("/api/calls"), Ok(Route::CallList));
    assert_eq!(resolve(&Method::POST, "/api/calls"), Ok(Route::CallCreate));
    assert_eq!(get("/api/api-keys"), Ok(Route::ApiKeyList));
    assert_eq!(
        resolve(&Method::POST, "/api/api-keys"),
        Ok(Route::ApiKeyCreate)
    );
    assert_eq!(get("/api/tools"), Ok(Route::ToolList));
    assert_eq!(resolve(&Method::POST, "/api/tools"), Ok(Route::ToolCreate));
    assert_eq!(
        resolve(&Method::POST, "/api/agents"),
        Ok(Route::AgentCreate)
    );
    assert_eq!(
        resolve(&Method::POST, "/api/phone-numbers"),
        Ok(Route::PhoneNumberCreate)
    );
    assert_eq!(
        resolve(&Method::POST, "/api/knowledge-base"),
        Ok(Route::DocumentCreate)
    );
    // A literal segment beside `{call_sid}`: stats is not a call.
    assert_eq!(get("/api/calls/stats"), Ok(Route::CallStats));
    assert_eq!(
        get("/api/calls/call_0123456789abcdef01234567"),
        Ok(Route::CallView {
            call_sid: "call_0123456789abcdef01234567".into()
        })
    );
    assert_eq!(
        resolve(&Method::POST, "/api/calls/call_1/messages"),
        Ok(Route::CallMessageAppend {
            call_sid: "call_1".into()
        })
    );
    // A literal segment beside `{documentation_id}`: search is not a document.
    assert_eq!(
        resolve(&Method::POST, "/api/knowledge-base/search"),
        Ok(Route::DocumentSearch)
    );
    assert_eq!(
        resolve(
            &Method::POST,
            "/api/knowledge-base/doc_0123456789ab/reprocess"
        ),
        Ok(Route::DocumentReprocess {
            documentation_id: "doc_0123456789ab".into()
        })
    );
    assert_eq!(
        get("/api/auth/organizations/invitations"),
        Ok(Route::InvitationList)
    );
    assert_eq!(
        resolve(&Method::POST, "/api/auth/organizations/invitations"),
        Ok(Route::InvitationCreate)
    );
    assert_eq!(
        get("/api/auth/organizations/members"),
        Ok(Route::MemberList)
    );
}

#[test]
fn head_resolves_to_the_get_route() {
    assert_eq!(resolve(&Method::HEAD, "/api/tools"), Ok(Route::ToolList));
    assert_eq!(
        resolve(&Method::HEAD, "/api/agents/agent_1"),
        Ok(Route::AgentView {
            agent_id: "agent_1".into()
        })
    );
    assert_eq!(
        resolve(&Method::HEAD, "/api/knowledge-base/doc_1/reprocess"),
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
        resolve(&Method::DELETE, "/api/calls"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["POST", "GET", "HEAD"]
        })
    );
    assert_eq!(
        resolve(&Method::PUT, "/api/calls/call_1"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["GET", "HEAD", "PATCH", "DELETE"]
        })
    );
    assert_eq!(
        resolve(&Method::POST, "/healthz"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["GET", "HEAD"]
        })
    );
    assert_eq!(
        resolve(&Method::PUT, "/api/agents"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["POST", "GET", "HEAD"]
        })
    );
    assert_eq!(
        resolve(&Method::PUT, "/api/tools/tool_1"),
        Err(RouteError::MethodNotAllowed {
            allow: vec!["GET", "HEAD", "PATCH", "DELETE"]
        })
    );
}
