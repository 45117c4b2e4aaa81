//! voiceplane as a library: the [`Service`] called directly, no HTTP, on an in-memory SQLite
//! database.
//!
//! ```sh
//! cargo run --example library
//! ```
//!
//! Every operation the HTTP API offers is a `Service` method named `<resource>_<verb>`
//! (`agent_create`, `agent_view`, `call_list`, …) that takes the authenticated [`Actor`]
//! first. Errors are [`voiceplane_core::Error`] variants (`InvalidInput`, `NotFound`,
//! `Forbidden`, …), the same ones the HTTP adapter turns into status codes.
//!
//! [`Actor`]: voiceplane_core::auth::Actor

use std::sync::Arc;

use voiceplane_core::auth::Credentials;
use voiceplane_core::model::NewAgent;
use voiceplane_core::{BootstrapInput, Service};
use voiceplane_storage::{DatabaseOptions, SeaRepository};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. A database and its schema. `sqlite::memory:` lives as long as the repository (it
    //    keeps exactly one connection, so every query sees the same database).
    let repo = SeaRepository::connect(&DatabaseOptions::new("sqlite::memory:")).await?;
    repo.migrate().await?;
    let service = Service::new(Arc::new(repo));

    // 2. An organization, its first admin and an admin API key (what `voiceplane bootstrap`
    //    prints). The secret is shown only here.
    let org = service
        .organization_bootstrap(BootstrapInput {
            org_name: "Acme".to_owned(),
            admin_email: "admin@acme.example".to_owned(),
            admin_name: Some("Ada Admin".to_owned()),
        })
        .await?;
    println!("organization {}", org.organization_id);
    println!("admin key    {} (secret {})", org.key_id, org.api_key);

    // 3. Authenticate with that key, as the HTTP adapter does with `X-API-Key` and
    //    `X-Organization-Id`. The actor carries the organization and the key's role.
    let actor = service
        .authenticate(&Credentials {
            api_key: Some(org.api_key.clone()),
            organization_id: Some(org.organization_id.clone()),
            ..Default::default()
        })
        .await?;
    println!("acting as    {} in {}", actor.role, actor.organization_id);

    // 4. Create an agent. Inputs are the same serde types as the HTTP bodies, so they can be
    //    built from JSON; the service validates them (try `"tts_provider": "nope"`).
    let input: NewAgent = serde_json::from_value(serde_json::json!({
        "agent_name": "Front desk",
        "language": "en-us",
        "stt_provider": "deepgram",
        "tts_provider": "provider_one",
        "tts_voice": "a0e99841",
        "llm_provider": "openai",
        "llm_model": "gpt-4o-mini",
        "system_prompt": "You answer the phone for Acme.",
        "speak_first": true
    }))?;
    let created = service.agent_create(&actor, input).await?;

    // 5. Read it back and print it as the API would.
    let agent = service.agent_view(&actor, &created.agent_id).await?;
    assert_eq!(agent, created);
    println!("{}", serde_json::to_string_pretty(&agent)?);

    // Another organization's id is indistinguishable from a missing one.
    let missing = service.agent_view(&actor, "agent_0000000000000000").await;
    println!(
        "unknown agent: {}",
        missing.err().map(|e| e.to_string()).unwrap_or_default()
    );
    Ok(())
}
