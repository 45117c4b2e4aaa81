//! `/api/knowledge-base`: the documents an agent's answers draw on. A document is created from
//! JSON text or from an uploaded file (`multipart/form-data`).

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Document, DocumentSearch, DocumentUpdate, Outcome, SearchHit};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Accepted, Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::multipart::NewDocumentBody;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "knowledge-base",
    about: "Knowledge-base documents.",
    operations: &[
        DOCUMENT_CREATE,
        DOCUMENT_LIST,
        DOCUMENT_VIEW,
        DOCUMENT_UPDATE,
        DOCUMENT_DELETE,
        DOCUMENT_REPROCESS,
        DOCUMENT_SEARCH,
    ],
};

const DOCUMENT_CREATE: Operation =
    Operation::post("/api/knowledge-base", handler!(document_create)).doc(
        "Add a knowledge-base document: JSON text or an uploaded file",
        "Adds a knowledge-base document, either as JSON `{name, text}` or as \
         `multipart/form-data` with a `file` part (streamed into object storage) and an \
         optional `name` part. It answers at once with `processing_status` `pending`; \
         extraction, chunking and embedding run afterwards. 413 over the upload limit. Needs \
         `kb:write` (agent_manager or admin).",
    );

async fn document_create(
    cx: Cx,
    (): (),
    (actor, body): (Actor, NewDocumentBody),
) -> Result<Created<Document>, ApiError> {
    let input = body.into_input().await?;
    let document = cx.service().document_create(&actor, input).await?;
    Ok(Created::member(&cx, document, |x| &x.documentation_id))
}

const DOCUMENT_LIST: Operation = Operation::get("/api/knowledge-base", handler!(document_list))
    .doc(
        "List documents",
        "Lists knowledge-base documents, newest first. Needs `kb:read` (every role).",
    );

async fn document_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Document>, ApiError> {
    Ok(cx.service().document_list(&actor, &params).await?)
}

const DOCUMENT_VIEW: Operation = Operation::get(
    "/api/knowledge-base/{documentation_id}",
    handler!(document_view),
)
.tagged_view()
.doc(
    "Get a document",
    "One document with its processing state. Needs `kb:read` (every role).",
);

async fn document_view(
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

const DOCUMENT_UPDATE: Operation = Operation::patch(
    "/api/knowledge-base/{documentation_id}",
    handler!(document_update),
)
.tagged_write()
.doc(
    "Rename a document",
    "Renames a document. Needs `kb:write` (agent_manager or admin).",
);

async fn document_update(
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

const DOCUMENT_DELETE: Operation = Operation::delete(
    "/api/knowledge-base/{documentation_id}",
    handler!(document_delete),
)
.conditional_write()
.doc(
    "Delete a document",
    "Deletes a document, its stored file and its chunks, and cancels its processing; \
     agents no longer list it. Needs `kb:write` (agent_manager or admin).",
);

async fn document_delete(
    cx: Cx,
    (documentation_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Document>, ApiError> {
    Ok(cx
        .service()
        .document_delete(&actor, &documentation_id)
        .await?)
}

const DOCUMENT_REPROCESS: Operation = Operation::post(
    "/api/knowledge-base/{documentation_id}/reprocess",
    handler!(document_reprocess),
)
.doc(
    "Process a document again; it is pending at once",
    "Processes the document again from its stored content; it is `pending` at once and a \
     run in progress is superseded. Answers 202. Needs `kb:write` (agent_manager or \
     admin).",
);

async fn document_reprocess(
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

const DOCUMENT_SEARCH: Operation =
    Operation::post("/api/knowledge-base/search", handler!(document_search)).doc(
        "Search the chunks of the organization's processed documents",
        "Searches the chunks of the organization's processed documents (optionally only \
         `document_ids`), best first, blending word and meaning matches. Needs `kb:read` \
         (every role).",
    );

async fn document_search(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<DocumentSearch>),
) -> Result<Data<Vec<SearchHit>>, ApiError> {
    Ok(Data(cx.service().document_search(&actor, input).await?))
}
