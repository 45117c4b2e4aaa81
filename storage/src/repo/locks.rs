//! The one order in which every transaction takes its row locks (Postgres; SQLite has one
//! writer at a time and no row locks): an idempotency key's binding, the organization, a
//! campaign, a call, a recipient, then the rest (jobs, the month's credits, events,
//! versions). A transaction may skip any of them, never go back to an earlier one: of two
//! transactions that each want a row the other holds, one must then hold a later row and
//! want an earlier one, which no transaction does. docs/ARCHITECTURE.md ("Lock order")
//! lists each transaction's locks.
//!
//! Parents (the organization, a campaign) are locked `FOR NO KEY UPDATE`, never
//! `FOR UPDATE`, short of deleting them: inserting a row that refers to one (an event, a
//! call, a recipient) takes a key-share lock on it, which `FOR NO KEY UPDATE` lets through,
//! so those foreign-key checks stand outside the order.

use sea_orm::sea_query::LockType;
use sea_orm::{ConnectionTrait, EntityTrait, QuerySelect};
use voiceplane_core::Result;

use super::one;
use crate::entity::organization;

/// Locks the organization's row, first of the order after a key's binding.
pub(super) async fn organization<C: ConnectionTrait>(db: &C, organization_id: &str) -> Result<()> {
    one(
        db,
        organization::Entity::find_by_id(organization_id.to_owned()).lock(LockType::NoKeyUpdate),
        |_| Ok(()),
    )
    .await?;
    Ok(())
}
