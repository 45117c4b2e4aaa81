//! Voices: search on either provider, provider_two's shared library, and adding a shared
//! voice to the account. Inputs are validated here; the providers are reached through
//! [`crate::voice::VoiceProviders`].

use super::Service;
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::truncate;
use crate::role::Permission;
use crate::validate;
use crate::voice::{
    AddedVoice, DEFAULT_LIBRARY_PAGE_SIZE, DEFAULT_LIBRARY_SORT, DEFAULT_SEARCH_PAGE_SIZE,
    LibraryAdd, LibraryAddInput, LibraryListInput, LibraryQuery, LibraryVoice, MAX_VOICE_PAGE_SIZE,
    Voice, VoicePage, VoiceProviderName, VoiceSearch, VoiceSearchInput,
};

/// Longest free-text `query`.
const MAX_QUERY_CHARS: usize = 200;
/// Longest filter value (`language`, `gender`, `age`, `accent`, `category`, `sort`, a use case).
const MAX_FILTER_CHARS: usize = 64;
/// Longest `cursor` (provider tokens are opaque but short).
const MAX_CURSOR_CHARS: usize = 1024;
/// Most `use_cases` values in one request.
const MAX_USE_CASES: usize = 20;
/// Longest provider id (`public_owner_id`, `voice_id`).
const MAX_PROVIDER_ID_CHARS: usize = 128;
/// Longest name of an added voice.
const MAX_VOICE_NAME_CHARS: usize = 100;

/// A trimmed optional parameter: empty counts as absent; longer than `max` is a 400.
fn optional(field: &str, value: Option<String>, max: usize) -> Result<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > max => Err(Error::invalid(format!(
            "{field} must be at most {max} characters"
        ))),
        Some(v) if v.chars().any(char::is_control) => Err(Error::invalid(format!(
            "{field} must not contain control characters"
        ))),
        Some(v) => Ok(Some(v.to_owned())),
    }
}

/// `page_size` within 1–100, or `default`.
fn page_size(value: Option<u32>, default: u32) -> Result<u32> {
    match value {
        None => Ok(default),
        Some(n) if (1..=MAX_VOICE_PAGE_SIZE).contains(&n) => Ok(n),
        Some(_) => Err(Error::invalid(format!(
            "page_size must be between 1 and {MAX_VOICE_PAGE_SIZE}"
        ))),
    }
}

/// A required provider id that goes into an upstream URL path: letters, digits, `_`, `-`.
fn provider_id(field: &str, value: Option<String>) -> Result<String> {
    let value = value.ok_or_else(|| Error::invalid(format!("{field} is required")))?;
    let value = validate::text(field, &value, MAX_PROVIDER_ID_CHARS)?;
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(Error::invalid(format!(
            "{field} `{}` may only contain letters, digits, `_` and `-`",
            truncate(&value, 40)
        )));
    }
    Ok(value)
}

