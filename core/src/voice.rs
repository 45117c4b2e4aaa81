//! Voices: the results of a provider search (`GET /api/voices/search`) and of provider_two's
//! shared library (`GET /api/voices/provider_two/library`), the validated queries sent to the
//! providers, and the traits the HTTP clients implement.
//!
//! Two text-to-speech providers exist, written `provider_one` and `provider_two`. Both can be
//! searched ([`VoiceProvider`]); only `provider_two` has a shared library from which voices
//! are added to the account ([`VoiceLibrary`]).
//!
//! Implementations map every failure to an [`Error`] whose sentence names the provider and
//! never contains the upstream body or the API key:
//!
//! | failure | error |
//! |---|---|
//! | no API key configured | [`Error::Unavailable`] (503) |
//! | timeout, connection refused, 5xx, malformed JSON, unexpected status | [`Error::Upstream`] (502) |
//! | 401 / 403 (our key was rejected) | [`Error::Upstream`] (502) |
//! | 400 / 422 (the provider says our input is wrong) | [`Error::InvalidInput`] (400) |

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Largest `page_size` accepted by the voice endpoints.
pub const MAX_VOICE_PAGE_SIZE: u32 = 100;
/// `page_size` of a search when the caller sends none.
pub const DEFAULT_SEARCH_PAGE_SIZE: u32 = 20;
/// `page_size` of a library listing when the caller sends none.
pub const DEFAULT_LIBRARY_PAGE_SIZE: u32 = 30;
/// `sort` of a library listing when the caller sends none.
pub const DEFAULT_LIBRARY_SORT: &str = "trending";

/// A text-to-speech provider whose voices can be searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum VoiceProviderName {
    /// `provider_one`.
    ProviderOne,
    /// `provider_two`, which also has the shared voice library.
    ProviderTwo,
}

impl VoiceProviderName {
    /// The wire name: `provider_one` or `provider_two`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ProviderOne => "provider_one",
            Self::ProviderTwo => "provider_two",
        }
    }

    /// Parses a wire name; anything else is a 400 listing the known providers.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "provider_one" => Ok(Self::ProviderOne),
            "provider_two" => Ok(Self::ProviderTwo),
            other => Err(Error::invalid(format!(
                "provider must be `provider_one` or `provider_two`, not `{}`",
                crate::ids::truncate(other, 40)
            ))),
        }
    }

    /// The 503 of a provider without an API key, naming the configuration key to set.
    pub fn not_configured(self) -> Error {
        Error::Unavailable(format!(
            "{0} is not configured: set providers.{0}.api_key",
            self.as_str()
        ))
    }
}

impl fmt::Display for VoiceProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A voice found by a search (`GET /api/voices/search`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Voice {
    /// The provider's voice id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Description, when the provider has one (`null` otherwise).
    pub description: Option<String>,
    /// Gender as the provider labels it.
    pub gender: Option<String>,
    /// Language as the provider labels it.
    pub language: Option<String>,
    /// A preview URL playable without credentials, when the provider exposes one.
    pub preview_url: Option<String>,
    /// Whether the provider has a preview sample of this voice.
    pub has_preview: bool,
}

/// A voice of provider_two's shared library (`GET /api/voices/provider_two/library`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct LibraryVoice {
    /// The shared voice's id.
    pub id: String,
    /// The id of the voice's owner; needed to add the voice.
    pub public_owner_id: String,
    /// Display name.
    pub name: String,
    /// Preview URL, when there is one.
    pub preview_url: Option<String>,
}

/// One page of voices: `{voices, has_more, next_cursor}`, the response of the voice
/// endpoints (no `success` envelope). `next_cursor` is `null` when `has_more` is false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", schemars(rename = "{T}Page"))]
pub struct VoicePage<T> {
    /// The voices of this page.
    pub voices: Vec<T>,
    /// Whether more voices exist.
    pub has_more: bool,
    /// What to send as `cursor` (search) or `page` (library) for the next page.
    pub next_cursor: Option<String>,
}

