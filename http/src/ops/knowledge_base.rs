//! `/api/knowledge-base`: the documents an agent's answers draw on. A document is created from
//! JSON text or from an uploaded file (`multipart/form-data`).

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Document, DocumentUpdate, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query};
use crate::error::ApiError;
use crate::multipart::NewDocumentBody;

pub(crate) async fn document_create(
    cx: Cx,
    (): (),
    (actor, body): (Actor, NewDocumentBody),
) -> Result<Created<Document>, ApiError> {
    let input = body.into_input().await?;
    Ok(Created(cx.service().document_create(&actor, input).await?))
}

pub(crate) async fn document_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Document>, ApiError> {
    Ok(cx.service().document_list(&actor, &params).await?)
}

pub(crate) async fn document_view(
    cx: Cx,
    (documentation_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Document>, ApiError> {
    Ok(Data(
        cx.service()
            .document_view(&actor, &documentation_id)
            .await?,
    ))
}

pub(crate) async fn document_update(
    cx: Cx,
    (documentation_id,): (String,),
    (actor, Json(input)): (Actor, Json<DocumentUpdate>),
) -> Result<Data<Document>, ApiError> {
    Ok(Data(
        cx.service()
            .document_update(&actor, &documentation_id, input)
            .await?,
    ))
}

pub(crate) async fn document_delete(
    cx: Cx,
    (documentation_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Document>, ApiError> {
    Ok(cx
        .service()
        .document_delete(&actor, &documentation_id)
        .await?)
}
