//! `/api/voices/…`: searching a provider's voices and provider_two's shared library. They
//! answer without the success envelope: `{voices, has_more, next_cursor}` for the two lists and
//! `{voice_id}` (200) for adding a shared voice.

use voiceplane_core::auth::Actor;
use voiceplane_core::voice::{
    AddedVoice, LibraryAddInput, LibraryListInput, LibraryVoice, Voice, VoicePage, VoiceSearchInput,
};

use crate::endpoint::{Bare, Cx, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "voices",
    about: "Voice search and provider_two's shared library.",
    operations: &[VOICE_SEARCH, VOICE_LIBRARY_LIST, VOICE_LIBRARY_ADD],
};

const VOICE_SEARCH: Operation = Operation::get("/api/voices/search", handler!(voice_search))
    .errors(&[502])
    .doc(
        "Search a provider's voices",
        "Searches the voices of `provider` (`provider_one` or `provider_two`) with its own \
         cursor; no envelope. 502 when the provider fails, 503 when it has no API key \
         configured, 400 when it says the input is wrong. Needs `voices:read` (every role).",
    );

async fn voice_search(
    cx: Cx,
    (): (),
    (actor, Query(input)): (Actor, Query<VoiceSearchInput>),
) -> Result<Bare<VoicePage<Voice>>, ApiError> {
    Ok(Bare(cx.service().voice_search(&actor, input).await?))
}

const VOICE_LIBRARY_LIST: Operation = Operation::get(
    "/api/voices/provider_two/library",
    handler!(voice_library_list),
)
.errors(&[502])
.doc(
    "List provider_two's shared voice library",
    "Pages through provider_two's shared voice library with its filters; no envelope. 502 \
     when the provider fails, 503 when it has no API key configured. Needs `voices:read` \
     (every role).",
);

async fn voice_library_list(
    cx: Cx,
    (): (),
    (actor, Query(input)): (Actor, Query<LibraryListInput>),
) -> Result<Bare<VoicePage<LibraryVoice>>, ApiError> {
    Ok(Bare(cx.service().voice_library_list(&actor, input).await?))
}

const VOICE_LIBRARY_ADD: Operation = Operation::post(
    "/api/voices/provider_two/library/add",
    handler!(voice_library_add),
)
.errors(&[404, 502])
.doc(
    "Add a shared voice to the provider_two account",
    "Copies a shared voice into the provider_two account and answers its id there (200: \
     nothing is created here). 404 when the provider does not know the voice, 502 when it \
     fails. Needs `voices:write` (agent_manager or admin).",
);

async fn voice_library_add(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<LibraryAddInput>),
) -> Result<Bare<AddedVoice>, ApiError> {
    Ok(Bare(cx.service().voice_library_add(&actor, input).await?))
}
