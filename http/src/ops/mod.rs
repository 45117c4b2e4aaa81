//! The handlers, one module per area and one `async fn` per operation, named after the
//! `Service` method it calls (`agent_view`, `tool_list`, …). A handler's parameters say what it
//! reads (the path captures, then a tuple of [`Extract`](crate::endpoint::Extract) inputs in the
//! order they are checked) and its return type what it answers; the route table in
//! [`crate::router`] binds each one to its method and path, and the OpenAPI document is
//! described from those same types.

pub(crate) mod agents;
pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod calls;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod integrations;
pub(crate) mod knowledge_base;
pub(crate) mod members;
pub(crate) mod meta;
pub(crate) mod organization;
pub(crate) mod phone_numbers;
pub(crate) mod recordings;
pub(crate) mod tools;
pub(crate) mod transcripts;
pub(crate) mod voices;
pub(crate) mod webhooks;
