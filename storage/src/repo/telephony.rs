//! Calls that happen through a provider: lookups by what a provider knows, and a call recorded
//! once per provider call id with the jobs it starts.

use async_trait::async_trait;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
    QueryTrait, TransactionTrait,
};
use voiceplane_core::idempotency::{IdempotencyRepository, KeyBinding};
use voiceplane_core::jobs::NewJob;
use voiceplane_core::model::{
    Call, CallStatus, CallType, CampaignStatus, Event, EventStamp, Integration, PhoneNumber,
};
use voiceplane_core::repo::{DialCheck, DialFacts, DialMark, TelephonyRepository};
use voiceplane_core::telephony::TelephonyProvider;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::calls::call_from;
use super::integrations::integration_from;
use super::phone_numbers::phone_number_from;
use super::{jobs, one, record_event};
use crate::SeaRepository;
use crate::convert::db_err;
use crate::entity::{call, campaign, integration, organization, phone_number};
use crate::exec::Exec;

/// Writes `call` with its event and `jobs` through `db`, unless the provider's call is
/// recorded already (the unique index tells, without a read first): whether it was written.
async fn open_call<C: Exec>(db: &C, call: &Call, event: &Event, jobs: &[NewJob]) -> Result<bool> {
    let insert = call::Entity::insert(super::calls::call_row(call)?).on_conflict(
        OnConflict::columns([call::Column::Provider, call::Column::ProviderCallId])
            .do_nothing()
            .to_owned(),
    );
    if db.run(insert.build(db.backend())).await? == 0 {
        return Ok(false);
    }
    record_event(db, &call.organization_id, event).await?;
    jobs::enqueue_many(db, jobs, call.created_at).await?;
    Ok(true)
}

/// The statuses of a call in flight, as the partial index `ix_calls_live` (m0021) is defined.
const LIVE_STATUSES: &str = "status IN ('queued', 'ringing', 'in_progress')";

/// The organization's outbound calls in flight. The statuses are written into the statement,
/// not bound: only then can a planner see that the partial index `ix_calls_live` covers them
/// (with bound values SQLite walked every outbound call of the organization, 42 ms per dial at
/// 100,000 of them).
pub fn live_outbound(organization_id: &str) -> sea_orm::Select<call::Entity> {
    debug_assert_eq!(
        [
            CallStatus::Queued.as_str(),
            CallStatus::Ringing.as_str(),
            CallStatus::InProgress.as_str()
        ],
        ["queued", "ringing", "in_progress"]
    );
    call::Entity::find()
        .filter(call::Column::OrganizationId.eq(organization_id))
        .filter(call::Column::CallType.eq(CallType::Outbound.as_str()))
        .filter(sea_orm::sea_query::Expr::cust(LIVE_STATUSES))
}

/// 429 when the organization's outbound calls `queued`, `ringing` or `in_progress` already
/// number its `max_concurrent_calls`; 422 when the credits of its calls created this month (that
/// of `now`) have reached its `monthly_credit_limit`. The organization's row is locked first
/// (Postgres; SQLite has one writer), so two dials racing on two instances count one after
/// the other.
pub(super) async fn refuse_over_limit<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    now: voiceplane_core::time::Timestamp,
) -> Result<()> {
    let Some((max_calls, max_credits)) = one(
        db,
        // FOR NO KEY UPDATE: dials queue on each other, but not on the key-share locks that
        // every insert of a row referring to the organization takes (an event, a call),
        // which a transaction ending a campaign's call holds while it waits for the campaign.
        organization::Entity::find_by_id(organization_id.to_owned())
            .lock(sea_orm::sea_query::LockType::NoKeyUpdate),
        |m| Ok((m.max_concurrent_calls, m.monthly_credit_limit)),
    )
    .await?
    else {
        return Ok(());
    };
    if let Some(limit) = max_credits {
        super::usage::refuse_out_of_credit(db, organization_id, limit, now).await?;
    }
    let Some(limit) = max_calls else {
        return Ok(());
    };
    let live = live_outbound(organization_id)
        .count(db)
        .await
        .map_err(db_err)?;
    if i64::try_from(live).unwrap_or(i64::MAX) >= limit {
        return Err(Error::TooManyRequests(format!(
            "the organization has {live} outbound calls in progress, its max_concurrent_calls; \
             dial again once one has ended"
        )));
    }
    Ok(())
}

