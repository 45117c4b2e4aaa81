//! `/api/openapi.json`: this API's OpenAPI document, answered by the adapter itself (there is
//! no `Service` operation behind it). No credentials.

use crate::endpoint::Cx;
use crate::error::ApiError;
use crate::openapi::OpenApiDocument;

pub(crate) async fn openapi_document(_: Cx, (): (), (): ()) -> Result<OpenApiDocument, ApiError> {
    Ok(OpenApiDocument)
}
