//! Usage and cost: a call's usage items, priced by the organization's price book when they are
//! recorded, its `cost_breakdown` and derived `total_cost`; the price book; the usage report.
//! The items are written with the call (in `call_update`'s transaction), which also adds them
//! to the month's credits that `monthly_credit_limit` is checked against at dial time.

use std::collections::HashSet;

use super::{By, Service};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::idempotency::KeyBinding;
use crate::ids::IdKind;
use crate::model::{
    Call, EventType, MAX_CALL_USAGE_ITEMS, MAX_PRICES, NewPrice, NewPriceBook, NewUsage, Price,
    PriceBook, UsageCharge, UsageComponent, UsageFilter, UsageItem, UsageReport, UsageUnit,
    total_credits,
};
use crate::role::Permission;
use crate::telephony::TelephonyProvider;
use crate::validate;

/// Most items in one `POST /api/calls/{call_sid}/usage`.
const MAX_ITEMS_PER_POST: usize = 100;

/// Largest quantity of one item, and largest price per unit.
const MAX_QUANTITY: f64 = 1e12;

/// Longest client id of a usage item, in characters.
const MAX_ITEM_ID_CHARS: usize = 64;

fn checked_item(i: usize, item: UsageItem) -> Result<UsageItem> {
    let field = |name: &str| format!("items[{i}].{name}");
    if let Some(id) = &item.id
        && (!(1..=MAX_ITEM_ID_CHARS).contains(&id.chars().count())
            || id.chars().any(char::is_control))
    {
        return Err(Error::invalid(format!(
            "{} must be 1 to {MAX_ITEM_ID_CHARS} characters without control characters",
            field("id")
        )));
    }
    let provider = validate::text(&field("provider"), &item.provider, 100)?;
    let model = item
        .model
        .as_deref()
        .map(|m| validate::text(&field("model"), m, 200))
        .transpose()?;
    if !(item.quantity.is_finite() && item.quantity > 0.0 && item.quantity <= MAX_QUANTITY) {
        return Err(Error::invalid(format!(
            "{} must be a number above 0 and at most {MAX_QUANTITY}",
            field("quantity")
        )));
    }
    Ok(UsageItem {
        provider,
        model,
        ..item
    })
}

fn checked_price(i: usize, price: NewPrice) -> Result<Price> {
    let field = |name: &str| format!("prices[{i}].{name}");
    Ok(Price {
        provider: validate::text(&field("provider"), &price.provider, 100)?,
        model: price
            .model
            .as_deref()
            .map(|m| validate::text(&field("model"), m, 200))
            .transpose()?,
        credits_per_unit: validate::number(
            &field("credits_per_unit"),
            price.credits_per_unit,
            0.0,
            MAX_QUANTITY,
        )?,
        component: price.component,
        unit: price.unit,
    })
}

/// A 400 naming the first item whose id an earlier item of the post has.
fn distinct_ids(items: &[UsageItem]) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(id) = item.id.as_deref()
            && let Some(first) = seen.insert(id, i)
        {
            return Err(Error::invalid(format!(
                "items[{i}].id `{id}` repeats items[{first}].id; an id names one item of the call"
            )));
        }
    }
    Ok(())
}

/// Whether `charge` is `kept`, an item the call holds, posted again: the same id and the same
/// item (its credits may differ, the prices having changed since).
fn same_item(kept: &UsageCharge, charge: &UsageCharge) -> bool {
    kept.component == charge.component
        && kept.provider == charge.provider
        && kept.model == charge.model
        && kept.quantity == charge.quantity
        && kept.unit == charge.unit
}

/// The change that appends those of `charges` that `call` does not hold yet (by id) to it;
/// nothing when it holds them all. A 409 when an id names another item of the call.
fn append_new_charges(call: &mut Call, charges: Vec<UsageCharge>) -> Result<bool> {
    let mut new = Vec::with_capacity(charges.len());
    for (i, charge) in charges.into_iter().enumerate() {
        let kept = charge.id.as_deref().and_then(|id| {
            call.cost_breakdown
                .iter()
                .find(|c| c.id.as_deref() == Some(id))
        });
        match kept {
            None => new.push(charge),
            Some(kept) if same_item(kept, &charge) => {}
            Some(_) => {
                return Err(Error::Conflict(format!(
                    "items[{i}].id `{}` names another item of call {}; an id is the item's for \
                     good, so a retry sends the same item with it",
                    charge.id.as_deref().unwrap_or_default(),
                    call.call_sid
                )));
            }
        }
    }
    if new.is_empty() {
        return Ok(false);
    }
    append_charges(call, new)?;
    Ok(true)
}

/// The change that appends `charges` to a call: its `total_cost` becomes their sum.
pub(crate) fn append_charges(call: &mut Call, charges: Vec<UsageCharge>) -> Result<()> {
    if call.cost_breakdown.len() + charges.len() > MAX_CALL_USAGE_ITEMS {
        return Err(Error::Unprocessable(format!(
            "call {} has {} usage items; a call holds at most {MAX_CALL_USAGE_ITEMS}",
            call.call_sid,
            call.cost_breakdown.len()
        )));
    }
    call.cost_breakdown.extend(charges);
    call.total_cost = total_credits(&call.cost_breakdown);
    Ok(())
}