impl SeaRepository {
    /// The call `key` was bound to, for a dial like `call` that found it bound.
    async fn bound_call(&self, call: &Call, key: &KeyBinding) -> Result<Call> {
        let org = &call.organization_id;
        let Some(bound) = self
            .idempotency_bound(&key.scope, &key.key, call.created_at)
            .await?
        else {
            return Err(Error::Conflict(
                "a request with this Idempotency-Key was being processed; retry it".to_owned(),
            ));
        };
        let call_sid = bound.for_retry(key)?;
        voiceplane_core::repo::CallRepository::call_get(self, org, &call_sid)
            .await?
            .ok_or_else(|| {
                Error::Conflict(format!(
                    "the call this Idempotency-Key created, {call_sid}, has been deleted since"
                ))
            })
    }

    async fn provider_call(
        &self,
        provider: TelephonyProvider,
        provider_call_id: &str,
    ) -> Result<Option<Call>> {
        one(
            &self.db,
            call::Entity::find()
                .filter(call::Column::Provider.eq(provider.as_str()))
                .filter(call::Column::ProviderCallId.eq(provider_call_id)),
            call_from,
        )
        .await
    }
}

#[async_trait]
impl TelephonyRepository for SeaRepository {
    async fn integration_route(
        &self,
        integration_id: &str,
    ) -> Result<Option<(Integration, String)>> {
        one(
            &self.db,
            integration::Entity::find_by_id(integration_id.to_owned()),
            |m| {
                let sealed = m.credentials_ciphertext.clone();
                Ok((integration_from(m)?, sealed))
            },
        )
        .await
    }

    async fn phone_number_find(
        &self,
        organization_id: &str,
        e164: &str,
    ) -> Result<Option<PhoneNumber>> {
        one(
            &self.db,
            phone_number::Entity::find()
                .filter(phone_number::Column::OrganizationId.eq(organization_id))
                .filter(phone_number::Column::PhoneNumber.eq(e164)),
            phone_number_from,
        )
        .await
    }

    async fn call_open(
        &self,
        call: &Call,
        event: &Event,
        jobs: &[NewJob],
        key: Option<&KeyBinding>,
    ) -> Result<(Call, bool)> {
        let known = |found: Option<Call>| match found {
            Some(c) if c.organization_id == call.organization_id => Ok((c, false)),
            Some(_) => Err(Error::Conflict(
                "the provider's call belongs to another organization".to_owned(),
            )),
            None => Err(Error::Internal(
                "a provider call id collided with a call that is gone".to_owned(),
            )),
        };
        // An incoming call is answered while the provider waits, and many can arrive at
        // once: on a SQLite file its transaction runs on the direct writer.
        let direct = match (call.call_type, self.direct()) {
            (CallType::Inbound, Some(direct)) => self
                .db
                .write_turn()
                .await
                .map_err(db_err)?
                .map(|turn| (turn, direct)),
            _ => None,
        };
        let inserted = if let Some((turn, direct)) = direct {
            let (call, event, jobs) = (call.clone(), event.clone(), jobs.to_vec());
            direct
                .write(
                    turn,
                    Box::new(move |txn| {
                        Box::pin(async move { open_call(txn, &call, &event, &jobs).await })
                    }),
                )
                .await?
        } else {
            let txn = self.db.begin().await.map_err(db_err)?;
            // The key first: a retry of a dial that committed must find its call, not be
            // refused by the limits that call now counts towards.
            if let Some(key) = key
                && !super::idempotency::bind(&txn, key, &call.call_sid, call.created_at).await?
            {
                drop(txn);
                return Ok((self.bound_call(call, key).await?, false));
            }
            if call.call_type == CallType::Outbound {
                super::suppressions::refuse_suppressed(
                    &txn,
                    &call.organization_id,
                    &call.to_number,
                    call.created_at,
                )
                .await?;
                refuse_over_limit(&txn, &call.organization_id, call.created_at).await?;
            }
            let inserted = open_call(&txn, call, event, jobs).await?;
            if inserted {
                txn.commit().await.map_err(db_err)?;
            }
            inserted
        };
        if !inserted {
            // Another request recorded this provider call first: its call is the one.
            let found = match call.provider.zip(call.provider_call_id.as_deref()) {
                Some((provider, id)) => self.provider_call(provider, id).await?,
                None => None,
            };
            return known(found);
        }
        Ok((call.clone(), true))
    }

