//! provider_two: voice search, the shared voice library and adding a shared voice, with the
//! header `xi-api-key: <api_key>`.
//!
//! | ours | theirs |
//! |---|---|
//! | search `query`, `page_size`, `cursor` | `GET /v2/voices?search=&page_size=&next_page_token=` |
//! | search `language`, `gender` | not sent (the endpoint has no such filters); applied to the page's `labels` |
//! | `Voice.id` | `voice_id` |
//! | `Voice.gender`, `.language` | `labels.gender`, `labels.language` |
//! | `Voice.preview_url`, `.has_preview` | `preview_url`, whether it is present |
//! | search `next_cursor` | `next_page_token` (when `has_more`) |
//! | library `query`, `page`, `page_size`, `sort`, filters | `GET /v1/shared-voices?search=&page=&page_size=&sort=&language=&gender=&age=&accent=&category=&use_cases=…` |
//! | library `next_cursor` | `page + 1` as a string (when `has_more`) |
//! | add `{public_owner_id, voice_id, name}` | `POST /v1/voices/add/{public_owner_id}/{voice_id}` `{"new_name": name}` → `{voice_id}` |

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde::Deserialize;
use voiceplane_core::Result;
use voiceplane_core::voice::{
    AddedVoice, LibraryAdd, LibraryQuery, LibraryVoice, Voice, VoiceLibrary, VoicePage,
    VoiceProvider, VoiceProviderName, VoiceSearch,
};

use crate::{BuildError, Call, HttpClient, base_url, endpoint, non_empty};

const PROVIDER: &str = "provider_two";

const SEARCH: Call = Call {
    provider: PROVIDER,
    what: "the voice search",
    invalid: Some("the search parameters (query, page_size or cursor)"),
    not_found: None,
    check: "providers.provider_two.base_url",
    refused: crate::API_KEY,
};
const LIBRARY: Call = Call {
    provider: PROVIDER,
    what: "the shared library listing",
    invalid: Some("the shared library filters"),
    not_found: None,
    check: "providers.provider_two.base_url",
    refused: crate::API_KEY,
};
const ADD: Call = Call {
    provider: PROVIDER,
    what: "adding the shared voice",
    invalid: Some("adding the shared voice; check public_owner_id, voice_id and name"),
    not_found: Some("provider_two has no shared voice with this public_owner_id and voice_id"),
    check: "providers.provider_two.base_url",
    refused: crate::API_KEY,
};

/// Configuration of [`ProviderTwo`].
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderTwoSettings {
    /// `providers.provider_two.base_url`, e.g. `https://api.elevenlabs.io`.
    pub base_url: String,
    /// `providers.provider_two.api_key`; without it every call is a 503.
    pub api_key: Option<String>,
}

impl fmt::Debug for ProviderTwoSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderTwoSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

/// provider_two over HTTP: [`VoiceProvider`] and [`VoiceLibrary`].
#[derive(Clone)]
pub struct ProviderTwo {
    http: HttpClient,
    base: Url,
    api_key: Option<HeaderValue>,
}

impl fmt::Debug for ProviderTwo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderTwo")
            .field("base_url", &self.base.as_str())
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

