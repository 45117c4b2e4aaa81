//! The one reader of query strings: decodes `?a=1&b=x` into a typed struct with serde, and
//! describes the same struct as OpenAPI query parameters, so what is read and what is
//! documented cannot drift.
//!
//! Rules, the same for every operation:
//!
//! - names and values are percent-decoded (`+` is a space); unknown names are ignored;
//! - a scalar field takes the first occurrence of its name; a sequence field (`Vec<_>`) takes
//!   every occurrence, and `name[]` counts as `name`;
//! - an integer that does not parse is a 400 whose sentence comes from the field's schema
//!   (`limit must be an integer between 1 and 100`); ranges themselves are the service's call.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::openapi::spec::Schemas;

/// Decodes `query` into `T` (see the module's rules).
pub(crate) fn read<T: DeserializeOwned + JsonSchema>(query: Option<&str>) -> Result<T, ApiError> {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let name = name.strip_suffix("[]").unwrap_or(&name);
        match fields.iter_mut().find(|(n, _)| n == name) {
            Some((_, values)) => values.push(value.into_owned()),
            None => fields.push((name.to_owned(), vec![value.into_owned()])),
        }
    }
    T::deserialize(QueryDeserializer {
        fields: fields.into_iter(),
        current: None,
    })
    .map_err(|e| ApiError::bad_request(sentence::<T>(&e)))
}

/// The OpenAPI `parameters` of `T`'s fields: name, whether required, description and schema.
pub(crate) fn parameters<T: JsonSchema>(schemas: &mut Schemas) -> Vec<Value> {
    let schema = schemas.inline_input::<T>();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = without_null(property.clone());
            // An absent parameter is simply absent: `null` is no default a query can send.
            if let Some(p) = property.as_object_mut()
                && p.get("default") == Some(&Value::Null)
            {
                p.remove("default");
            }
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"))
                .unwrap_or_else(|| json!(""));
            let mut param = json!({
                "name": name,
                "in": "query",
                "description": description,
                "schema": property,
            });
            if required.contains(&name.as_str()) {
                param["required"] = Value::Bool(true);
            }
            if param["schema"]["type"] == "array" {
                param["style"] = json!("form");
                param["explode"] = Value::Bool(true);
            }
            param
        })
        .collect()
}

/// A query parameter is absent or has a value: `null` is not something a query can say, so an
/// `Option`'s `null` alternative is dropped from its schema.
fn without_null(mut schema: Value) -> Value {
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            schema["type"] = types[0].clone();
        }
    }
    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array) {
        let rest: Vec<&Value> = any_of.iter().filter(|s| s["type"] != "null").collect();
        if let [only] = rest[..] {
            let mut merged = only.clone();
            if let (Some(m), Some(outer)) = (merged.as_object_mut(), schema.as_object()) {
                for (k, v) in outer.iter().filter(|(k, _)| *k != "anyOf") {
                    m.insert(k.clone(), v.clone());
                }
            }
            return merged;
        }
    }
    schema
}

/// The 400 sentence of a decoding failure: a field that should be an integer is described
/// with the bounds its schema declares.
fn sentence<T: JsonSchema>(err: &QueryError) -> String {
    let Some(field) = &err.field else {
        return format!("the query string is invalid: {}", err.message);
    };
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let property = schema
        .get("properties")
        .and_then(|p| p.get(field.as_str()))
        .cloned()
        .map(without_null)
        .unwrap_or(Value::Null);
    if property["type"] == "integer" {
        let (min, max) = (&property["minimum"], &property["maximum"]);
        return match (min.is_number(), max.is_number()) {
            (true, true) => format!("{field} must be an integer between {min} and {max}"),
            (true, false) => format!("{field} must be an integer of {min} or more"),
            _ => format!("{field} must be an integer"),
        };
    }
    format!("{field} is invalid: {}", err.message)
}

/// Why a query string did not decode, and in which field.
#[derive(Debug)]
struct QueryError {
    field: Option<String>,
    message: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for QueryError {}

impl de::Error for QueryError {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        Self {
            field: None,
            message: msg.to_string(),
        }
    }
}

/// The whole query string, as a map of names to their values in order.
struct QueryDeserializer {
    fields: std::vec::IntoIter<(String, Vec<String>)>,
    current: Option<(String, Vec<String>)>,
}

