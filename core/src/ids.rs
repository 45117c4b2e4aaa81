//! Identifier formats. Every id is a fixed prefix followed by lower-case hex, e.g.
//! `agent_3f9a0c1d2e4b5a6c`; `apikey_`, `intg_`, `whk_` and `cmp_` ids carry exactly 12 hex
//! digits.

use rand::RngExt;

use crate::error::{Error, Result};

/// Fewest hex digits of an id whose length is not fixed.
const MIN_HEX_DIGITS: usize = 12;
/// Most hex digits of an id whose length is not fixed.
const MAX_HEX_DIGITS: usize = 64;

/// Whether every byte of `s` passes `test`, looking at them all rather than stopping at the
/// first that fails: without the early exit the compiler checks many bytes at once. For the
/// checks every request makes (its organization id, the API key, the path's id), where the
/// input is nearly always valid.
pub(crate) fn every_byte(s: &str, test: impl Fn(u8) -> bool) -> bool {
    s.bytes().fold(true, |ok, b| ok & test(b))
}

/// The kinds of identifier voiceplane issues, with their prefix and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// `org_` organizations.
    Organization,
    /// `user_` users.
    User,
    /// `mem_` memberships.
    Membership,
    /// `apikey_` API keys (exactly 12 hex digits).
    ApiKey,
    /// `call_` calls.
    Call,
    /// `tool_` tools.
    Tool,
    /// `doc_` knowledge-base documents.
    Document,
    /// `agent_` agents.
    Agent,
    /// `intg_` integrations (exactly 12 hex digits).
    Integration,
    /// `phon_` phone numbers.
    PhoneNumber,
    /// `inv_` invitations.
    Invitation,
    /// `evt_` events.
    Event,
    /// `whk_` webhook endpoints (exactly 12 hex digits).
    Webhook,
    /// `dlv_` webhook deliveries.
    Delivery,
    /// `aud_` audit-log entries.
    Audit,
    /// `sup_` entries of the suppression list.
    Suppression,
    /// `cmp_` campaigns (exactly 12 hex digits).
    Campaign,
    /// `rcp_` recipients of campaigns.
    Recipient,
}

impl IdKind {
    /// Every kind of id.
    pub const ALL: [Self; 18] = [
        Self::Organization,
        Self::User,
        Self::Membership,
        Self::ApiKey,
        Self::Call,
        Self::Tool,
        Self::Document,
        Self::Agent,
        Self::Integration,
        Self::PhoneNumber,
        Self::Invitation,
        Self::Event,
        Self::Webhook,
        Self::Delivery,
        Self::Audit,
        Self::Suppression,
        Self::Campaign,
        Self::Recipient,
    ];

