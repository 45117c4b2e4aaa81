//! `/api/openapi.json`: this API's OpenAPI document, answered by the adapter itself (there is
//! no `Service` operation behind it). No credentials.

use crate::endpoint::{Cx, handler};
use crate::error::ApiError;
use crate::openapi::OpenApiDocument;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "meta",
    about: "This document.",
    operations: &[OPENAPI_DOCUMENT],
};

const OPENAPI_DOCUMENT: Operation = Operation::get("/api/openapi.json", handler!(openapi_document))
    .public()
    .doc(
        "This OpenAPI 3.1 document",
        "This document, generated from the route table and the types that read and write the \
         bodies. No credentials. Also printed by `voiceplane openapi`.",
    );

async fn openapi_document(cx: Cx, (): (), (): ()) -> Result<OpenApiDocument, ApiError> {
    Ok(OpenApiDocument((cx.api.openapi)()))
}