impl Service {
    /// `GET /api/voices/search`: one page of a provider's voices. `provider` is required
    /// (`provider_one` or `provider_two`, else 400); a provider without an API key is 503.
    pub async fn voice_search(
        &self,
        actor: &Actor,
        input: VoiceSearchInput,
    ) -> Result<VoicePage<Voice>> {
        actor.require(Permission::VoicesRead)?;
        let provider = match input.provider.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(Error::invalid(
                    "provider is required: `provider_one` or `provider_two`",
                ));
            }
            Some(p) => VoiceProviderName::parse(p)?,
        };
        let search = VoiceSearch {
            query: optional("query", input.query, MAX_QUERY_CHARS)?,
            language: optional("language", input.language, MAX_FILTER_CHARS)?,
            gender: optional("gender", input.gender, MAX_FILTER_CHARS)?,
            cursor: optional("cursor", input.cursor, MAX_CURSOR_CHARS)?,
            page_size: page_size(input.page_size, DEFAULT_SEARCH_PAGE_SIZE)?,
        };
        self.voices.search_of(provider)?.search(&search).await
    }

    /// `GET /api/voices/provider_two/library`: one page of provider_two's shared library.
    /// `page` is zero-based; `page_size` is 1–100; `sort` defaults to `trending`.
    pub async fn voice_library_list(
        &self,
        actor: &Actor,
        input: LibraryListInput,
    ) -> Result<VoicePage<LibraryVoice>> {
        actor.require(Permission::VoicesRead)?;
        if input.use_cases.len() > MAX_USE_CASES {
            return Err(Error::invalid(format!(
                "use_cases may be given at most {MAX_USE_CASES} times"
            )));
        }
        let mut use_cases = Vec::with_capacity(input.use_cases.len());
        for use_case in input.use_cases {
            if let Some(u) = optional("use_cases", Some(use_case), MAX_FILTER_CHARS)? {
                use_cases.push(u);
            }
        }
        let query = LibraryQuery {
            query: optional("query", input.query, MAX_QUERY_CHARS)?,
            language: optional("language", input.language, MAX_FILTER_CHARS)?,
            gender: optional("gender", input.gender, MAX_FILTER_CHARS)?,
            age: optional("age", input.age, MAX_FILTER_CHARS)?,
            accent: optional("accent", input.accent, MAX_FILTER_CHARS)?,
            category: optional("category", input.category, MAX_FILTER_CHARS)?,
            use_cases,
            sort: optional("sort", input.sort, MAX_FILTER_CHARS)?
                .unwrap_or_else(|| DEFAULT_LIBRARY_SORT.to_owned()),
            page: input.page.unwrap_or(0),
            page_size: page_size(input.page_size, DEFAULT_LIBRARY_PAGE_SIZE)?,
        };
        self.voices.library()?.list(&query).await
    }

    /// `POST /api/voices/provider_two/library/add`: adds a shared voice to the account under
    /// `name`; admins and agent managers only. Every body field is required (400 naming the
    /// missing one).
    pub async fn voice_library_add(
        &self,
        actor: &Actor,
        input: LibraryAddInput,
    ) -> Result<AddedVoice> {
        actor.require(Permission::VoicesWrite)?;
        let public_owner_id = provider_id("public_owner_id", input.public_owner_id)?;
        let voice_id = provider_id("voice_id", input.voice_id)?;
        let name = input
            .name
            .ok_or_else(|| Error::invalid("name is required"))?;
        let name = validate::text("name", &name, MAX_VOICE_NAME_CHARS)?;
        if name.chars().any(char::is_control) {
            return Err(Error::invalid("name must not contain control characters"));
        }
        let add = LibraryAdd {
            public_owner_id,
            voice_id,
            name,
        };
        self.voices.library()?.add(&add).await
    }
}

#[cfg(test)]
mod tests {
    use super::{optional, page_size, provider_id};
    use crate::error::Error;

    #[test]
    fn optional_parameters() {
        assert_eq!(optional("q", None, 5).unwrap(), None);
        assert_eq!(optional("q", Some("  ".into()), 5).unwrap(), None);
        assert_eq!(
            optional("q", Some(" ab ".into()), 5).unwrap(),
            Some("ab".into())
        );
        assert!(optional("q", Some("abcdef".into()), 5).is_err());
        assert!(optional("q", Some("a\u{0}b".into()), 5).is_err());
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(None, 30).unwrap(), 30);
        assert_eq!(page_size(Some(100), 30).unwrap(), 100);
        assert!(matches!(
            page_size(Some(101), 30),
            Err(Error::InvalidInput(m)) if m == "page_size must be between 1 and 100"
        ));
        assert!(page_size(Some(0), 30).is_err());
    }

    #[test]
    fn provider_ids() {
        assert_eq!(
            provider_id("voice_id", Some("aB3_-".into())).unwrap(),
            "aB3_-"
        );
        for (value, needle) in [
            (None, "voice_id is required"),
            (Some(""), "voice_id must not be empty"),
            (Some("../x"), "may only contain"),
            (Some("a/b"), "may only contain"),
        ] {
            let err = provider_id("voice_id", value.map(str::to_owned)).unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
        }
    }
}
