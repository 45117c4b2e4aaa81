//! `/api/voices/…`: searching a provider's voices and provider_two's shared library. They
//! answer without the success envelope: `{voices, has_more, next_cursor}` for the two lists and
//! `{voice_id}` (200) for adding a shared voice.

use voiceplane_core::auth::Actor;
use voiceplane_core::voice::{
    AddedVoice, LibraryAddInput, LibraryListInput, LibraryVoice, Voice, VoicePage, VoiceSearchInput,
};

use crate::endpoint::{Bare, Cx, Json, Query};
use crate::error::ApiError;

pub(crate) async fn voice_search(
    cx: Cx,
    (): (),
    (actor, Query(input)): (Actor, Query<VoiceSearchInput>),
) -> Result<Bare<VoicePage<Voice>>, ApiError> {
    Ok(Bare(cx.service().voice_search(&actor, input).await?))
}

pub(crate) async fn voice_library_list(
    cx: Cx,
    (): (),
    (actor, Query(input)): (Actor, Query<LibraryListInput>),
) -> Result<Bare<VoicePage<LibraryVoice>>, ApiError> {
    Ok(Bare(cx.service().voice_library_list(&actor, input).await?))
}

pub(crate) async fn voice_library_add(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<LibraryAddInput>),
) -> Result<Bare<AddedVoice>, ApiError> {
    Ok(Bare(cx.service().voice_library_add(&actor, input).await?))
}
