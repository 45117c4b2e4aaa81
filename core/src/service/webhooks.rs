//! Webhook endpoints: where the organization's events are delivered, their signing secrets
//! (sealed at rest, shown only on create and rotate), test deliveries and the deliveries list.

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::crypto::CredentialCipher;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    CreatedWebhook, Delivery, EventType, NewWebhook, Outcome, REDACTED, Webhook, WebhookStatus,
    WebhookUpdate, delivery_job,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::webhooks::{Resolver, TargetPolicy, WebhookSecret};

/// How long the secret replaced by a rotation still signs deliveries, so that receivers can
/// switch to the new one without missing any.
const PREVIOUS_SECRET_SECONDS: i64 = 24 * 3600;

/// Longest `description`, in characters.
const DESCRIPTION_MAX: usize = 500;

/// Longest `url`, in bytes.
const URL_MAX: usize = 2048;

/// Checks where deliveries may be sent: an absolute `http` or `https` URL with a host that,
/// unless `policy` allows private targets, is no private address and, when a `resolver` is
/// given, resolves to none now (the sender checks again after resolving at delivery, so a name
/// whose answer changes later is caught there). Returns the URL as given, trimmed.
pub(crate) async fn check_webhook_url(
    value: &str,
    policy: &TargetPolicy,
    resolver: Option<&(dyn Resolver + '_)>,
    timeout: std::time::Duration,
) -> Result<String> {
    let value = value.trim();
    if value.len() > URL_MAX {
        return Err(Error::invalid(format!(
            "url must be at most {URL_MAX} characters"
        )));
    }
    let parsed = policy.check_url(value)?;
    if let (false, Some(url::Host::Domain(host)), Some(resolver)) =
        (policy.allow_private, parsed.host(), resolver)
    {
        let Ok(answer) = tokio::time::timeout(timeout, resolver.resolve(host)).await else {
            // No answer is not "no such name": the host may resolve to a private address, and
            // the owner would learn it only from failed deliveries.
            return Err(Error::Unavailable(format!(
                "url's host {host} could not be resolved within {} s to check that it is not \
                 a private address; try again later",
                timeout.as_secs_f64()
            )));
        };
        // A name that does not resolve yet is accepted: its deliveries fail until it does, and
        // every address it resolves to then is checked before connecting.
        for ip in answer.into_iter().flatten() {
            if let Err(private) = policy.check_addr(ip) {
                return Err(Error::invalid(format!(
                    "url's host {host} resolves to a private address ({}); private targets are \
                     not allowed",
                    private.0
                )));
            }
        }
    }
    Ok(value.to_owned())
}

impl Service {
    /// [`check_webhook_url`] with this service's resolver, under `policy`.
    pub(super) async fn check_target_url(
        &self,
        value: &str,
        policy: &TargetPolicy,
    ) -> Result<String> {
        let resolver = self.webhooks.resolver.as_ref().map(|(r, _)| r.as_ref());
        let timeout = self
            .webhooks
            .resolver
            .as_ref()
            .map_or(crate::webhooks::RESOLVE_TIMEOUT, |(_, t)| *t);
        check_webhook_url(value, policy, resolver, timeout).await
    }
}

/// Checks the subscribed event types: at least one, each a known type, none twice; or
/// exactly `["*"]` for every type.
fn check_events(events: &[String]) -> Result<Vec<String>> {
    if events.is_empty() {
        return Err(Error::invalid(
            "events must list at least one event type, or be [\"*\"]",
        ));
    }
    if events.iter().any(|e| e == "*") {
        if events.len() == 1 {
            return Ok(events.to_vec());
        }
        return Err(Error::invalid(
            "events: \"*\" stands for every type and cannot be listed with others",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for name in events {
        let known: EventType = name
            .parse()
            .map_err(|e: Error| Error::invalid(format!("events: {}", e.public_message())))?;
        if !seen.insert(known.as_str()) {
            return Err(Error::invalid(format!("events: `{name}` is listed twice")));
        }
    }
    Ok(events.to_vec())
}

fn check_description(value: Option<&str>) -> Result<Option<String>> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if v.chars().count() > DESCRIPTION_MAX {
        return Err(Error::invalid(format!(
            "description must be at most {DESCRIPTION_MAX} characters"
        )));
    }
    Ok(Some(v.to_owned()))
}

fn not_found(webhook_id: &str) -> Error {
    Error::not_found(format!("webhook {webhook_id} not found"))
}

impl Service {
    fn webhook_cipher(&self) -> Result<&CredentialCipher> {
        self.cipher.as_deref().ok_or_else(|| {
            Error::Unavailable(
                "webhook secrets cannot be stored: secrets.master_key is not configured".to_owned(),
            )
        })
    }

    /// A new secret and its sealed form, bound to the endpoint so that it cannot be moved to
    /// another row.
    fn webhook_secret(&self, webhook_id: &str) -> Result<(String, String)> {
        let secret = WebhookSecret::generate().expose();
        let sealed = self
            .webhook_cipher()?
            .seal(secret.as_bytes(), webhook_id.as_bytes())?;
        Ok((secret, sealed))
    }

    /// Creates an endpoint, enabled, with a new signing secret shown only in this answer.
    pub async fn webhook_create(&self, actor: &Actor, input: NewWebhook) -> Result<CreatedWebhook> {
        actor.require(Permission::WebhooksWrite)?;
        let url = self
            .check_target_url(&input.url, &self.webhooks.policy)
            .await?;
        let events = check_events(&input.events)?;
        let description = check_description(input.description.as_deref())?;
        let now = self.now();
        let webhook = Webhook {
            webhook_id: self.id(IdKind::Webhook),
            organization_id: actor.organization_id.clone(),
            url,
            events,
            description,
            status: WebhookStatus::Enabled,
            created_at: now,
            updated_at: now,
        };
        let (secret, sealed) = self.webhook_secret(&webhook.webhook_id)?;
        let mut audit = self.audited_change(actor, "webhook.create", "webhook");
        // That a signing secret was made, never the secret.
        audit
            .extra
            .insert("secret".to_owned(), serde_json::json!([null, REDACTED]));
        let audit = audit.entry(&webhook.webhook_id, None, Some(&webhook))?;
        self.repo.webhook_insert(&webhook, &sealed, &audit).await?;
        Ok(CreatedWebhook { webhook, secret })
    }

    /// The organization's endpoints, newest first.
    pub async fn webhook_list(&self, actor: &Actor, params: &PageParams) -> Result<Page<Webhook>> {
        actor.require(Permission::WebhooksRead)?;
        let query = PageQuery::from_params(params, IdKind::Webhook)?;
        let rows = self
            .repo
            .webhook_list(&actor.organization_id, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |w| {
            cursor_of(w.created_at, &w.webhook_id)
        }))
    }

    /// One endpoint of the organization, without its secret.
    pub async fn webhook_view(&self, actor: &Actor, webhook_id: &str) -> Result<Webhook> {
        actor.require(Permission::WebhooksRead)?;
        let id = IdKind::Webhook.parse(webhook_id)?;
        self.repo
            .webhook_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| not_found(&id))
    }

    /// Changes the given fields of an endpoint; disabling it stops its deliveries.
    pub async fn webhook_update(
        &self,
        actor: &Actor,
        webhook_id: &str,
        input: WebhookUpdate,
    ) -> Result<Webhook> {
        actor.require(Permission::WebhooksWrite)?;
        let id = IdKind::Webhook.parse(webhook_id)?;
        let url = match &input.url {
            Some(v) => Some(self.check_target_url(v, &self.webhooks.policy).await?),
            None => None,
        };
        let events = input.events.as_deref().map(check_events).transpose()?;
        let description = match &input.description {
            Some(v) => Some(check_description(Some(v))?),
            None => None,
        };
        let now = self.now();
        let change = Box::new(move |webhook: &mut Webhook| {
            if let Some(v) = url {
                webhook.url = v;
            }
            if let Some(v) = events {
                webhook.events = v;
            }
            if let Some(v) = description {
                webhook.description = v;
            }
            if let Some(v) = input.status {
                webhook.status = v;
            }
            webhook.updated_at = now.max(webhook.updated_at);
            Ok(())
        });
        let audit = self.audited_change(actor, "webhook.update", "webhook");
        self.repo
            .webhook_update(&actor.organization_id, &id, change, &audit)
            .await?
            .ok_or_else(|| not_found(&id))
    }

    /// Deletes an endpoint and the record of its deliveries.
    pub async fn webhook_delete(
        &self,
        actor: &Actor,
        webhook_id: &str,
    ) -> Result<Outcome<Webhook>> {
        actor.require(Permission::WebhooksWrite)?;
        let id = IdKind::Webhook.parse(webhook_id)?;
        let audit = self.audited_change(actor, "webhook.delete", "webhook");
        let webhook = self
            .repo
            .webhook_delete(&actor.organization_id, &id, &audit)
            .await?
            .ok_or_else(|| not_found(&id))?;
        Ok(Outcome::new(webhook, "webhook deleted"))
    }

    /// Replaces the signing secret; the previous one keeps signing for 24 hours beside it.
    /// The new secret is shown only in this answer.
    pub async fn webhook_rotate_secret(
        &self,
        actor: &Actor,
        webhook_id: &str,
    ) -> Result<CreatedWebhook> {
        actor.require(Permission::WebhooksWrite)?;
        let id = IdKind::Webhook.parse(webhook_id)?;
        let (secret, sealed) = self.webhook_secret(&id)?;
        let now = self.now();
        let webhook = self
            .repo
            .webhook_rotate_secret(
                &actor.organization_id,
                &id,
                &sealed,
                now.add_seconds(PREVIOUS_SECRET_SECONDS),
                now,
                &self.audit_entry(
                    actor,
                    "webhook.rotate_secret",
                    "webhook",
                    &id,
                    serde_json::Map::from_iter([(
                        "secret".to_owned(),
                        serde_json::json!([REDACTED, REDACTED]),
                    )]),
                ),
            )
            .await?
            .ok_or_else(|| not_found(&id))?;
        Ok(CreatedWebhook { webhook, secret })
    }

    /// Records a `webhook.test` event and schedules its delivery to this endpoint only,
    /// whatever its subscriptions and status.
    pub async fn webhook_test(&self, actor: &Actor, webhook_id: &str) -> Result<Delivery> {
        actor.require(Permission::WebhooksWrite)?;
        let id = IdKind::Webhook.parse(webhook_id)?;
        let event = self.event(
            EventType::WebhookTest,
            &serde_json::json!({ "webhook_id": id }),
            By::Creating(actor),
        )?;
        let delivery = Delivery {
            delivery_id: self.id(IdKind::Delivery),
            ..Delivery::pending(&id, &event)
        };
        let job = delivery.job(event.created_at);
        let found = self
            .repo
            .webhook_test(&actor.organization_id, &event, &delivery, &job)
            .await;
        if !self.after_write(found)? {
            return Err(not_found(&id));
        }
        Ok(delivery)
    }

    /// The deliveries to one endpoint, newest first.
    pub async fn delivery_list(
        &self,
        actor: &Actor,
        webhook_id: &str,
        params: &PageParams,
    ) -> Result<Page<Delivery>> {
        let webhook = self.webhook_view(actor, webhook_id).await?;
        let query = PageQuery::from_params(params, IdKind::Delivery)?;
        let rows = self
            .repo
            .delivery_list(&actor.organization_id, &webhook.webhook_id, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |d| {
            cursor_of(d.created_at, &d.delivery_id)
        }))
    }

    /// Makes a delivery pending again and attempts it at once.
    pub async fn delivery_retry(
        &self,
        actor: &Actor,
        webhook_id: &str,
        delivery_id: &str,
    ) -> Result<Delivery> {
        actor.require(Permission::WebhooksWrite)?;
        let webhook_id = IdKind::Webhook.parse(webhook_id)?;
        let delivery_id = IdKind::Delivery.parse(delivery_id)?;
        let now = self.now();
        let job = delivery_job(&delivery_id, now);
        let retried = self
            .repo
            .delivery_retry(
                &actor.organization_id,
                &webhook_id,
                &delivery_id,
                now,
                &job,
                &self.audit_entry(
                    actor,
                    "webhook_delivery.retry",
                    "webhook_delivery",
                    &delivery_id,
                    serde_json::Map::from_iter([(
                        "status".to_owned(),
                        serde_json::json!([null, "pending"]),
                    )]),
                ),
            )
            .await;
        self.after_write(retried)?.ok_or_else(|| {
            Error::not_found(format!(
                "delivery {delivery_id} of webhook {webhook_id} not found"
            ))
        })
    }
}
