//! The document's examples: every JSON request body and success response has one, every
//! component's `examples` and every example validate (strictly) against their schema, and the
//! bodies that are not JSON are exactly the binary and multipart ones.

use serde_json::Value;

use super::schema::Schemas;
use super::{deref, document, operations};

/// `(where, schema, example)` of every media type of request bodies and 2xx responses.
fn media_types(doc: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    let mut webhooks = Vec::new();
    for (name, item) in doc["webhooks"].as_object().into_iter().flatten() {
        webhooks.push((format!("webhook {name}"), &item["post"]));
    }
    let ops = operations(doc)
        .into_iter()
        .map(|(method, template, op)| (format!("{method} {template}"), op))
        .chain(webhooks);
    for (here, op) in ops {
        for (ct, media) in op["requestBody"]["content"]
            .as_object()
            .into_iter()
            .flatten()
        {
            out.push((format!("{here} request {ct}"), media));
        }
        for (status, response) in op["responses"].as_object().into_iter().flatten() {
            if !status.starts_with('2') {
                continue;
            }
            let response = deref(doc, response);
            for (ct, media) in response["content"].as_object().into_iter().flatten() {
                out.push((format!("{here} {status} {ct}"), media));
            }
        }
    }
    out
}

#[test]
fn every_json_body_has_an_example_that_validates() {
    let doc = document();
    let v = Schemas::of(doc);
    let mut checked = 0;
    let mut bad = Vec::new();
    for (here, media) in media_types(doc) {
        let schema = &media["schema"];
        if here.ends_with("application/json") {
            match media.get("example") {
                None => bad.push(format!("{here}: no example")),
                Some(example) => {
                    for e in v.errors(schema, example) {
                        bad.push(format!(
                            "{here}: {} at {:?}: {}",
                            e.keyword, e.at, e.message
                        ));
                    }
                    checked += 1;
                }
            }
        } else if here.ends_with("application/x-www-form-urlencoded") {
            // A provider's form: text fields.
            let example = &media["example"];
            assert!(example.is_object(), "{here}: no example");
            for e in v.errors(schema, example) {
                bad.push(format!(
                    "{here}: {} at {:?}: {}",
                    e.keyword, e.at, e.message
                ));
            }
        } else if here.ends_with("text/xml") {
            let example = media["example"].as_str().unwrap_or_default();
            assert!(example.starts_with("<?xml"), "{here}: no XML example");
        } else if here.ends_with("text/csv") {
            // A CSV upload: a header row naming `to_number`, then rows.
            let example = media["example"].as_str().unwrap_or_default();
            assert!(example.starts_with("to_number,"), "{here}: no CSV example");
            assert_eq!(schema["type"], "string", "{here}");
        } else if here.ends_with("multipart/form-data") {
            // A file upload: its example would be bytes.
            assert!(schema["properties"]["file"]["format"] == "binary", "{here}");
        } else {
            assert_eq!(
                schema["format"], "binary",
                "{here} is neither JSON nor bytes"
            );
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(checked > 100, "only {checked} examples");
}

#[test]
fn every_component_example_validates() {
    let doc = document();
    let v = Schemas::of(doc);
    let mut bad = Vec::new();
    let mut with_examples = 0;
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        let examples = schema["examples"].as_array();
        let is_object = schema["type"] == "object" || schema["oneOf"].is_array();
        if is_object && examples.is_none_or(|e| e.is_empty()) {
            bad.push(format!("{name}: an object without examples"));
        }
        let reference = serde_json::json!({"$ref": format!("#/components/schemas/{name}")});
        for example in examples.into_iter().flatten() {
            with_examples += 1;
            for e in v.errors(&reference, example) {
                bad.push(format!(
                    "{name}: {} at {:?}: {}",
                    e.keyword, e.at, e.message
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(with_examples > 40, "{with_examples}");
}