impl<'de> de::Deserializer<'de> for QueryDeserializer {
    type Error = QueryError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for QueryDeserializer {
    type Error = QueryError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, QueryError> {
        let Some((name, values)) = self.fields.next() else {
            return Ok(None);
        };
        let key = seed.deserialize(name.as_str().into_deserializer())?;
        self.current = Some((name, values));
        Ok(Some(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, QueryError> {
        let (name, values) = self.current.take().unwrap_or_default();
        seed.deserialize(Values(values)).map_err(|e| QueryError {
            field: Some(name),
            message: e.message,
        })
    }
}

/// Every value sent under one name.
struct Values(Vec<String>);

impl Values {
    fn first(&self) -> &str {
        self.0.first().map_or("", String::as_str)
    }

    fn parse<N: std::str::FromStr>(&self) -> Result<N, QueryError> {
        self.first()
            .parse()
            .map_err(|_| de::Error::custom("not a number"))
    }
}

macro_rules! parsed {
    ($($method:ident => $visit:ident: $ty:ty),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
            visitor.$visit(self.parse::<$ty>()?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Values {
    type Error = QueryError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
        match self.0.into_iter().next() {
            Some(first) => visitor.visit_string(first),
            None => visitor.visit_str(""),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
        let items = self.0.into_iter().map(Cow::<str>::Owned);
        visitor.visit_seq(de::value::SeqDeserializer::new(items))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, QueryError> {
        visitor.visit_enum(self.first().to_owned().into_deserializer())
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueryError> {
        visitor.visit_bool(self.parse::<bool>()?)
    }

    parsed! {
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64,
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_f32 => visit_f32: f32,
        deserialize_f64 => visit_f64: f64,
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct newtype_struct tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize, JsonSchema)]
    struct Sample {
        /// Items per page.
        #[schemars(range(min = 1, max = 100))]
        limit: Option<u32>,
        /// Zero-based.
        #[schemars(range(min = 0))]
        page: Option<u32>,
        #[schemars(required)]
        name: Option<String>,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn first_occurrence_wins_and_sequences_take_all() {
        let s: Sample = read(Some(
            "limit=5&limit=x&tags=a&other=1&tags[]=b&name=J+D%2F1&name=z",
        ))
        .unwrap();
        assert_eq!(
            s,
            Sample {
                limit: Some(5),
                page: None,
                name: Some("J D/1".into()),
                tags: vec!["a".into(), "b".into()],
            }
        );
        assert_eq!(read::<Sample>(None).unwrap(), Sample::default());
    }

    #[test]
    fn integers_that_do_not_parse_name_their_bounds() {
        for (query, detail) in [
            ("limit=x", "limit must be an integer between 1 and 100"),
            ("limit=", "limit must be an integer between 1 and 100"),
            ("limit=-1", "limit must be an integer between 1 and 100"),
            (
                "limit=99999999999",
                "limit must be an integer between 1 and 100",
            ),
            ("page=1.5", "page must be an integer of 0 or more"),
        ] {
            let err = read::<Sample>(Some(query)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{query}");
            assert_eq!(err.detail(), detail, "{query}");
        }
        // The range itself is the service's call.
        assert_eq!(read::<Sample>(Some("limit=0")).unwrap().limit, Some(0));
    }

    #[test]
    fn parameters_come_from_the_schema() {
        let mut schemas = Schemas::new();
        let params = parameters::<Sample>(&mut schemas);
        let names: Vec<&str> = params.iter().filter_map(|p| p["name"].as_str()).collect();
        // serde_json's map keeps names sorted.
        assert_eq!(names, ["limit", "name", "page", "tags"]);
        assert_eq!(params[0]["description"], "Items per page.");
        assert_eq!(params[0]["schema"]["type"], "integer");
        assert_eq!(params[0]["schema"]["maximum"], 100);
        assert_eq!(params[1]["required"], true);
        assert_eq!(params[1]["schema"]["type"], "string");
        assert!(params[0].get("required").is_none());
        assert_eq!(params[3]["explode"], true);
        assert_eq!(params[3]["schema"]["items"]["type"], "string");
    }
}
