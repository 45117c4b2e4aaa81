//! provider_two: search, shared library, add — requests and mapping.

use serde_json::json;
use voiceplane_clients::{ProviderTwo, ProviderTwoSettings};
use voiceplane_core::Error;
use voiceplane_core::voice::{
    LibraryAdd, LibraryQuery, LibraryVoice, Voice, VoiceLibrary, VoicePage, VoiceProvider,
    VoiceSearch,
};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{KEY_TWO, http, library_query, only_request, provider_two};

#[tokio::test]
async fn search_sends_the_contract_and_maps_voices() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/voices"))
        .and(header("xi-api-key", KEY_TWO))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [
                {"voice_id": "v1", "name": "Rachel", "description": "calm narrator",
                 "labels": {"gender": "female", "language": "en", "accent": "american"},
                 "preview_url": "https://cdn.example/v1.mp3", "category": "premade"},
                {"voice_id": "v2", "name": "Bare", "labels": {}, "preview_url": null}
            ],
            "has_more": true,
            "next_page_token": "tok-2"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let page = provider_two(&server.uri())
        .search(&VoiceSearch {
            query: Some("calm voice".into()),
            language: None,
            gender: None,
            cursor: Some("tok-1".into()),
            page_size: 2,
        })
        .await
        .unwrap();
    let req = only_request(&server).await;
    assert_eq!(
        req.url.query(),
        Some("search=calm+voice&page_size=2&next_page_token=tok-1")
    );
    assert_eq!(req.headers["xi-api-key"], KEY_TWO);
    assert!(req.headers.get("authorization").is_none());
    assert_eq!(
        page,
        VoicePage {
            voices: vec![
                Voice {
                    id: "v1".into(),
                    name: "Rachel".into(),
                    description: Some("calm narrator".into()),
                    gender: Some("female".into()),
                    language: Some("en".into()),
                    preview_url: Some("https://cdn.example/v1.mp3".into()),
                    has_preview: true,
                },
                Voice {
                    id: "v2".into(),
                    name: "Bare".into(),
                    description: None,
                    gender: None,
                    language: None,
                    preview_url: None,
                    has_preview: false,
                },
            ],
            has_more: true,
            next_cursor: Some("tok-2".into()),
        }
    );
}

#[tokio::test]
async fn search_without_optional_parameters_and_last_page() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/voices"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [], "has_more": false, "next_page_token": "ignored"
        })))
        .mount(&server)
        .await;
    let page = provider_two(&server.uri())
        .search(&VoiceSearch {
            page_size: 20,
            ..VoiceSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        only_request(&server).await.url.query(),
        Some("page_size=20")
    );
    assert_eq!(page.voices, vec![]);
    assert!(!page.has_more);
    assert_eq!(page.next_cursor, None);
}

#[tokio::test]
async fn search_filters_language_and_gender_on_labels() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/voices"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [
                {"voice_id": "a", "name": "A", "labels": {"gender": "female", "language": "en-US"}},
                {"voice_id": "b", "name": "B", "labels": {"gender": "male", "language": "en"}},
                {"voice_id": "c", "name": "C", "labels": {"gender": "female", "language": "es"}},
                {"voice_id": "d", "name": "D"}
            ],
            "has_more": false
        })))
        .mount(&server)
        .await;
    let page = provider_two(&server.uri())
        .search(&VoiceSearch {
            language: Some("en".into()),
            gender: Some("Female".into()),
            page_size: 20,
            ..VoiceSearch::default()
        })
        .await
        .unwrap();
    // The upstream search has no such filters: they are not sent.
    assert_eq!(
        only_request(&server).await.url.query(),
        Some("page_size=20")
    );
    let ids: Vec<&str> = page.voices.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids, ["a"]);
}

#[tokio::test]
async fn library_passes_every_filter_and_pages_by_index() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/shared-voices"))
        .and(header("xi-api-key", KEY_TWO))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [
                {"public_owner_id": "owner-1", "voice_id": "sv1", "name": "Deep",
                 "preview_url": "https://cdn.example/sv1.mp3", "accent": "british",
                 "cloned_by_count": 12},
                {"public_owner_id": "owner-2", "voice_id": "sv2", "name": "Plain"}
            ],
            "has_more": true,
            "last_sort_id": "x"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let page = provider_two(&server.uri())
        .list(&LibraryQuery {
            query: Some("deep".into()),
            language: Some("en".into()),
            gender: Some("male".into()),
            age: Some("middle_aged".into()),
            accent: Some("british".into()),
            category: Some("professional".into()),
            use_cases: vec!["narrative_story".into(), "news".into()],
            sort: "cloned_by_count".into(),
            page: 2,
            page_size: 10,
        })
        .await
        .unwrap();
    let req = only_request(&server).await;
    assert_eq!(
        req.url.query(),
        Some(
            "page=2&page_size=10&search=deep&language=en&gender=male&age=middle_aged\
             &accent=british&category=professional&use_cases=narrative_story&use_cases=news\
             &sort=cloned_by_count"
        )
    );
    assert_eq!(
        page,
        VoicePage {
            voices: vec![
                LibraryVoice {
                    id: "sv1".into(),
                    public_owner_id: "owner-1".into(),
                    name: "Deep".into(),
                    preview_url: Some("https://cdn.example/sv1.mp3".into()),
                },
                LibraryVoice {
                    id: "sv2".into(),
                    public_owner_id: "owner-2".into(),
                    name: "Plain".into(),
                    preview_url: None,
                },
            ],
            has_more: true,
            next_cursor: Some("3".into()),
        }
    );
}

