//! Usage and cost: what a call consumed (speech-to-text seconds, LLM tokens, telephony
//! minutes…), the organization's price book that turns it into credits, and the usage report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// What part of a call consumed something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UsageComponent {
    /// Speech to text.
    Stt,
    /// The language model.
    Llm,
    /// Text to speech.
    Tts,
    /// The phone line (added by itself when a provider reports the call's duration).
    Telephony,
    /// Anything else.
    Other,
}

impl UsageComponent {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stt => "stt",
            Self::Llm => "llm",
            Self::Tts => "tts",
            Self::Telephony => "telephony",
            Self::Other => "other",
        }
    }
}

/// What a quantity counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UsageUnit {
    /// Seconds (of audio, say).
    Seconds,
    /// Minutes.
    Minutes,
    /// Characters (of synthesized text, say).
    Characters,
    /// Tokens sent to a model.
    InputTokens,
    /// Tokens a model produced.
    OutputTokens,
    /// Requests.
    Requests,
}

impl UsageUnit {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Minutes => "minutes",
            Self::Characters => "characters",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
            Self::Requests => "requests",
        }
    }
}

/// One thing a call consumed, as posted.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UsageItem {
    /// The client's id of the item, 1–64 characters, unique per call: an item whose id the
    /// call holds already is not added again, so a post sent twice charges once.
    #[serde(default)]
    pub id: Option<String>,
    /// `stt`, `llm`, `tts`, `telephony` or `other`.
    pub component: UsageComponent,
    /// Who provided it (`deepgram`, `openai`, `twilio`…), 1–100 characters.
    pub provider: String,
    /// The model, when it matters to the price (at most 200 characters).
    #[serde(default)]
    pub model: Option<String>,
    /// How much, > 0.
    pub quantity: f64,
    /// What `quantity` counts.
    pub unit: UsageUnit,
}

/// Body of `POST /api/calls/{call_sid}/usage`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewUsage {
    /// 1–100 items, appended to the call's.
    pub items: Vec<UsageItem>,
}

/// Most usage items one call holds.
pub const MAX_CALL_USAGE_ITEMS: usize = 1000;

/// One line of a call's `cost_breakdown`: an item of its usage, priced when it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct UsageCharge {
    /// The client's id of the item, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The component.
    pub component: UsageComponent,
    /// The provider.
    pub provider: String,
    /// The model, if one was named.
    pub model: Option<String>,
    /// How much.
    pub quantity: f64,
    /// What `quantity` counts.
    pub unit: UsageUnit,
    /// `quantity × credits_per_unit` of the price that matched when the item was recorded;
    /// `null` when none did.
    pub credits: Option<f64>,
}

/// What one unit of something costs, in credits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Price {
    /// The component it prices.
    pub component: UsageComponent,
    /// The provider it prices, 1–100 characters.
    pub provider: String,
    /// The model it prices; without one, it prices every model of the provider that has no
    /// price of its own.
    pub model: Option<String>,
    /// The unit it prices.
    pub unit: UsageUnit,
    /// Credits per unit, ≥ 0.
    pub credits_per_unit: f64,
}

/// The organization's price book, as `GET /api/organization/prices` answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PriceBook {
    /// Its prices.
    pub prices: Vec<Price>,
}

/// A price as `PUT /api/organization/prices` takes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPrice {
    /// The component it prices.
    pub component: UsageComponent,
    /// The provider it prices, 1–100 characters.
    pub provider: String,
    /// The model it prices (at most 200 characters); without one, it prices every model of
    /// the provider that has no price of its own.
    #[serde(default)]
    pub model: Option<String>,
    /// The unit it prices.
    pub unit: UsageUnit,
    /// Credits per unit, ≥ 0.
    pub credits_per_unit: f64,
}

/// Body of `PUT /api/organization/prices`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPriceBook {
    /// At most 500 prices, no two for the same component, provider, model and unit.
    pub prices: Vec<NewPrice>,
}

/// Most prices in a price book.
pub const MAX_PRICES: usize = 500;

