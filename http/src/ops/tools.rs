//! `/api/tools`: custom HTTP tools agents can call.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{NewTool, Outcome, Tool, ToolSummary, ToolUpdate};
use voiceplane_core::page::PageParams;

use crate::endpoint::{Counted, Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn tool_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewTool>),
) -> Result<Created<Tool>, ApiError> {
    let tool = cx.service().tool_create(&actor, input).await?;
    Ok(Created::member(&cx, tool, |x| &x.tool_id))
}

pub(crate) async fn tool_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Counted<ToolSummary>, ApiError> {
    Ok(Counted(cx.service().tool_list(&actor, &params).await?))
}

pub(crate) async fn tool_view(
    cx: Cx,
    (tool_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Tool>, ApiError> {
    Ok(Data(cx.service().tool_view(&actor, &tool_id).await?))
}

pub(crate) async fn tool_update(
    cx: Cx,
    (tool_id,): (String,),
    (actor, Json(input)): (Actor, Json<ToolUpdate>),
) -> Result<Data<Tool>, ApiError> {
    Ok(Data(
        cx.service().tool_update(&actor, &tool_id, input).await?,
    ))
}

pub(crate) async fn tool_delete(
    cx: Cx,
    (tool_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Tool>, ApiError> {
    Ok(cx.service().tool_delete(&actor, &tool_id).await?)
}
