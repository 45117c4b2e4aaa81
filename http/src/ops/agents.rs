//! `/api/agents`: the organization's AI voice agents.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Agent, AgentUpdate, AgentVersion, NewAgent, Outcome, PublishAgent};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query, TaggedData, handler};
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
        AGENT_PUBLISH,
        AGENT_VERSION_LIST,
        AGENT_VERSION_VIEW,
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
) -> Result<TaggedData<Agent>, ApiError> {
    // A read that changes nothing: the versions its authentication read answer for it too.
    let agent = cx
        .service()
        .agent_view_shared_at(&actor, &agent_id, actor.versions)
        .await?;
    Ok(TaggedData(
        cx.api.representations.agent(&agent)?,
        std::marker::PhantomData,
    ))
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

const AGENT_PUBLISH: Operation =
    Operation::post("/api/agents/{agent_id}/publish", handler!(agent_publish))
        .errors(&[409])
        .doc(
            "Publish an agent",
            "Freezes the agent's configuration as its next version (1, 2, …), never changed \
             afterwards, and deploys it to all its calls (`deployment` becomes \
             `[{version, weight: 100}]`). 409 when nothing changed since the latest version. \
             Records `agent.published`. Needs `agents:write` (agent_manager or admin).",
        );

async fn agent_publish(
    cx: Cx,
    (agent_id,): (String,),
    (actor, Json(input)): (Actor, Json<PublishAgent>),
) -> Result<Created<AgentVersion>, ApiError> {
    let version = cx.service().agent_publish(&actor, &agent_id, input).await?;
    // Relative to `…/publish`: the version under `…/versions/`.
    Ok(Created::at(
        format!("versions/{}", version.version),
        version,
    ))
}

const AGENT_VERSION_LIST: Operation = Operation::get(
    "/api/agents/{agent_id}/versions",
    handler!(agent_version_list),
)
.doc(
    "List an agent's versions",
    "The agent's published versions, newest first, each with its configuration. Needs \
     `agents:read` (every role).",
);

async fn agent_version_list(
    cx: Cx,
    (agent_id,): (String,),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<AgentVersion>, ApiError> {
    Ok(cx
        .service()
        .agent_version_list(&actor, &agent_id, &params)
        .await?)
}

const AGENT_VERSION_VIEW: Operation = Operation::get(
    "/api/agents/{agent_id}/versions/{version}",
    handler!(agent_version_view),
)
.doc(
    "Get a version of an agent",
    "One published version: its number, description, when it was published and the \
     configuration it froze. Needs `agents:read` (every role).",
);

async fn agent_version_view(
    cx: Cx,
    (agent_id, version): (String, String),
    (actor,): (Actor,),
) -> Result<Data<AgentVersion>, ApiError> {
    Ok(Data(
        cx.service()
            .agent_version_view(&actor, &agent_id, &version)
            .await?,
    ))
}
