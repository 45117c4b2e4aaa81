//! `/api/agents`: the organization's AI voice agents.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Agent, AgentUpdate, NewAgent, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "agents",
    about: "AI voice agents.",
    operations: &[
        AGENT_CREATE,
        AGENT_LIST,
        AGENT_VIEW,
        AGENT_UPDATE,
        AGENT_DELETE,
    ],
};

const AGENT_CREATE: Operation = Operation::post("/api/agents", handler!(agent_create)).doc(
    "Create an agent",
    "Creates an agent: its prompt, voice, language model and settings, the tools and \
     knowledge-base documents it uses and the phone numbers assigned to it (each id must \
     be of this organization, else 400 naming it). Needs `agents:write` (agent_manager or \
     admin).",
);

async fn agent_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewAgent>),
) -> Result<Created<Agent>, ApiError> {
    let agent = cx.service().agent_create(&actor, input).await?;
    Ok(Created::member(&cx, agent, |x| &x.agent_id))
}

const AGENT_LIST: Operation = Operation::get("/api/agents", handler!(agent_list)).doc(
    "List agents",
    "Lists agents, newest first. Needs `agents:read` (every role).",
);

async fn agent_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Agent>, ApiError> {
    Ok(cx.service().agent_list(&actor, &params).await?)
}

const AGENT_VIEW: Operation = Operation::get("/api/agents/{agent_id}", handler!(agent_view))
    .tagged_view()
    .doc(
        "Get an agent",
        "One agent with its tools, documents and phone numbers. Needs `agents:read` (every \
         role).",
    );

async fn agent_view(
    cx: Cx,
    (agent_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Agent>, ApiError> {
    Ok(Data(cx.service().agent_view(&actor, &agent_id).await?))
}

const AGENT_UPDATE: Operation = Operation::patch("/api/agents/{agent_id}", handler!(agent_update))
    .tagged_write()
    .doc(
        "Update an agent",
        "Changes any field of an agent; the three id lists, when given, replace the current \
         ones (numbers left out of `assigned_phone_number_ids` are unassigned). Needs \
         `agents:write` (agent_manager or admin).",
    );

async fn agent_update(
    cx: Cx,
    (agent_id,): (String,),
    (actor, Json(input)): (Actor, Json<AgentUpdate>),
) -> Result<Data<Agent>, ApiError> {
    Ok(Data(
        cx.service().agent_update(&actor, &agent_id, input).await?,
    ))
}

const AGENT_DELETE: Operation = Operation::delete("/api/agents/{agent_id}", handler!(agent_delete))
    .conditional_write()
    .doc(
        "Delete an agent",
        "Deletes an agent; its phone numbers become unassigned, and past calls keep its id and \
         name. Needs `agents:write` (agent_manager or admin).",
    );

async fn agent_delete(
    cx: Cx,
    (agent_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Agent>, ApiError> {
    Ok(cx.service().agent_delete(&actor, &agent_id).await?)
}
