//! Organizations and users: the tenant every resource belongs to, and the people who sign in.

use serde::Serialize;

use crate::time::Timestamp;

/// An organization: the tenant every other resource belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Organization {
    /// `org_…`
    pub organization_id: String,
    /// Display name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

/// A person who can sign in with a JWT; `user_id` is the token's `sub`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct User {
    /// `user_…`
    pub user_id: String,
    /// E-mail address, unique.
    pub email: String,
    /// Display name.
    pub name: Option<String>,
    /// When the user was first seen.
    pub created_at: Timestamp,
    /// Last time the user authenticated with a JWT.
    pub last_login: Option<Timestamp>,
}
