//! The resources of the API, serialized with the field names of its JSON bodies.
//!
//! One module per area, named like the service and repository modules of that area; every type
//! is re-exported here, so `crate::model::Agent` names it wherever it is defined.

mod agents;
mod analysis;
mod api_keys;
mod audit;
mod calls;
mod campaigns;
mod documents;
mod events;
mod integrations;
mod members;
mod organizations;
mod phone_numbers;
mod suppressions;
mod tools;
mod usage;
mod webhooks;

pub use agents::*;
pub use analysis::*;
pub use api_keys::*;
pub use audit::*;
pub use calls::*;
pub use campaigns::*;
pub use documents::*;
pub use events::*;
pub use integrations::*;
pub use members::*;
pub use organizations::*;
pub use phone_numbers::*;
pub use suppressions::*;
pub use tools::*;
pub use usage::*;
pub use webhooks::*;

/// A state change's result and what to tell the caller about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// The resource after the change.
    pub data: T,
    /// A sentence for the response's `message`.
    pub message: String,
}

impl<T> Outcome<T> {
    /// `data` with the sentence `message`.
    pub fn new(data: T, message: impl Into<String>) -> Self {
        Self {
            data,
            message: message.into(),
        }
    }
}
