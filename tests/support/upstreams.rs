//! Fake upstreams on loopback and the real clients pointed at them: both voice providers
//! ([`voice_providers`], and [`mount_voice_catalogue`] for a server that answers every voice
//! operation), and the telephony validator ([`telephony`]) with twilio's account probe
//! ([`mount_twilio_account`]).

use std::sync::Arc;

use serde_json::json;
use voiceplane_clients::{
    HttpClient, HttpSettings, HttpTelephonyValidator, ProviderOne, ProviderOneSettings,
    ProviderTwo, ProviderTwoSettings, TelephonySettings,
};
use voiceplane_core::voice::VoiceProviders;
use wiremock::matchers::{basic_auth, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Both voice providers at `base` (one fake server answers both: their paths differ), with
/// the API keys `(provider_one, provider_two)` when given.
pub fn voice_providers(base: &str, keys: Option<(&str, &str)>) -> VoiceProviders {
    let http = HttpClient::new(HttpSettings::default()).expect("default HTTP settings are valid");
    let one = ProviderOne::new(
        http.clone(),
        ProviderOneSettings {
            base_url: base.to_owned(),
            api_key: keys.map(|(one, _)| one.to_owned()),
            version: "2024-06-10".to_owned(),
        },
    )
    .expect("provider_one settings are valid");
    let two = Arc::new(
        ProviderTwo::new(
            http,
            ProviderTwoSettings {
                base_url: base.to_owned(),
                api_key: keys.map(|(_, two)| two.to_owned()),
            },
        )
        .expect("provider_two settings are valid"),
    );
    VoiceProviders {
        provider_one: Some(Arc::new(one)),
        provider_two: Some(two.clone()),
        library: Some(two),
    }
}

/// The telephony validator, with twilio and telnyx both at `base`.
pub fn telephony(base: &str) -> Arc<HttpTelephonyValidator> {
    Arc::new(
        HttpTelephonyValidator::new(
            HttpClient::new(HttpSettings::default()).expect("default HTTP settings are valid"),
            TelephonySettings {
                twilio_base_url: base.to_owned(),
                telnyx_base_url: base.to_owned(),
            },
        )
        .expect("telephony settings are valid"),
    )
}

/// Twilio's account probe on `upstream`: the account `sid`, asked with its `token`, is
/// active.
pub async fn mount_twilio_account(upstream: &MockServer, sid: &str, token: &str) {
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{sid}.json")))
        .and(basic_auth(sid, token))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"sid": sid, "status": "active"})),
        )
        .mount(upstream)
        .await;
}

/// Twilio's numbers of the account `sid` on `upstream`: its search answers `numbers` (`(PN
/// sid, E.164)`, loose matches included, as Twilio's does) whatever it is asked, and each of
/// them can be updated (connected).
pub async fn mount_twilio_numbers(upstream: &MockServer, sid: &str, numbers: &[(&str, &str)]) {
    let listed: Vec<_> = numbers
        .iter()
        .map(|(pn, number)| json!({"sid": pn, "phone_number": number}))
        .collect();
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json"
        )))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"incoming_phone_numbers": listed})),
        )
        .mount(upstream)
        .await;
    for (pn, _) in numbers {
        Mock::given(method("POST"))
            .and(path(format!(
                "/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers/{pn}.json"
            )))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"sid": pn})))
            .mount(upstream)
            .await;
    }
}

/// Every voice operation on `upstream`, answering only requests that carry the API keys
/// `(provider_one, provider_two)` as each provider's contract says: provider_one's search
/// (failing with a 500 for the query `fail`), provider_two's search, its shared library, and
/// adding `own-1/sh-1` from it.
pub async fn mount_voice_catalogue(upstream: &MockServer, (key_one, key_two): (&str, &str)) {
    let bearer = format!("Bearer {key_one}");
    let one = || {
        Mock::given(method("GET"))
            .and(path("/voices"))
            .and(header("authorization", bearer.as_str()))
            .and(header("cartesia-version", "2024-06-10"))
    };
    let two = |verb: &str, at: &str| {
        Mock::given(method(verb))
            .and(path(at))
            .and(header("xi-api-key", key_two))
    };
    one()
        .and(query_param("q", "fail"))
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream broke"))
        .with_priority(1)
        .mount(upstream)
        .await;
    one()
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"id": "ca-1", "name": "Narrator", "gender": "masculine", "language": "en",
                      "preview_file_url": "https://files.example/ca-1.wav"}],
            "has_more": false
        })))
        .mount(upstream)
        .await;
    two("GET", "/v2/voices")
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [{"voice_id": "el-1", "name": "Rachel", "description": "calm",
                        "labels": {"gender": "female", "language": "en"},
                        "preview_url": "https://cdn.example/el-1.mp3"}],
            "has_more": true, "next_page_token": "page-2"
        })))
        .mount(upstream)
        .await;
    two("GET", "/v1/shared-voices")
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [{"public_owner_id": "own-1", "voice_id": "sh-1", "name": "Deep",
                        "preview_url": "https://cdn.example/sh-1.mp3", "accent": "british"}],
            "has_more": true
        })))
        .mount(upstream)
        .await;
    two("POST", "/v1/voices/add/own-1/sh-1")
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"voice_id": "acct-7"})))
        .mount(upstream)
        .await;
}
