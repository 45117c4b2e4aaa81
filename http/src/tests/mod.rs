//! Request-level tests of [`Api`] on the real repository: a [`SeaRepository`] on a migrated
//! in-memory SQLite database, seeded through the real [`Service`]. They go through the public
//! surface only ([`Api::handle`], [`serve`](crate::serve), the public constants), so the
//! adapter's internals can change under them.
//!
//! This file holds the shared fixture and request helpers; the tests live in the modules by
//! concern.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::{BootstrapInput, Service};
use voiceplane_storage::{DatabaseOptions, SeaRepository};

use crate::{Api, ResponseBody};

mod auth;
mod bodies;
mod envelopes;
mod request_id;
mod routing;
mod server;

/// An organization bootstrapped on its own in-memory database, and the API over it.
struct Fixture {
    api: Api,
    /// The same repository the API uses, for what only the database can do (closing the
    /// pool, corrupting a row).
    repo: SeaRepository,
    /// The bootstrapped organization's id.
    org: String,
    /// The secret of the organization's bootstrap admin key.
    admin_key: String,
    /// The admin key's actor, for seeding through the service.
    admin: Actor,
}

impl Fixture {
    /// A fresh database (storage keeps `sqlite::memory:` on one connection, so every query
    /// sees it), migrated, with one organization and its admin key.
    async fn new() -> Self {
        let repo = SeaRepository::connect(&DatabaseOptions::new("sqlite::memory:"))
            .await
            .expect("in-memory SQLite opens");
        repo.migrate().await.expect("migrations apply");
        let service = Arc::new(Service::new(Arc::new(repo.clone())));
        let boot = service
            .organization_bootstrap(BootstrapInput {
                org_name: "Acme".to_owned(),
                admin_email: "admin@example.com".to_owned(),
                admin_name: Some("Admin".to_owned()),
            })
            .await
            .expect("bootstrap succeeds");
        let admin = authenticate(&service, &boot.organization_id, &boot.api_key).await;
        Self {
            api: Api::new(service),
            repo,
            org: boot.organization_id,
            admin_key: boot.api_key,
            admin,
        }
    }

    fn service(&self) -> &Service {
        self.api.service()
    }

    /// A request builder with the admin key and the organization set.
    fn authed(&self, method: Method, uri: &str) -> http::request::Builder {
        self.with_key(&self.admin_key, method, uri)
    }

    /// A request builder with `key` and the organization set.
    fn with_key(&self, key: &str, method: Method, uri: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(uri)
            .header("x-api-key", key)
            .header("x-organization-id", &self.org)
    }

    /// The secret of a new key of the organization with `role` (`"user"`, `"agent_manager"`…).
    async fn key_with_role(&self, role: &str) -> String {
        let input = from_json(json!({"name": format!("{role} key"), "role": role}));
        self.service()
            .api_key_create(&self.admin, input)
            .await
            .expect("the admin creates the key")
            .api_key
    }
}

async fn authenticate(service: &Service, org: &str, key: &str) -> Actor {
    service
        .authenticate(&Credentials {
            api_key: Some(key.to_owned()),
            bearer: None,
            organization_id: Some(org.to_owned()),
        })
        .await
        .expect("the key authenticates")
}

/// A service input from its JSON form, as a client would send it.
fn from_json<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the input is well-formed")
}

fn empty(b: http::request::Builder) -> Request<Full<Bytes>> {
    b.body(Full::default()).unwrap()
}

fn with_json(b: http::request::Builder, body: &str) -> Request<Full<Bytes>> {
    b.header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

/// Sends `req` and returns the status, the headers and the JSON body, which every response
/// here has.
async fn send(api: &Api, req: Request<Full<Bytes>>) -> (StatusCode, http::HeaderMap, Value) {
    let res: Response<ResponseBody> = api.handle(req).await;
    let (parts, body) = res.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    assert_eq!(
        parts.headers[header::CONTENT_TYPE],
        "application/json",
        "every response here is JSON"
    );
    let value = serde_json::from_slice(&bytes).unwrap();
    (parts.status, parts.headers, value)
}
