//! provider_one: voice search, with the headers `Authorization: Bearer <api_key>` and
//! `Cartesia-Version: <version>`.
//!
//! | ours | theirs |
//! |---|---|
//! | `page_size`, `query`, `language`, `cursor` | `GET /voices?limit=&q=&language=&starting_after=&expand[]=preview_file_url` |
//! | `gender` `male` / `female` / `neutral` | `gender` `masculine` / `feminine` / `gender_neutral` (other values as sent) |
//! | `Voice.id`, `.name`, `.description`, `.language` | `id`, `name`, `description`, `language` |
//! | `Voice.gender` | `gender`, mapped back: `masculine` → `male`, `feminine` → `female`, `gender_neutral` → `neutral` |
//! | `Voice.preview_url` | always `null` (their file needs our key) |
//! | `Voice.has_preview` | whether `preview_file_url` is present |
//! | `next_cursor` | the last voice's `id` (when `has_more`) |

use std::fmt;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde::Deserialize;
use voiceplane_core::Result;
use voiceplane_core::voice::{Voice, VoicePage, VoiceProvider, VoiceProviderName, VoiceSearch};

use crate::{BuildError, Call, HttpClient, base_url, endpoint, non_empty};

const SEARCH: Call = Call {
    provider: "provider_one",
    what: "the voice search",
    invalid: Some("the search parameters (query, language, gender or cursor)"),
    not_found: None,
    check: "providers.provider_one.base_url",
    refused: crate::API_KEY,
};

/// The `Cartesia-Version` sent when none is configured.
pub(crate) const DEFAULT_VERSION: &str = "2024-06-10";

/// Configuration of [`ProviderOne`].
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderOneSettings {
    /// `providers.provider_one.base_url`, e.g. `https://api.cartesia.ai`.
    pub base_url: String,
    /// `providers.provider_one.api_key`; without it every call is a 503.
    pub api_key: Option<String>,
    /// `providers.provider_one.version`: the `Cartesia-Version` header (`2024-06-10` when
    /// empty).
    pub version: String,
}

impl fmt::Debug for ProviderOneSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderOneSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("version", &self.version)
            .finish()
    }
}

/// provider_one over HTTP: [`VoiceProvider`].
#[derive(Clone)]
pub struct ProviderOne {
    http: HttpClient,
    base: Url,
    authorization: Option<HeaderValue>,
    version: HeaderValue,
}

impl fmt::Debug for ProviderOne {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderOne")
            .field("base_url", &self.base.as_str())
            .field("api_key", &self.authorization.as_ref().map(|_| "***"))
            .field("version", &self.version)
            .finish()
    }
}

#[derive(Deserialize)]
struct SearchResponse {
    data: Vec<SearchVoice>,
    #[serde(default)]
    has_more: bool,
}

#[derive(Deserialize)]
struct SearchVoice {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    gender: Option<String>,
    #[serde(default)]
    preview_file_url: Option<String>,
}

/// Our gender word → theirs.
fn their_gender(ours: &str) -> &str {
    match ours.to_ascii_lowercase().as_str() {
        "male" => "masculine",
        "female" => "feminine",
        "neutral" => "gender_neutral",
        _ => ours,
    }
}

/// Their gender word → ours.
fn our_gender(theirs: String) -> String {
    match theirs.as_str() {
        "masculine" => "male".to_owned(),
        "feminine" => "female".to_owned(),
        "gender_neutral" => "neutral".to_owned(),
        _ => theirs,
    }
}

impl ProviderOne {
    /// provider_one at `settings.base_url` over `http`. Fails when the base URL is not an
    /// http(s) URL or the key or version cannot be sent in a header (the error names the key,
    /// never its value).
    pub fn new(http: HttpClient, settings: ProviderOneSettings) -> Result<Self, BuildError> {
        let base = base_url("providers.provider_one.base_url", &settings.base_url)?;
        let authorization = non_empty(settings.api_key)
            .map(|key| {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                    .map_err(|_| {
                        BuildError::new(
                            "providers.provider_one.api_key: contains characters not allowed in an HTTP header",
                        )
                    })?;
                value.set_sensitive(true);
                Ok::<_, BuildError>(value)
            })
            .transpose()?;
        let version = match settings.version.trim() {
            "" => DEFAULT_VERSION,
            v => v,
        };
        let version = HeaderValue::from_str(version).map_err(|_| {
            BuildError::new(
                "providers.provider_one.version: contains characters not allowed in an HTTP header",
            )
        })?;
        Ok(Self {
            http,
            base,
            authorization,
            version,
        })
    }
}

#[async_trait]
impl VoiceProvider for ProviderOne {
    async fn search(&self, search: &VoiceSearch) -> Result<VoicePage<Voice>> {
        let authorization = self
            .authorization
            .clone()
            .ok_or_else(|| VoiceProviderName::ProviderOne.not_configured())?;
        let mut url = endpoint(&self.base, &["voices"]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("limit", &search.page_size.to_string());
            if let Some(text) = &search.query {
                q.append_pair("q", text);
            }
            if let Some(gender) = &search.gender {
                q.append_pair("gender", their_gender(gender));
            }
            if let Some(language) = &search.language {
                q.append_pair("language", language);
            }
            if let Some(cursor) = &search.cursor {
                q.append_pair("starting_after", cursor);
            }
            q.append_pair("expand[]", "preview_file_url");
        }
        let request = self
            .http
            .client
            .get(url)
            .header(reqwest::header::AUTHORIZATION, authorization)
            .header("Cartesia-Version", self.version.clone())
            .header(reqwest::header::ACCEPT, "application/json");
        let answer: SearchResponse = SEARCH.json(&self.http, request).await?;
        let next_cursor = if answer.has_more {
            answer.data.last().map(|v| v.id.clone())
        } else {
            None
        };
        let voices = answer
            .data
            .into_iter()
            .map(|v| Voice {
                id: v.id,
                name: v.name.unwrap_or_default(),
                description: non_empty(v.description),
                gender: non_empty(v.gender).map(our_gender),
                language: non_empty(v.language),
                preview_url: None,
                has_preview: non_empty(v.preview_file_url).is_some(),
            })
            .collect();
        Ok(VoicePage {
            voices,
            has_more: next_cursor.is_some(),
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genders_map_both_ways() {
        assert_eq!(their_gender("male"), "masculine");
        assert_eq!(their_gender("Female"), "feminine");
        assert_eq!(their_gender("neutral"), "gender_neutral");
        assert_eq!(their_gender("masculine"), "masculine");
        assert_eq!(our_gender("feminine".into()), "female");
        assert_eq!(our_gender("other".into()), "other");
    }
}