impl Service {
    /// Appends usage items to a call, each priced by the price book as it is now. An item
    /// whose id the call holds already is not added again.
    pub async fn call_usage_add(
        &self,
        actor: &Actor,
        call_sid: &str,
        input: NewUsage,
    ) -> Result<Call> {
        Ok(self
            .call_usage_add_keyed(actor, call_sid, input, None)
            .await?
            .0)
    }

    /// [`Service::call_usage_add`] under an `Idempotency-Key`, bound to the call in the
    /// transaction that charges it: answers the call and whether the key had charged it
    /// before (then nothing is added).
    pub async fn call_usage_add_keyed(
        &self,
        actor: &Actor,
        call_sid: &str,
        input: NewUsage,
        key: Option<&KeyBinding>,
    ) -> Result<(Call, bool)> {
        actor.require(Permission::CallsWrite)?;
        let call_sid = IdKind::Call.parse(call_sid)?;
        if let Some(call) = self.bound_call(&actor.organization_id, key).await? {
            return Ok((call, true));
        }
        if input.items.is_empty() || input.items.len() > MAX_ITEMS_PER_POST {
            return Err(Error::invalid(format!(
                "items must hold 1 to {MAX_ITEMS_PER_POST} usage items, got {}",
                input.items.len()
            )));
        }
        let items = input
            .items
            .into_iter()
            .enumerate()
            .map(|(i, item)| checked_item(i, item))
            .collect::<Result<Vec<_>>>()?;
        distinct_ids(&items)?;
        let book = self.repo.price_book(&actor.organization_id).await?;
        let charges: Vec<UsageCharge> = items.into_iter().map(|i| book.charge(i)).collect();
        let now = self.now();
        let change = Box::new(move |call: &mut Call| {
            if append_new_charges(call, charges)? {
                call.updated_at = now.max(call.updated_at);
            }
            Ok(())
        });
        let stamp = self.event_stamp(EventType::CallUpdated, By::changing(actor));
        let org = &actor.organization_id;
        let changed = match key {
            Some(key) => {
                self.repo
                    .call_update_keyed(org, &call_sid, change, &stamp, key)
                    .await
            }
            None => self
                .repo
                .call_update(org, &call_sid, change, &stamp)
                .await
                .map(|c| c.map(|c| (c, false))),
        };
        self.after_write(changed)?
            .ok_or_else(|| Error::not_found(format!("call {call_sid} not found")))
    }

    /// The `telephony` item of a call that `provider` reports lasted `seconds` (> 0): whole
    /// minutes, rounded up, priced by the organization's book.
    pub(crate) async fn telephony_charge(
        &self,
        organization_id: &str,
        provider: TelephonyProvider,
        seconds: f64,
    ) -> Result<UsageCharge> {
        let book = self.repo.price_book(organization_id).await?;
        Ok(book.charge(UsageItem {
            id: None,
            component: UsageComponent::Telephony,
            provider: provider.as_str().to_owned(),
            model: None,
            quantity: (seconds / 60.0).ceil(),
            unit: UsageUnit::Minutes,
        }))
    }

    /// The organization's price book.
    pub async fn prices_view(&self, actor: &Actor) -> Result<PriceBook> {
        actor.require(Permission::SettingsRead)?;
        self.repo.price_book(&actor.organization_id).await
    }

    /// Replaces the organization's price book. Items recorded before keep their credits.
    pub async fn prices_replace(&self, actor: &Actor, input: NewPriceBook) -> Result<PriceBook> {
        actor.require(Permission::SettingsWrite)?;
        if input.prices.len() > MAX_PRICES {
            return Err(Error::invalid(format!(
                "prices must hold at most {MAX_PRICES} prices, got {}",
                input.prices.len()
            )));
        }
        let prices = input
            .prices
            .into_iter()
            .enumerate()
            .map(|(i, p)| checked_price(i, p))
            .collect::<Result<Vec<_>>>()?;
        let mut seen = HashSet::new();
        for (i, p) in prices.iter().enumerate() {
            if !seen.insert((p.component, p.provider.as_str(), p.model.as_deref(), p.unit)) {
                return Err(Error::invalid(format!(
                    "prices[{i}] prices the same component, provider, model and unit as an \
                     earlier price"
                )));
            }
        }
        let book = PriceBook { prices };
        let audit = self.audited_change(actor, "prices.update", "prices");
        self.repo
            .price_book_set(
                &actor.organization_id,
                Box::new(move |current: &mut PriceBook| {
                    *current = book;
                    Ok(())
                }),
                &audit,
                self.now(),
            )
            .await
    }

    /// Calls and credits of the calls created in the window, in total and per group.
    pub async fn usage_report(&self, actor: &Actor, filter: &UsageFilter) -> Result<UsageReport> {
        actor.require(Permission::CallsRead)?;
        if let (Some(after), Some(before)) = (filter.created_after, filter.created_before)
            && after >= before
        {
            return Err(Error::invalid(
                "created_after must be earlier than created_before",
            ));
        }
        self.repo
            .usage_report(
                &actor.organization_id,
                filter.created_after,
                filter.created_before,
                filter.group_by,
            )
            .await
    }
}
