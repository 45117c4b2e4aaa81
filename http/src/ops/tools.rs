//! `/api/tools`: custom HTTP tools agents can call.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{NewTool, Outcome, Tool, ToolSummary, ToolUpdate};
use voiceplane_core::page::PageParams;

use crate::endpoint::{Counted, Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "tools",
    about: "Custom HTTP tools agents can call.",
    operations: &[TOOL_CREATE, TOOL_LIST, TOOL_VIEW, TOOL_UPDATE, TOOL_DELETE],
};

const TOOL_CREATE: Operation = Operation::post("/api/tools", handler!(tool_create))
    .errors(&[409])
    .doc(
        "Create a tool",
        "Creates a custom HTTP tool that agents can call: its URL, method, headers, JSON \
         Schema of parameters and timeout. 409 when the organization already has a tool of \
         that name. Needs `tools:write` (agent_manager or admin).",
    );

async fn tool_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewTool>),
) -> Result<Created<Tool>, ApiError> {
    let tool = cx.service().tool_create(&actor, input).await?;
    Ok(Created::member(&cx, tool, |x| &x.tool_id))
}

const TOOL_LIST: Operation = Operation::get("/api/tools", handler!(tool_list)).doc(
    "List tools (summaries, with total_count)",
    "Lists tool summaries, newest first, with the size of the whole list \
     (`pagination.total_count`). Needs `tools:read` (every role).",
);

async fn tool_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Counted<ToolSummary>, ApiError> {
    Ok(Counted(cx.service().tool_list(&actor, &params).await?))
}

const TOOL_VIEW: Operation = Operation::get("/api/tools/{tool_id}", handler!(tool_view))
    .tagged_view()
    .doc(
        "Get a tool",
        "One tool in full: URL, method, headers, parameters and timeout. Needs `tools:read` \
         (every role).",
    );

async fn tool_view(
    cx: Cx,
    (tool_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Tool>, ApiError> {
    Ok(Data(cx.service().tool_view(&actor, &tool_id).await?))
}

const TOOL_UPDATE: Operation = Operation::patch("/api/tools/{tool_id}", handler!(tool_update))
    .tagged_write()
    .errors(&[409])
    .doc(
        "Update a tool",
        "Changes any field of a tool; 409 when renaming it to the name of another. Needs \
         `tools:write` (agent_manager or admin).",
    );

async fn tool_update(
    cx: Cx,
    (tool_id,): (String,),
    (actor, Json(input)): (Actor, Json<ToolUpdate>),
) -> Result<Data<Tool>, ApiError> {
    Ok(Data(
        cx.service().tool_update(&actor, &tool_id, input).await?,
    ))
}

const TOOL_DELETE: Operation = Operation::delete("/api/tools/{tool_id}", handler!(tool_delete))
    .conditional_write()
    .doc(
        "Delete a tool",
        "Deletes a tool; agents that used it no longer list it. Needs `tools:write` \
         (agent_manager or admin).",
    );

async fn tool_delete(
    cx: Cx,
    (tool_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Tool>, ApiError> {
    Ok(cx.service().tool_delete(&actor, &tool_id).await?)
}