#[tokio::test]
async fn library_defaults_and_last_page() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/shared-voices"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"voices": [], "has_more": false})),
        )
        .mount(&server)
        .await;
    let page = provider_two(&server.uri())
        .list(&library_query())
        .await
        .unwrap();
    assert_eq!(
        only_request(&server).await.url.query(),
        Some("page=0&page_size=30&sort=trending")
    );
    assert_eq!(
        page,
        VoicePage {
            voices: vec![],
            has_more: false,
            next_cursor: None
        }
    );
}

#[tokio::test]
async fn add_posts_the_new_name_to_the_owner_and_voice_path() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/voices/add/owner-1/sv1"))
        .and(header("xi-api-key", KEY_TWO))
        .and(header("content-type", "application/json"))
        .and(body_json(json!({"new_name": "Front desk voice"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"voice_id": "added-9"})))
        .expect(1)
        .mount(&server)
        .await;
    let added = provider_two(&server.uri())
        .add(&LibraryAdd {
            public_owner_id: "owner-1".into(),
            voice_id: "sv1".into(),
            name: "Front desk voice".into(),
        })
        .await
        .unwrap();
    assert_eq!(added.voice_id, "added-9");
    let req = only_request(&server).await;
    assert_eq!(req.url.query(), None);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&req.body).unwrap(),
        json!({"new_name": "Front desk voice"})
    );
}

#[tokio::test]
async fn add_of_an_unknown_shared_voice_is_404() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_string(crate::UPSTREAM_BODY))
        .mount(&server)
        .await;
    let err = provider_two(&server.uri())
        .add(&LibraryAdd {
            public_owner_id: "o".into(),
            voice_id: "v".into(),
            name: "n".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::NotFound(
            "provider_two has no shared voice with this public_owner_id and voice_id".into()
        )
    );
}

#[tokio::test]
async fn a_base_url_with_a_path_prefix_is_kept() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/proxy/elevenlabs/v2/voices"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"voices": []})))
        .expect(1)
        .mount(&server)
        .await;
    let page = provider_two(&format!("{}/proxy/elevenlabs/", server.uri()))
        .search(&VoiceSearch {
            page_size: 5,
            ..VoiceSearch::default()
        })
        .await
        .unwrap();
    assert!(!page.has_more);
}

#[tokio::test]
async fn without_a_key_nothing_is_sent_and_it_is_503() {
    let server = MockServer::start().await;
    for key in [None, Some(String::new()), Some("  ".to_owned())] {
        let p2 = ProviderTwo::new(
            http(),
            ProviderTwoSettings {
                base_url: server.uri(),
                api_key: key,
            },
        )
        .unwrap();
        let expected = Error::Unavailable(
            "provider_two is not configured: set providers.provider_two.api_key".into(),
        );
        let search = p2
            .search(&VoiceSearch {
                page_size: 1,
                ..VoiceSearch::default()
            })
            .await;
        assert_eq!(search.unwrap_err(), expected);
        assert_eq!(p2.list(&library_query()).await.unwrap_err(), expected);
        let add = p2
            .add(&LibraryAdd {
                public_owner_id: "o".into(),
                voice_id: "v".into(),
                name: "n".into(),
            })
            .await;
        assert_eq!(add.unwrap_err(), expected);
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
}

#[tokio::test]
async fn settings_never_show_the_key() {
    let settings = ProviderTwoSettings {
        base_url: "https://api.example".into(),
        api_key: Some(KEY_TWO.into()),
    };
    assert!(!format!("{settings:?}").contains(KEY_TWO));
    let p2 = ProviderTwo::new(http(), settings).unwrap();
    assert!(!format!("{p2:?}").contains(KEY_TWO));
    let bad = ProviderTwo::new(
        http(),
        ProviderTwoSettings {
            base_url: "https://api.example".into(),
            api_key: Some("line\nbreak-SECRET".into()),
        },
    )
    .unwrap_err();
    assert!(!bad.to_string().contains("SECRET"));
    assert!(
        bad.to_string()
            .starts_with("providers.provider_two.api_key: ")
    );
}
