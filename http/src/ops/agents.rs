//! `/api/agents`: the organization's AI voice agents.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Agent, AgentUpdate, NewAgent, Outcome};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Created, Cx, Data, Json, Query};
use crate::error::ApiError;

pub(crate) async fn agent_create(
    cx: Cx,
    (): (),
    (actor, Json(input)): (Actor, Json<NewAgent>),
) -> Result<Created<Agent>, ApiError> {
    let agent = cx.service().agent_create(&actor, input).await?;
    Ok(Created::member(&cx, agent, |x| &x.agent_id))
}

pub(crate) async fn agent_list(
    cx: Cx,
    (): (),
    (actor, Query(params)): (Actor, Query<PageParams>),
) -> Result<Page<Agent>, ApiError> {
    Ok(cx.service().agent_list(&actor, &params).await?)
}

pub(crate) async fn agent_view(
    cx: Cx,
    (agent_id,): (String,),
    (actor,): (Actor,),
) -> Result<Data<Agent>, ApiError> {
    Ok(Data(cx.service().agent_view(&actor, &agent_id).await?))
}

pub(crate) async fn agent_update(
    cx: Cx,
    (agent_id,): (String,),
    (actor, Json(input)): (Actor, Json<AgentUpdate>),
) -> Result<Data<Agent>, ApiError> {
    Ok(Data(
        cx.service().agent_update(&actor, &agent_id, input).await?,
    ))
}

pub(crate) async fn agent_delete(
    cx: Cx,
    (agent_id,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Agent>, ApiError> {
    Ok(cx.service().agent_delete(&actor, &agent_id).await?)
}