#[derive(Deserialize)]
struct SearchResponse {
    voices: Vec<SearchVoice>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct SearchVoice {
    voice_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    preview_url: Option<String>,
}

#[derive(Deserialize)]
struct LibraryResponse {
    voices: Vec<SharedVoice>,
    #[serde(default)]
    has_more: bool,
}

#[derive(Deserialize)]
struct SharedVoice {
    public_owner_id: String,
    voice_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    preview_url: Option<String>,
}

#[derive(Deserialize)]
struct AddResponse {
    voice_id: String,
}

/// A string label of a voice.
fn label(labels: Option<&BTreeMap<String, serde_json::Value>>, name: &str) -> Option<String> {
    labels?
        .get(name)?
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// Whether a voice labelled `value` passes the filter `wanted` (case-insensitive; a language
/// filter `en` also matches `en-US`). No filter passes everything; a filter never matches an
/// unlabelled voice.
fn passes(wanted: Option<&str>, value: Option<&str>) -> bool {
    let Some(wanted) = wanted else {
        return true;
    };
    let Some(value) = value else {
        return false;
    };
    let (wanted, value) = (wanted.to_ascii_lowercase(), value.to_ascii_lowercase());
    value == wanted
        || value
            .strip_prefix(&wanted)
            .is_some_and(|rest| rest.starts_with(['-', '_']))
}

impl ProviderTwo {
    /// provider_two at `settings.base_url` over `http`. Fails when the base URL is not an
    /// http(s) URL or the key cannot be sent in a header (the error names the key, never its
    /// value).
    pub fn new(http: HttpClient, settings: ProviderTwoSettings) -> Result<Self, BuildError> {
        let base = base_url("providers.provider_two.base_url", &settings.base_url)?;
        let api_key = non_empty(settings.api_key)
            .map(|key| {
                let mut value = HeaderValue::from_str(key.trim()).map_err(|_| {
                    BuildError::new(
                        "providers.provider_two.api_key: contains characters not allowed in an HTTP header",
                    )
                })?;
                value.set_sensitive(true);
                Ok::<_, BuildError>(value)
            })
            .transpose()?;
        Ok(Self {
            http,
            base,
            api_key,
        })
    }

    /// A request to `url` with our key, or the 503 when there is none.
    fn request(&self, method: reqwest::Method, url: Url) -> Result<reqwest::RequestBuilder> {
        let key = self
            .api_key
            .clone()
            .ok_or_else(|| VoiceProviderName::ProviderTwo.not_configured())?;
        Ok(self
            .http
            .client
            .request(method, url)
            .header("xi-api-key", key)
            .header(reqwest::header::ACCEPT, "application/json"))
    }
}

#[async_trait]
impl VoiceProvider for ProviderTwo {
    async fn search(&self, search: &VoiceSearch) -> Result<VoicePage<Voice>> {
        let mut url = endpoint(&self.base, &["v2", "voices"]);
        {
            let mut q = url.query_pairs_mut();
            if let Some(text) = &search.query {
                q.append_pair("search", text);
            }
            q.append_pair("page_size", &search.page_size.to_string());
            if let Some(token) = &search.cursor {
                q.append_pair("next_page_token", token);
            }
        }
        let request = self.request(reqwest::Method::GET, url)?;
        let answer: SearchResponse = SEARCH.json(&self.http, request).await?;
        let gender = search.gender.as_deref();
        let language = search.language.as_deref();
        let voices = answer
            .voices
            .into_iter()
            .map(|v| {
                let labels = v.labels.as_ref();
                let preview_url = non_empty(v.preview_url);
                Voice {
                    name: v.name.unwrap_or_default(),
                    description: non_empty(v.description),
                    gender: label(labels, "gender"),
                    language: label(labels, "language"),
                    has_preview: preview_url.is_some(),
                    preview_url,
                    id: v.voice_id,
                }
            })
            .filter(|v| {
                passes(gender, v.gender.as_deref()) && passes(language, v.language.as_deref())
            })
            .collect();
        let next_cursor = non_empty(answer.next_page_token).filter(|_| answer.has_more);
        Ok(VoicePage {
            voices,
            has_more: next_cursor.is_some(),
            next_cursor,
        })
    }
}

#[async_trait]
impl VoiceLibrary for ProviderTwo {
    async fn list(&self, query: &LibraryQuery) -> Result<VoicePage<LibraryVoice>> {
        let mut url = endpoint(&self.base, &["v1", "shared-voices"]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("page", &query.page.to_string());
            q.append_pair("page_size", &query.page_size.to_string());
            let filters = [
                ("search", &query.query),
                ("language", &query.language),
                ("gender", &query.gender),
                ("age", &query.age),
                ("accent", &query.accent),
                ("category", &query.category),
            ];
            for (name, value) in filters {
                if let Some(value) = value {
                    q.append_pair(name, value);
                }
            }
            for use_case in &query.use_cases {
                q.append_pair("use_cases", use_case);
            }
            q.append_pair("sort", &query.sort);
        }
        let request = self.request(reqwest::Method::GET, url)?;
        let answer: LibraryResponse = LIBRARY.json(&self.http, request).await?;
        let voices = answer
            .voices
            .into_iter()
            .map(|v| LibraryVoice {
                id: v.voice_id,
                public_owner_id: v.public_owner_id,
                name: v.name.unwrap_or_default(),
                preview_url: non_empty(v.preview_url),
            })
            .collect();
        let next_cursor = answer
            .has_more
            .then(|| query.page.saturating_add(1).to_string());
        Ok(VoicePage {
            voices,
            has_more: answer.has_more,
            next_cursor,
        })
    }

    async fn add(&self, voice: &LibraryAdd) -> Result<AddedVoice> {
        let url = endpoint(
            &self.base,
            &[
                "v1",
                "voices",
                "add",
                &voice.public_owner_id,
                &voice.voice_id,
            ],
        );
        let request = self
            .request(reqwest::Method::POST, url)?
            .json(&serde_json::json!({ "new_name": voice.name }));
        let answer: AddResponse = ADD.json(&self.http, request).await?;
        if answer.voice_id.trim().is_empty() {
            return Err(ADD.malformed(&"empty voice_id"));
        }
        Ok(AddedVoice {
            voice_id: answer.voice_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_filters() {
        assert!(passes(None, None));
        assert!(passes(Some("en"), Some("EN")));
        assert!(passes(Some("en"), Some("en-US")));
        assert!(!passes(Some("en"), Some("es")));
        assert!(!passes(Some("en"), Some("eng")));
        assert!(!passes(Some("female"), None));
    }
}