/// A validated search, as handed to a [`VoiceProvider`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VoiceSearch {
    /// Free text.
    pub query: Option<String>,
    /// Language code.
    pub language: Option<String>,
    /// Gender in our terms (`male`, `female`, …); providers translate it.
    pub gender: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// How many voices to ask for (1–100).
    pub page_size: u32,
}

/// A validated shared-library listing, as handed to a [`VoiceLibrary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryQuery {
    /// Free text.
    pub query: Option<String>,
    /// Language code.
    pub language: Option<String>,
    /// Gender, e.g. `male`, `female`.
    pub gender: Option<String>,
    /// Age, e.g. `young`, `middle_aged`, `old`.
    pub age: Option<String>,
    /// Accent.
    pub accent: Option<String>,
    /// Category.
    pub category: Option<String>,
    /// Use cases; each is sent as its own `use_cases` parameter.
    pub use_cases: Vec<String>,
    /// Sort order (default `trending`).
    pub sort: String,
    /// Zero-based page index.
    pub page: u32,
    /// Voices per page (1–100).
    pub page_size: u32,
}

/// A validated request to add a shared voice to the account, as handed to a
/// [`VoiceLibrary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryAdd {
    /// The owner id from the library listing.
    pub public_owner_id: String,
    /// The shared voice's id.
    pub voice_id: String,
    /// The name to save the voice under.
    pub name: String,
}

/// Input of [`crate::Service::voice_search`], as read from the query string.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct VoiceSearchInput {
    /// The provider to search.
    #[cfg_attr(feature = "openapi", schemars(with = "VoiceProviderName"))]
    pub provider: Option<String>,
    /// Free text.
    pub query: Option<String>,
    /// Language code.
    pub language: Option<String>,
    /// `male` or `female`; most relevant for provider_one.
    pub gender: Option<String>,
    /// The `next_cursor` of the previous page; omitted for the first page.
    pub cursor: Option<String>,
    /// Voices per page.
    #[cfg_attr(feature = "openapi", schemars(range(min = 1, max = 100), extend("default" = DEFAULT_SEARCH_PAGE_SIZE)))]
    pub page_size: Option<u32>,
}

/// Input of [`crate::Service::voice_library_list`], as read from the query string.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct LibraryListInput {
    /// Free text.
    pub query: Option<String>,
    /// Language code.
    pub language: Option<String>,
    /// e.g. `male`, `female`.
    pub gender: Option<String>,
    /// e.g. `young`, `middle_aged`, `old`.
    pub age: Option<String>,
    /// Accent.
    pub accent: Option<String>,
    /// Category.
    pub category: Option<String>,
    /// Use cases; repeat the parameter for several.
    #[serde(default)]
    pub use_cases: Vec<String>,
    /// Sort order.
    #[cfg_attr(feature = "openapi", schemars(extend("default" = DEFAULT_LIBRARY_SORT)))]
    pub sort: Option<String>,
    /// Zero-based page index: the previous page's `next_cursor`.
    #[cfg_attr(feature = "openapi", schemars(range(min = 0), extend("default" = 0)))]
    pub page: Option<u32>,
    /// Voices per page.
    #[cfg_attr(feature = "openapi", schemars(range(min = 1, max = 100), extend("default" = DEFAULT_LIBRARY_PAGE_SIZE)))]
    pub page_size: Option<u32>,
}

/// Body of `POST /api/voices/provider_two/library/add`: all three fields are required; they
/// are optional here so that a missing one gets a 400 naming it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LibraryAddInput {
    /// `public_owner_id`, from the library listing.
    pub public_owner_id: Option<String>,
    /// `voice_id`: the shared voice's id.
    pub voice_id: Option<String>,
    /// `name`: the name to save the voice under.
    pub name: Option<String>,
}

/// The answer of [`crate::Service::voice_library_add`]: `{voice_id}`, the id of the voice in
/// the account's library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct AddedVoice {
    /// The id of the added voice.
    pub voice_id: String,
}