    async fn call_dial_mark(
        &self,
        organization_id: &str,
        call_sid: &str,
        now: Timestamp,
        check: DialCheck,
        stamp: &EventStamp,
    ) -> Result<DialMark> {
        let of_org = || {
            call::Entity::find_by_id(call_sid.to_owned())
                .filter(call::Column::OrganizationId.eq(organization_id))
        };
        // Which campaign to lock is read before any lock: a call never changes campaign.
        let Some(campaign_id) = one(&self.db, of_org(), |m| Ok(m.campaign_id)).await? else {
            return Ok(DialMark::Skip);
        };
        let txn = self.db.begin().await.map_err(db_err)?;
        // The organization, its campaign, then the call (docs/ARCHITECTURE.md). The
        // organization's lock is the one suppression writes take.
        let Some(settings) = one(
            &txn,
            organization::Entity::find_by_id(organization_id.to_owned())
                .lock(sea_orm::sea_query::LockType::NoKeyUpdate),
            |m| Ok(super::retention::settings_from(&m)),
        )
        .await?
        else {
            return Ok(DialMark::Skip);
        };
        let campaign = match &campaign_id {
            Some(id) => one(
                &txn,
                campaign::Entity::find_by_id(id.clone())
                    .lock(sea_orm::sea_query::LockType::NoKeyUpdate),
                |m| {
                    CampaignStatus::parse(&m.status)
                        .ok_or_else(|| Error::Internal(format!("campaigns.status: {}", m.status)))
                },
            )
            .await?
            // A campaign deleted under its call takes its dials with it.
            .or(Some(CampaignStatus::Canceled)),
            None => None,
        };
        let Some(before) = one(&txn, of_org().lock_exclusive(), call_from).await? else {
            return Ok(DialMark::Skip);
        };
        if before.status != CallStatus::Queued
            || before.dial_started_at.is_some()
            || before.provider_call_id.is_some()
        {
            return Ok(DialMark::Skip);
        }
        let suppressed =
            super::suppressions::suppressed(&txn, organization_id, &before.to_number, now).await?;
        let out_of_credit = match settings.monthly_credit_limit {
            Some(limit) => {
                match super::usage::refuse_out_of_credit(&txn, organization_id, limit, now).await {
                    Ok(()) => false,
                    Err(Error::Unprocessable(_)) => true,
                    Err(e) => return Err(e),
                }
            }
            None => false,
        };
        let verdict = check(&DialFacts {
            call: &before,
            settings: &settings,
            campaign,
            suppressed,
            out_of_credit,
        });
        let change: voiceplane_core::repo::Change<'_, Call> = match verdict {
            None => Box::new(move |c: &mut Call| {
                c.dial_started_at = Some(now);
                Ok(())
            }),
            Some(unsent) => Box::new(move |c: &mut Call| {
                c.status = unsent.status();
                c.end_reason = Some(unsent.end_reason().to_owned());
                c.end_time = Some(now);
                c.updated_at = now.max(c.updated_at);
                Ok(())
            }),
        };
        let after =
            super::calls::write_change(&txn, organization_id, before, change, stamp).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(match verdict {
            None => DialMark::Marked(after),
            Some(unsent) => DialMark::Unsent(after, unsent),
        })
    }

    async fn calls_overdue(
        &self,
        ringing_before: Timestamp,
        talking_before: Timestamp,
        limit: u64,
    ) -> Result<Vec<Call>> {
        use sea_orm::{Condition, QueryOrder};
        super::all(
            &self.db,
            call::Entity::find()
                .filter(call::Column::Provider.is_not_null())
                .filter(call::Column::ProviderCallId.is_not_null())
                .filter(
                    Condition::any()
                        .add(
                            Condition::all()
                                .add(call::Column::Status.is_in([
                                    CallStatus::Queued.as_str(),
                                    CallStatus::Ringing.as_str(),
                                ]))
                                .add(call::Column::UpdatedAt.lt(ringing_before.as_micros())),
                        )
                        .add(
                            Condition::all()
                                .add(call::Column::Status.eq(CallStatus::InProgress.as_str()))
                                .add(call::Column::UpdatedAt.lt(talking_before.as_micros())),
                        ),
                )
                .order_by_asc(call::Column::UpdatedAt)
                .limit(limit),
            call_from,
        )
        .await
    }

    async fn call_find_provider(
        &self,
        organization_id: &str,
        provider: TelephonyProvider,
        provider_call_id: &str,
    ) -> Result<Option<Call>> {
        Ok(self
            .provider_call(provider, provider_call_id)
            .await?
            .filter(|c| c.organization_id == organization_id))
    }
}
