//! # voiceplane-core
//!
//! The domain of voiceplane, the organization-scoped control plane for AI voice agents:
//! resources ([`model`]), identifiers ([`ids`]), roles and permissions ([`role`]), the error
//! type ([`Error`]), keyset pagination ([`page`]), credentials ([`auth`]), and the
//! [`Service`], which has one async method per operation named `<resource>_<verb>`.
//!
//! The service reaches the outside world only through traits: [`repo::Repository`] for the
//! database, [`time::Clock`] and [`ids::IdGenerator`]. This crate depends on no HTTP framework
//! and no SQL crate. The optional `openapi` feature derives JSON Schemas (schemars) of the
//! request and response types, from which `voiceplane-http` builds its OpenAPI document.
//!
//! ```no_run
//! # async fn demo(repo: std::sync::Arc<dyn voiceplane_core::repo::Repository>) -> voiceplane_core::Result<()> {
//! use voiceplane_core::{Service, auth::Credentials};
//! let service = Service::new(repo);
//! let actor = service
//!     .authenticate(&Credentials {
//!         api_key: Some("vpk_…".into()),
//!         organization_id: Some("org_…".into()),
//!         ..Default::default()
//!     })
//!     .await?;
//! let agent = service.agent_view(&actor, "agent_0123456789abcdef").await?;
//! println!("{}", agent.agent_name);
//! # Ok(()) }
//! ```

pub mod analysis;
pub mod auth;
pub mod blob;
pub mod cache;
pub mod crypto;
pub mod error;
pub mod idempotency;
pub mod ids;
pub mod jobs;
pub mod knowledge;
pub mod metrics;
pub mod model;
pub mod page;
pub mod precondition;
pub mod repo;
pub mod role;
pub mod runtime;
pub mod service;
pub mod signing;
pub mod telephony;
pub mod time;
pub mod validate;
pub mod voice;
pub mod webhooks;

pub use error::{Error, Result};
pub use service::{BootstrapInput, BootstrapOutput, Service};
