//! Telephony integrations: stored provider credentials (never the credentials themselves), their
//! status, and the create and update bodies.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Status of a stored telephony integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IntegrationStatus {
    /// The last validation succeeded (or none ran yet).
    Active,
    /// The last validation failed.
    Invalid,
}

/// The filters of `GET /api/integrations`, beside the page parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct IntegrationFilter {
    /// Only integrations with this status.
    pub status: Option<IntegrationStatus>,
}

/// Stored telephony provider credentials; the credentials are never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Integration {
    /// `intg_` + 12 hex digits.
    pub integration_id: String,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Name.
    pub name: String,
    /// `twilio` or `telnyx`.
    #[cfg_attr(
        feature = "openapi",
        schemars(with = "crate::telephony::TelephonyProvider")
    )]
    pub provider: String,
    /// e.g. `telephony`.
    pub category: String,
    /// `active` or `invalid`.
    pub status: IntegrationStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// Body of `POST /api/integrations`. Its schema (in `schema` below) is one shape per provider,
/// told apart by `provider`, because the credentials' fields depend on it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewIntegration {
    /// Name, 1–200 characters.
    pub name: String,
    /// `twilio` or `telnyx`.
    pub provider: String,
    /// e.g. `telephony`.
    pub category: String,
    /// Provider credentials: `{account_sid, auth_token}` for twilio, `{api_key, public_key?,
    /// connection_id?}` for telnyx.
    pub credentials: serde_json::Value,
}

/// Body of `PATCH /api/integrations/{integration_id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct IntegrationUpdate {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New category.
    #[serde(default)]
    pub category: Option<String>,
    /// Replacement credentials for the same provider; the status returns to `active` until
    /// validated again.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schemars(schema_with = "schema::any_credentials"))]
    pub credentials: Option<serde_json::Value>,
}

/// The schemas of the integration bodies by provider. The bodies keep `credentials` as JSON
/// (checked by [`crate::telephony::TelephonyCredentials::parse`], whose errors name the
/// field), so the per-provider shapes are described by these schema-only types, which say
/// exactly what `parse` accepts.
#[cfg(feature = "openapi")]
mod schema {
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::NewIntegration;

    /// Twilio credentials.
    #[derive(JsonSchema)]
    #[schemars(deny_unknown_fields)]
    #[allow(dead_code)]
    pub(super) struct TwilioCredentials {
        /// The account SID: `AC` followed by 32 hex digits.
        #[schemars(regex(pattern = "^AC[0-9a-fA-F]{32}$"))]
        account_sid: String,
        /// The account's auth token; stored encrypted and never returned.
        #[schemars(length(min = 1, max = 512), extend("format" = "password", "writeOnly" = true))]
        auth_token: String,
    }

    /// Telnyx credentials.
    #[derive(JsonSchema)]
    #[schemars(deny_unknown_fields)]
    #[allow(dead_code)]
    pub(super) struct TelnyxCredentials {
        /// The API key (v2); stored encrypted and never returned.
        #[schemars(length(min = 1, max = 512), extend("format" = "password", "writeOnly" = true))]
        api_key: String,
        /// The account's public key (base64 Ed25519, 32 bytes) that signs its webhooks;
        /// required to place or receive calls.
        #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
        public_key: Option<String>,
        /// The Call Control application (connection) calls go through; required to place or
        /// receive calls.
        #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
        connection_id: Option<String>,
    }

    /// The `provider` of a Twilio integration.
    #[derive(JsonSchema)]
    #[schemars(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum TwilioProvider {
        Twilio,
    }

    /// The `provider` of a Telnyx integration.
    #[derive(JsonSchema)]
    #[schemars(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum TelnyxProvider {
        Telnyx,
    }

    /// A Twilio integration to store.
    #[derive(JsonSchema)]
    #[schemars(deny_unknown_fields)]
    #[allow(dead_code)]
    struct NewTwilioIntegration {
        /// Name, 1–200 characters.
        name: String,
        /// `twilio`.
        provider: TwilioProvider,
        /// e.g. `telephony`.
        category: String,
        /// The account's credentials.
        credentials: TwilioCredentials,
    }

    /// A Telnyx integration to store.
    #[derive(JsonSchema)]
    #[schemars(deny_unknown_fields)]
    #[allow(dead_code)]
    struct NewTelnyxIntegration {
        /// Name, 1–200 characters.
        name: String,
        /// `telnyx`.
        provider: TelnyxProvider,
        /// e.g. `telephony`.
        category: String,
        /// The account's credentials.
        credentials: TelnyxCredentials,
    }

    /// `oneOf` the providers' credentials (or `null`, which changes nothing), for a body that
    /// does not name the provider (the integration's own is meant).
    pub(super) fn any_credentials(generator: &mut SchemaGenerator) -> Schema {
        let twilio = generator.subschema_for::<TwilioCredentials>();
        let telnyx = generator.subschema_for::<TelnyxCredentials>();
        json_schema!({
            "description": "Replacement credentials of the integration's provider: \
                `{account_sid, auth_token}` for twilio, `{api_key, public_key?, \
                connection_id?}` for telnyx. The status \
                returns to `active` until validated again. Absent or `null`: unchanged.",
            "oneOf": [twilio, telnyx, {"type": "null"}],
        })
    }

    impl JsonSchema for NewIntegration {
        fn schema_name() -> Cow<'static, str> {
            "NewIntegration".into()
        }

        /// One shape per provider, told apart by `provider` (an OpenAPI discriminator).
        fn json_schema(generator: &mut SchemaGenerator) -> Schema {
            let twilio = generator.subschema_for::<NewTwilioIntegration>();
            let telnyx = generator.subschema_for::<NewTelnyxIntegration>();
            let mapping = serde_json::json!({
                "twilio": twilio.get("$ref"),
                "telnyx": telnyx.get("$ref"),
            });
            json_schema!({
                "description": "Body of `POST /api/integrations`: a name, a category and the \
                    credentials of the provider named by `provider`.",
                "oneOf": [twilio, telnyx],
                "discriminator": {"propertyName": "provider", "mapping": mapping},
            })
        }
    }
}
