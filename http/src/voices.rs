//! The query strings of the voice endpoints. Their responses have no `success` envelope:
//! `{voices, has_more, next_cursor}` for the two lists and `{voice_id}` (200) for adding a
//! shared voice.
//!
//! Parameters are read like the page parameters of the other lists: unknown ones are
//! ignored, the first occurrence of a repeated one wins, except `use_cases`, which is
//! repeatable. Integers that do not parse are a 400 here; ranges and everything else are
//! checked by the service.

use voiceplane_core::voice::{LibraryListInput, MAX_VOICE_PAGE_SIZE, VoiceSearchInput};

use crate::error::ApiError;

/// Sets `slot` to `value` unless an earlier occurrence did.
fn first(slot: &mut Option<String>, value: std::borrow::Cow<'_, str>) {
    if slot.is_none() {
        *slot = Some(value.into_owned());
    }
}

/// Parses `value` as an unsigned integer, or answers 400 with `detail`.
fn integer(slot: &mut Option<u32>, value: &str, detail: &str) -> Result<(), ApiError> {
    if slot.is_none() {
        *slot = Some(
            value
                .parse::<u32>()
                .map_err(|_| ApiError::bad_request(detail))?,
        );
    }
    Ok(())
}

fn page_size_detail() -> String {
    format!("page_size must be an integer between 1 and {MAX_VOICE_PAGE_SIZE}")
}

/// The query of `GET /api/voices/search`: `provider`, `query`, `language`, `gender`,
/// `cursor`, `page_size`.
pub(crate) fn search_input(query: Option<&str>) -> Result<VoiceSearchInput, ApiError> {
    let mut input = VoiceSearchInput::default();
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*name {
            "provider" => first(&mut input.provider, value),
            "query" => first(&mut input.query, value),
            "language" => first(&mut input.language, value),
            "gender" => first(&mut input.gender, value),
            "cursor" => first(&mut input.cursor, value),
            "page_size" => integer(&mut input.page_size, &value, &page_size_detail())?,
            _ => {}
        }
    }
    Ok(input)
}

/// The query of `GET /api/voices/provider_two/library`: `query`, `language`, `gender`,
/// `age`, `accent`, `category`, `use_cases` (repeatable), `sort`, `page`, `page_size`.
pub(crate) fn library_input(query: Option<&str>) -> Result<LibraryListInput, ApiError> {
    let mut input = LibraryListInput::default();
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*name {
            "query" => first(&mut input.query, value),
            "language" => first(&mut input.language, value),
            "gender" => first(&mut input.gender, value),
            "age" => first(&mut input.age, value),
            "accent" => first(&mut input.accent, value),
            "category" => first(&mut input.category, value),
            "sort" => first(&mut input.sort, value),
            "use_cases" | "use_cases[]" => input.use_cases.push(value.into_owned()),
            "page" => integer(
                &mut input.page,
                &value,
                "page must be a zero-based page index (an integer, 0 for the first page)",
            )?,
            "page_size" => integer(&mut input.page_size, &value, &page_size_detail())?,
            _ => {}
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    #[test]
    fn search_query() {
        let input = search_input(Some(
            "provider=provider_one&query=warm+voice&language=en&gender=male&cursor=c%2F1\
             &page_size=5&provider=provider_two&other=x",
        ))
        .unwrap();
        assert_eq!(
            input,
            VoiceSearchInput {
                provider: Some("provider_one".into()),
                query: Some("warm voice".into()),
                language: Some("en".into()),
                gender: Some("male".into()),
                cursor: Some("c/1".into()),
                page_size: Some(5),
            }
        );
        assert_eq!(search_input(None).unwrap(), VoiceSearchInput::default());
        let err = search_input(Some("page_size=ten")).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            err.detail(),
            "page_size must be an integer between 1 and 100"
        );
    }

    #[test]
    fn library_query() {
        let input = library_input(Some(
            "use_cases=news&query=deep&use_cases=audiobook&page=2&page_size=10&sort=created_date\
             &language=en&gender=female&age=young&accent=british&category=professional",
        ))
        .unwrap();
        assert_eq!(
            input,
            LibraryListInput {
                query: Some("deep".into()),
                language: Some("en".into()),
                gender: Some("female".into()),
                age: Some("young".into()),
                accent: Some("british".into()),
                category: Some("professional".into()),
                use_cases: vec!["news".into(), "audiobook".into()],
                sort: Some("created_date".into()),
                page: Some(2),
                page_size: Some(10),
            }
        );
        // Out of range is the service's call; not an integer is ours.
        assert_eq!(
            library_input(Some("page_size=101")).unwrap().page_size,
            Some(101)
        );
        for bad in [
            "page=-1",
            "page=x",
            "page=1.5",
            "page_size=",
            "page_size=-3",
        ] {
            let err = library_input(Some(bad)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{bad}");
        }
    }
}
