//! provider_one: search — request and mapping.

use serde_json::json;
use voiceplane_clients::{ProviderOne, ProviderOneSettings};
use voiceplane_core::Error;
use voiceplane_core::voice::{Voice, VoicePage, VoiceProvider, VoiceSearch};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{KEY_ONE, http, only_request, provider_one};

#[tokio::test]
async fn search_sends_the_contract_and_maps_voices() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/voices"))
        .and(header(
            "authorization",
            format!("Bearer {KEY_ONE}").as_str(),
        ))
        .and(header("cartesia-version", "2024-06-10"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {"id": "c1", "name": "Barbershop Man", "description": "warm and friendly",
                 "language": "en", "gender": "masculine", "is_public": true,
                 "preview_file_url": "https://files.example/c1.wav"},
                {"id": "c2", "name": "Lady", "gender": "feminine", "language": "en"},
                {"id": "c3", "name": "Robot", "gender": "gender_neutral", "description": "",
                 "preview_file_url": null}
            ],
            "has_more": true
        })))
        .expect(1)
        .mount(&server)
        .await;
    let page = provider_one(&server.uri())
        .search(&VoiceSearch {
            query: Some("warm man".into()),
            language: Some("en".into()),
            gender: Some("male".into()),
            cursor: Some("c0".into()),
            page_size: 3,
        })
        .await
        .unwrap();
    let req = only_request(&server).await;
    assert_eq!(
        req.url.query(),
        Some(
            "limit=3&q=warm+man&gender=masculine&language=en&starting_after=c0\
             &expand%5B%5D=preview_file_url"
        )
    );
    let pairs: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
    assert!(pairs.contains(&("expand[]".into(), "preview_file_url".into())));
    assert!(req.headers.get("xi-api-key").is_none());
    assert_eq!(
        page,
        VoicePage {
            voices: vec![
                Voice {
                    id: "c1".into(),
                    name: "Barbershop Man".into(),
                    description: Some("warm and friendly".into()),
                    gender: Some("male".into()),
                    language: Some("en".into()),
                    // Their preview file needs our key: never handed out.
                    preview_url: None,
                    has_preview: true,
                },
                Voice {
                    id: "c2".into(),
                    name: "Lady".into(),
                    description: None,
                    gender: Some("female".into()),
                    language: Some("en".into()),
                    preview_url: None,
                    has_preview: false,
                },
                Voice {
                    id: "c3".into(),
                    name: "Robot".into(),
                    description: None,
                    gender: Some("neutral".into()),
                    language: None,
                    preview_url: None,
                    has_preview: false,
                },
            ],
            has_more: true,
            next_cursor: Some("c3".into()),
        }
    );
}

#[tokio::test]
async fn female_maps_to_feminine_and_the_last_page_has_no_cursor() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/voices"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"id": "c9", "name": "Last"}], "has_more": false
        })))
        .mount(&server)
        .await;
    let page = provider_one(&server.uri())
        .search(&VoiceSearch {
            gender: Some("female".into()),
            page_size: 20,
            ..VoiceSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        only_request(&server).await.url.query(),
        Some("limit=20&gender=feminine&expand%5B%5D=preview_file_url")
    );
    assert!(!page.has_more);
    assert_eq!(page.next_cursor, None);
    assert_eq!(page.voices.len(), 1);
}

#[tokio::test]
async fn the_configured_version_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("cartesia-version", "2025-04-16"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .expect(1)
        .mount(&server)
        .await;
    let p1 = ProviderOne::new(
        http(),
        ProviderOneSettings {
            base_url: server.uri(),
            api_key: Some(KEY_ONE.into()),
            version: "2025-04-16".into(),
        },
    )
    .unwrap();
    let page = p1
        .search(&VoiceSearch {
            page_size: 1,
            ..VoiceSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(page.voices, vec![]);

    // An empty version falls back to the default.
    let server = MockServer::start().await;
    Mock::given(header("cartesia-version", "2024-06-10"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .expect(1)
        .mount(&server)
        .await;
    let p1 = ProviderOne::new(
        http(),
        ProviderOneSettings {
            base_url: server.uri(),
            api_key: Some(KEY_ONE.into()),
            version: " ".into(),
        },
    )
    .unwrap();
    let search = VoiceSearch {
        page_size: 1,
        ..VoiceSearch::default()
    };
    assert!(p1.search(&search).await.is_ok());
}

#[tokio::test]
async fn without_a_key_nothing_is_sent_and_it_is_503() {
    let server = MockServer::start().await;
    let p1 = ProviderOne::new(
        http(),
        ProviderOneSettings {
            base_url: server.uri(),
            api_key: None,
            version: "2024-06-10".into(),
        },
    )
    .unwrap();
    assert!(!format!("{p1:?}").contains(KEY_ONE));
    let err = p1
        .search(&VoiceSearch {
            page_size: 1,
            ..VoiceSearch::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::Unavailable(
            "provider_one is not configured: set providers.provider_one.api_key".into()
        )
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
}
