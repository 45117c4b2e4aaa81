//! Entity tags and the preconditions of conditional writes (RFC 9110 §8.8.3, §13.1.1–2).
//!
//! A resource's tag is the first 128 bits of the SHA-256 of the exact JSON body a `GET` of it
//! answers, `{"success":true,"data":…}`, as 32 lowercase hex digits in quotes. It is defined
//! here, beside the check, because a conditional write compares it inside the write's own
//! transaction, against the resource as the transaction reads it (its row locked): that is
//! what makes `If-Match` a compare-and-set that holds across instances. The HTTP adapter tags
//! the bodies it sends with the same function, so the two cannot drift apart.
//!
//! SHA-256 rather than a faster hash because the tag must be the same across processes and
//! releases (several instances behind one load balancer, a rolling upgrade).

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::repo::Change;

/// The strong entity tag of a representation: `"<first 128 bits of its SHA-256, in hex>"`.
pub fn entity_tag(representation: &[u8]) -> String {
    format!(
        "\"{}\"",
        crate::auth::to_hex(&Sha256::digest(representation)[..16])
    )
}

/// The tag of `data` as a `GET` answers it: `{"success":true,"data":<data>}`.
pub fn tag_of<T: Serialize + ?Sized>(data: &T) -> Result<String> {
    let mut body = b"{\"success\":true,\"data\":".to_vec();
    serde_json::to_writer(&mut body, data)
        .map_err(|e| Error::Internal(format!("encoding a resource to tag it: {e}")))?;
    body.push(b'}');
    Ok(entity_tag(&body))
}

/// One entity tag of an `If-Match` or `If-None-Match` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityTag {
    /// Whether it was sent as `W/"…"`.
    pub weak: bool,
    /// The opaque tag with its quotes.
    pub tag: String,
}

/// The value of an `If-Match` or `If-None-Match`: `*` or a list of entity tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tags {
    /// `*`: any current representation.
    Any,
    /// These tags (a malformed list keeps the tags read before the error, so it matches less).
    List(Vec<EntityTag>),
}

/// How two entity tags are compared (RFC 9110 §8.8.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// Both strong and the same characters (`If-Match`).
    Strong,
    /// The same characters, weak or not (`If-None-Match`).
    Weak,
}

impl Tags {
    /// Whether the current representation, tagged `etag` (strong, quoted), is one of these.
    pub fn matches(&self, etag: &str, comparison: Comparison) -> bool {
        match self {
            Self::Any => true,
            Self::List(tags) => tags
                .iter()
                .any(|t| t.tag == etag && (comparison == Comparison::Weak || !t.weak)),
        }
    }
}

/// The preconditions a write was sent with. Empty for an unconditional write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// `If-Match`: the write happens only if the current tag is one of these.
    pub if_match: Option<Tags>,
    /// `If-None-Match`: the write happens only if the current tag is none of these.
    pub if_none_match: Option<Tags>,
}

impl Preconditions {
    /// Whether there is nothing to check.
    pub fn is_empty(&self) -> bool {
        self.if_match.is_none() && self.if_none_match.is_none()
    }

    /// Whether a resource tagged `etag` satisfies them.
    pub fn hold_for_tag(&self, etag: &str) -> bool {
        self.if_match
            .as_ref()
            .is_none_or(|t| t.matches(etag, Comparison::Strong))
            && !self
                .if_none_match
                .as_ref()
                .is_some_and(|t| t.matches(etag, Comparison::Weak))
    }

    /// Fails with a 412 unless `current` (the resource as the API returns it, as the write's
    /// transaction reads it) satisfies them.
    pub fn check<T: Serialize + ?Sized>(&self, current: &T) -> Result<()> {
        if self.is_empty() || self.hold_for_tag(&tag_of(current)?) {
            Ok(())
        } else {
            Err(Error::PreconditionFailed(PRECONDITION_FAILED.to_owned()))
        }
    }
}

impl Preconditions {
    /// `before` (the resource as the write's transaction reads it) with `change` applied;
    /// fails with a 412 first when `before` does not satisfy them.
    pub fn apply<T: Serialize + Clone>(&self, before: &T, change: Change<'_, T>) -> Result<T> {
        self.check(before)?;
        let mut after = before.clone();
        change(&mut after)?;
        Ok(after)
    }
}

/// The sentence of every 412.
pub const PRECONDITION_FAILED: &str = "the precondition failed: the resource's current ETag does \
     not satisfy If-Match or If-None-Match; nothing was changed. GET it again and retry with \
     its current ETag";

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[(bool, &str)]) -> Tags {
        Tags::List(
            list.iter()
                .map(|(weak, tag)| EntityTag {
                    weak: *weak,
                    tag: (*tag).to_owned(),
                })
                .collect(),
        )
    }

    #[test]
    fn tags_are_quoted_hex_of_the_envelope() {
        let a = entity_tag(b"{\"a\":1}");
        assert_eq!(a.len(), 34);
        assert!(a.starts_with('"') && a.ends_with('"'));
        assert!(a[1..33].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, entity_tag(b"{\"a\":2}"));
        assert_eq!(
            tag_of(&serde_json::json!({"a": 1})).unwrap(),
            entity_tag(b"{\"success\":true,\"data\":{\"a\":1}}")
        );
    }

    #[test]
    fn strong_and_weak_comparison() {
        let tag = r#""abc""#;
        assert!(tags(&[(false, tag)]).matches(tag, Comparison::Strong));
        assert!(!tags(&[(true, tag)]).matches(tag, Comparison::Strong));
        assert!(tags(&[(true, tag)]).matches(tag, Comparison::Weak));
        assert!(!tags(&[(false, r#""abd""#)]).matches(tag, Comparison::Weak));
        assert!(Tags::Any.matches(tag, Comparison::Strong));
    }

    #[test]
    fn a_stale_tag_fails_and_the_current_one_passes() {
        let current = serde_json::json!({"agent_id": "agent_1", "agent_name": "a"});
        let etag = tag_of(&current).unwrap();
        let with = |if_match, if_none_match| Preconditions {
            if_match,
            if_none_match,
        };
        assert!(Preconditions::default().check(&current).is_ok());
        assert!(
            with(Some(tags(&[(false, &etag)])), None)
                .check(&current)
                .is_ok()
        );
        let stale = with(Some(tags(&[(false, r#""stale""#)])), None).check(&current);
        assert!(matches!(stale, Err(Error::PreconditionFailed(_))));
        assert!(with(Some(Tags::Any), None).check(&current).is_ok());
        assert!(with(None, Some(Tags::Any)).check(&current).is_err());
        assert!(
            with(None, Some(tags(&[(true, &etag)])))
                .check(&current)
                .is_err()
        );
    }
}