    /// The prefix including its underscore.
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::Organization => "org_",
            Self::User => "user_",
            Self::Membership => "mem_",
            Self::ApiKey => "apikey_",
            Self::Call => "call_",
            Self::Tool => "tool_",
            Self::Document => "doc_",
            Self::Agent => "agent_",
            Self::Integration => "intg_",
            Self::PhoneNumber => "phon_",
            Self::Invitation => "inv_",
            Self::Event => "evt_",
            Self::Webhook => "whk_",
            Self::Delivery => "dlv_",
            Self::Audit => "aud_",
            Self::Suppression => "sup_",
            Self::Campaign => "cmp_",
            Self::Recipient => "rcp_",
        }
    }

    /// How many hex digits a new id of this kind gets.
    pub const fn generated_len(self) -> usize {
        match self {
            Self::ApiKey | Self::Integration | Self::Webhook | Self::Campaign => 12,
            Self::Call => 24,
            _ => 16,
        }
    }

    /// Whether ids of this kind have exactly [`generated_len`](Self::generated_len) digits
    /// (their length is part of the API's published format) rather than [`MIN_HEX_DIGITS`] to
    /// [`MAX_HEX_DIGITS`].
    const fn fixed_len(self) -> bool {
        matches!(
            self,
            Self::ApiKey | Self::Integration | Self::Webhook | Self::Campaign
        )
    }

    /// The field name used in error messages, e.g. `agent_id`.
    pub const fn field(self) -> &'static str {
        match self {
            Self::Organization => "organization_id",
            Self::User => "user_id",
            Self::Membership => "membership_id",
            Self::ApiKey => "key_id",
            Self::Call => "call_sid",
            Self::Tool => "tool_id",
            Self::Document => "documentation_id",
            Self::Agent => "agent_id",
            Self::Integration => "integration_id",
            Self::PhoneNumber => "phone_number_id",
            Self::Invitation => "invite_id",
            Self::Event => "event_id",
            Self::Webhook => "webhook_id",
            Self::Delivery => "delivery_id",
            Self::Audit => "audit_id",
            Self::Suppression => "suppression_id",
            Self::Campaign => "campaign_id",
            Self::Recipient => "recipient_id",
        }
    }

    /// Whether `id` has this kind's format. Ids of users come from identity providers too, so
    /// they only need the prefix and a non-empty tail of `[A-Za-z0-9_-]`.
    pub fn matches(self, id: &str) -> bool {
        let Some(tail) = id.strip_prefix(self.prefix()) else {
            return false;
        };
        match self {
            Self::User => {
                !tail.is_empty()
                    && tail.len() <= 128
                    && every_byte(tail, |b| {
                        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
                    })
            }
            Self::Call => {
                !tail.is_empty()
                    && tail.len() <= 64
                    && every_byte(tail, |b| b.is_ascii_alphanumeric())
            }
            _ => {
                let hex = every_byte(tail, |b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                let len_ok = if self.fixed_len() {
                    tail.len() == self.generated_len()
                } else {
                    (MIN_HEX_DIGITS..=MAX_HEX_DIGITS).contains(&tail.len())
                };
                hex && len_ok
            }
        }
    }

    /// Checks `id` and returns it, or a 400 naming the expected format.
    pub fn parse(self, id: &str) -> Result<String> {
        self.check(id).map(|()| id.to_owned())
    }

    /// Checks `id`: [`parse`](Self::parse) for a caller that only reads it, without the copy.
    pub fn check(self, id: &str) -> Result<()> {
        if self.matches(id) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "{} `{}` is malformed: expected {}",
                self.field(),
                truncate(id, 80),
                self.describe()
            )))
        }
    }

    fn describe(self) -> String {
        match self {
            Self::User => "`user_` followed by letters, digits, `_` or `-`".to_owned(),
            Self::Call => "`call_` followed by letters and digits".to_owned(),
            k if k.fixed_len() => format!("`{}` followed by 12 hex digits", k.prefix()),
            k => format!(
                "`{}` followed by {MIN_HEX_DIGITS} to {MAX_HEX_DIGITS} hex digits",
                k.prefix()
            ),
        }
    }
}

/// Cuts user input to at most `max` characters for echoing in an error message.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Makes new identifiers; tests may substitute a deterministic one.
pub trait IdGenerator: Send + Sync + 'static {
    /// A new, unique id of `kind`.
    fn generate(&self, kind: IdKind) -> String;
}

/// Random ids from the operating system's CSPRNG-seeded thread generator.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn generate(&self, kind: IdKind) -> String {
        let mut rng = rand::rng();
        let mut id = String::with_capacity(kind.prefix().len() + kind.generated_len());
        id.push_str(kind.prefix());
        for _ in 0..kind.generated_len() {
            let n: u8 = rng.random_range(0..16);
            id.push(char::from_digit(u32::from(n), 16).unwrap_or('0'));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_the_pinned_formats() {
        let ids = RandomIds;
        for kind in IdKind::ALL {
            let id = ids.generate(kind);
            assert!(kind.matches(&id), "{id} should match {kind:?}");
        }
        let key = ids.generate(IdKind::ApiKey);
        assert_eq!(key.len(), "apikey_".len() + 12);
    }

    #[test]
    fn malformed_ids_are_rejected() {
        assert!(IdKind::ApiKey.parse("apikey_0123456789ab").is_ok());
        assert!(IdKind::ApiKey.parse("apikey_0123456789abc").is_err());
        assert!(IdKind::Agent.parse("agent_0123456789abcdef").is_ok());
        assert!(IdKind::Agent.parse("agent_XYZ").is_err());
        assert!(IdKind::Agent.parse("tool_0123456789ab").is_err());
        assert!(IdKind::Call.parse("call_abc123").is_ok());
        assert!(IdKind::Call.parse("call_").is_err());
    }

    #[test]
    fn a_too_long_id_is_told_both_bounds() {
        let long = format!("agent_{}", "a".repeat(400));
        let err = IdKind::Agent.parse(&long).unwrap_err().to_string();
        assert!(
            err.ends_with("expected `agent_` followed by 12 to 64 hex digits"),
            "{err}"
        );
        assert!(IdKind::Agent.matches(&format!("agent_{}", "a".repeat(64))));
        assert!(!IdKind::Agent.matches(&format!("agent_{}", "a".repeat(65))));
        assert!(!IdKind::Agent.matches(&format!("agent_{}", "a".repeat(11))));
    }
}