impl PriceBook {
    /// The credits of `quantity` of `unit` from `provider`'s `model` for `component`: the price
    /// of that model, else the provider's price without a model; `None` when neither exists.
    pub fn credits(
        &self,
        component: UsageComponent,
        provider: &str,
        model: Option<&str>,
        unit: UsageUnit,
        quantity: f64,
    ) -> Option<f64> {
        let candidates = || {
            self.prices
                .iter()
                .filter(move |p| p.component == component && p.unit == unit)
                .filter(move |p| p.provider == provider)
        };
        let exact = model.and_then(|m| candidates().find(|p| p.model.as_deref() == Some(m)));
        exact
            .or_else(|| candidates().find(|p| p.model.is_none()))
            .map(|p| p.credits_per_unit * quantity)
    }

    /// `item` priced by this book.
    pub fn charge(&self, item: UsageItem) -> UsageCharge {
        UsageCharge {
            id: item.id,
            credits: self.credits(
                item.component,
                &item.provider,
                item.model.as_deref(),
                item.unit,
                item.quantity,
            ),
            component: item.component,
            provider: item.provider,
            model: item.model,
            quantity: item.quantity,
            unit: item.unit,
        }
    }
}

/// The sum of the credits of `charges` (the items without a price count nothing).
pub fn total_credits(charges: &[UsageCharge]) -> f64 {
    charges.iter().filter_map(|c| c.credits).sum()
}

/// How `GET /api/usage` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UsageGroupBy {
    /// The UTC date of the call's `created_at`, `YYYY-MM-DD`.
    Day,
    /// The call's `agent_id`.
    Agent,
    /// The item's `component`.
    Component,
    /// The item's `provider`.
    Provider,
}

/// The query of `GET /api/usage`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct UsageFilter {
    /// Only calls created at or after this instant (RFC 3339).
    #[serde(default)]
    pub created_after: Option<Timestamp>,
    /// Only calls created before this instant (RFC 3339).
    #[serde(default)]
    pub created_before: Option<Timestamp>,
    /// Also total per `day`, `agent`, `component` or `provider`; no groups when omitted.
    #[serde(default)]
    pub group_by: Option<UsageGroupBy>,
}

/// Totals of `GET /api/usage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct UsageTotals {
    /// Calls created in the window.
    pub calls: i64,
    /// The credits of their usage items.
    pub credits: f64,
}

/// One group of `GET /api/usage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct UsageGroup {
    /// The day (`YYYY-MM-DD`), agent id, component or provider.
    pub key: String,
    /// Calls of the group: created that day or by that agent; with an item of that component
    /// or provider.
    pub calls: i64,
    /// The credits of the group's items.
    pub credits: f64,
    /// The group's quantities by unit.
    pub quantities: BTreeMap<String, f64>,
}

/// The answer of `GET /api/usage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct UsageReport {
    /// Over the window.
    pub totals: UsageTotals,
    /// One per key, in key order; empty without `group_by`.
    pub groups: Vec<UsageGroup>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(model: Option<&str>, credits_per_unit: f64) -> Price {
        Price {
            component: UsageComponent::Llm,
            provider: "openai".into(),
            model: model.map(str::to_owned),
            unit: UsageUnit::InputTokens,
            credits_per_unit,
        }
    }

    #[test]
    fn a_models_own_price_beats_the_providers() {
        let book = PriceBook {
            prices: vec![price(None, 0.001), price(Some("gpt-4o"), 0.01)],
        };
        let llm = |model, quantity| {
            book.credits(
                UsageComponent::Llm,
                "openai",
                model,
                UsageUnit::InputTokens,
                quantity,
            )
        };
        assert_eq!(llm(Some("gpt-4o"), 100.0), Some(1.0));
        assert_eq!(llm(Some("gpt-4o-mini"), 1000.0), Some(1.0));
        assert_eq!(llm(None, 1000.0), Some(1.0));
        assert_eq!(
            book.credits(
                UsageComponent::Llm,
                "openai",
                None,
                UsageUnit::OutputTokens,
                1.0
            ),
            None
        );
        assert_eq!(
            book.credits(
                UsageComponent::Stt,
                "openai",
                None,
                UsageUnit::InputTokens,
                1.0
            ),
            None
        );
    }
}
