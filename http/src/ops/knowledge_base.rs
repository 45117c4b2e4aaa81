//! `/api/knowledge-base`: the documents an agent's answers draw on. A document is created from
//! JSON text or from an uploaded file (`multipart/form-data`).

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Document, DocumentSearch, DocumentUpdate, Outcome, SearchHit};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Accepted, Created, Cx, Data, Json, Query};
use crate::error::ApiError;
use crate::multipart::NewDocumentBody;

pub(crate) async fn document_create(
    cx: Cx,
    (): (),
    (actor, body): (Actor, NewDocumentBody),
) -> Result<Created<Document>, ApiError> {
    let input = body.into_input().await?;
    let document = cx.service().document_create(&actor, input).await?;
    Ok(Created::member(&cx, document, |x| &x.documentation_id))
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

pub(crate) async fn document_reprocess(
    cx: Cx,
    (documentation_id,): (String,),
    (actor,): (Actor,),
) -> Result<Accepted<Document>, ApiError> {
    Ok(Accepted(
        cx.service()
            .document_reprocess(&actor, &documentation_id)
            .await?,
    ))
}

pub(crate) async fn document_search(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<DocumentSearch>),
) -> Result<Data<Vec<SearchHit>>, ApiError> {
    Ok(Data(cx.service().document_search(&actor, input).await?))
}