/// Searches a provider's voices.
#[async_trait]
pub trait VoiceProvider: Send + Sync + 'static {
    /// One page of voices matching `search`.
    async fn search(&self, search: &VoiceSearch) -> Result<VoicePage<Voice>>;
}

/// provider_two's shared voice library.
#[async_trait]
pub trait VoiceLibrary: Send + Sync + 'static {
    /// One page of shared voices matching `query`.
    async fn list(&self, query: &LibraryQuery) -> Result<VoicePage<LibraryVoice>>;

    /// Adds a shared voice to the account; returns the id of the added voice.
    async fn add(&self, voice: &LibraryAdd) -> Result<AddedVoice>;
}

/// The voice providers a [`crate::Service`] talks to. A provider left `None` answers 503
/// "… is not configured".
#[derive(Clone, Default)]
pub struct VoiceProviders {
    /// Search on provider_one.
    pub provider_one: Option<Arc<dyn VoiceProvider>>,
    /// Search on provider_two.
    pub provider_two: Option<Arc<dyn VoiceProvider>>,
    /// provider_two's shared library.
    pub library: Option<Arc<dyn VoiceLibrary>>,
}

impl fmt::Debug for VoiceProviders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VoiceProviders")
            .field("provider_one", &self.provider_one.is_some())
            .field("provider_two", &self.provider_two.is_some())
            .field("library", &self.library.is_some())
            .finish()
    }
}

impl VoiceProviders {
    /// The search implementation of `provider`, or its 503.
    pub fn search_of(&self, provider: VoiceProviderName) -> Result<&dyn VoiceProvider> {
        let found = match provider {
            VoiceProviderName::ProviderOne => self.provider_one.as_deref(),
            VoiceProviderName::ProviderTwo => self.provider_two.as_deref(),
        };
        found.ok_or_else(|| provider.not_configured())
    }

    /// provider_two's library, or its 503.
    pub fn library(&self) -> Result<&dyn VoiceLibrary> {
        self.library
            .as_deref()
            .ok_or_else(|| VoiceProviderName::ProviderTwo.not_configured())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names() {
        assert_eq!(
            VoiceProviderName::parse("provider_one").unwrap(),
            VoiceProviderName::ProviderOne
        );
        assert_eq!(VoiceProviderName::ProviderTwo.to_string(), "provider_two");
        let err = VoiceProviderName::parse("provider_three").unwrap_err();
        assert!(matches!(err, Error::InvalidInput(m) if m.contains("provider_three")));
        assert_eq!(
            VoiceProviderName::ProviderTwo.not_configured(),
            Error::Unavailable(
                "provider_two is not configured: set providers.provider_two.api_key".into()
            )
        );
    }

    #[test]
    fn serialized_field_names_are_the_spec_ones() {
        let v = serde_json::to_value(Voice {
            id: "v".into(),
            name: "n".into(),
            description: None,
            gender: Some("female".into()),
            language: None,
            preview_url: None,
            has_preview: false,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"id": "v", "name": "n", "description": null, "gender": "female",
                "language": null, "preview_url": null, "has_preview": false})
        );
        let v = serde_json::to_value(VoicePage {
            voices: vec![LibraryVoice {
                id: "v".into(),
                public_owner_id: "o".into(),
                name: "n".into(),
                preview_url: Some("https://x".into()),
            }],
            has_more: true,
            next_cursor: Some("1".into()),
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"voices": [{"id": "v", "public_owner_id": "o", "name": "n",
                "preview_url": "https://x"}], "has_more": true, "next_cursor": "1"})
        );
    }

    #[test]
    fn unconfigured_providers_are_503() {
        let none = VoiceProviders::default();
        assert!(matches!(
            none.search_of(VoiceProviderName::ProviderOne),
            Err(Error::Unavailable(m)) if m.contains("providers.provider_one.api_key")
        ));
        assert!(matches!(none.library(), Err(Error::Unavailable(_))));
    }
}
