//! Processing: every supported type to `completed` with its page count, unreadable files
//! refused or `failed` with a sentence, reprocessing, deletion, and a runner that dies.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::{Method, StatusCode};
use sea_orm::ConnectionTrait;
use serde_json::Value;
use voiceplane_core::knowledge::{DocumentProcessor, Extracted};
use voiceplane_suite::pdf::pdf_with_pages;
use voiceplane_suite::*;

use super::{Kb, configured, processor, settled, spawn_runner};

/// Ids of the chunks of `hits` (a search answer's `data`) of document `id`.
fn texts_of(hits: &Value, id: &str) -> Vec<String> {
    hits.as_array()
        .expect("a list")
        .iter()
        .filter(|h| h["documentation_id"] == id)
        .map(|h| h["text"].as_str().expect("text").to_owned())
        .collect()
}

async fn every_supported_type_is_processed(ctx: &TestContext) {
    let kb = Kb::start(ctx, None).await;
    let text = Kb::text(
        &kb.c,
        "Hours",
        "Our shop opens at nine. Espresso costs three euros.",
    )
    .await;
    let plain = kb
        .file("plain.txt", "text/plain", b"Plain words about zucchini.")
        .await;
    let markdown = kb
        .file(
            "guide.md",
            "text/markdown",
            b"# Heading\n\nSome **bold** words about [kumquats](https://example.com/hidden-path).\n\n- a list item about figs\n",
        )
        .await;
    let html = kb
        .file(
            "page.html",
            "text/html; charset=utf-8",
            b"<html><head><title>Title</title><style>body { color: crimson }</style>\
              <script>var tamarind = 1;</script></head>\
              <body><h1>Fruit</h1><p>Visible papaya text.</p></body></html>",
        )
        .await;
    let pdf = kb
        .file(
            "three.pdf",
            "application/pdf",
            &pdf_with_pages(&[
                "The first page mentions aardvark.",
                "The second page mentions bison.",
                "The third page mentions capybara.",
            ]),
        )
        .await;
    // Sent as octet-stream, as many clients do: the extension decides.
    let (status, v) = kb
        .upload(
            &kb.c,
            "notes.markdown",
            "application/octet-stream",
            b"Notes on *walnuts*.",
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    assert_eq!(v["data"]["content_type"], "text/markdown");
    let octet = v["data"]["documentation_id"].as_str().unwrap().to_owned();

    for (id, pages) in [
        (&text, 1),
        (&plain, 1),
        (&markdown, 1),
        (&html, 1),
        (&pdf, 3),
        (&octet, 1),
    ] {
        let doc = kb.settled(id).await;
        assert_eq!(doc["processing_status"], "completed", "{doc}");
        assert_eq!(doc["page_count"], pages, "{doc}");
        assert_eq!(doc["vector_count"], 0, "{doc}");
        assert_eq!(doc["processing_error"], Value::Null);
        assert!(doc["last_processed_at"].is_string(), "{doc}");
    }

    // What each type's text became, as search returns it.
    for (id, word) in [
        (&text, "espresso"),
        (&plain, "zucchini"),
        (&markdown, "kumquats"),
        (&markdown, "figs"),
        (&html, "papaya"),
        (&pdf, "aardvark"),
        (&pdf, "capybara"),
        (&octet, "walnuts"),
    ] {
        let (status, v) = Kb::search(&kb.c, serde_json::json!({"query": word})).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        let texts = texts_of(&v["data"], id);
        assert!(!texts.is_empty(), "{word} not found in {id}: {v}");
        assert!(texts[0].to_lowercase().contains(word), "{texts:?}");
    }
    let md = texts_of(
        &Kb::search(&kb.c, serde_json::json!({"query": "kumquats"}))
            .await
            .1["data"],
        &markdown,
    )
    .join(" ");
    for markup in ["**", "# ", "https://", "hidden-path", "]("] {
        assert!(
            !md.contains(markup),
            "markdown markup {markup:?} kept: {md}"
        );
    }
    for hidden in ["tamarind", "crimson"] {
        let (_, v) = Kb::search(&kb.c, serde_json::json!({"query": hidden})).await;
        assert_eq!(
            v["data"],
            serde_json::json!([]),
            "{hidden} is not visible text"
        );
    }

    let (_, events) =
        kb.c.get("/api/events?type=document.processed&limit=100")
            .await;
    let events = events["data"].as_array().unwrap().clone();
    assert_eq!(events.len(), 6, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["data"]["processing_status"] == "completed")
    );
    kb.stop().await;
}

async fn unreadable_files_are_refused_or_fail(ctx: &TestContext) {
    let kb = Kb::start(ctx, None).await;
    let (status, v) = kb
        .upload(&kb.c, "photo.png", "image/png", b"\x89PNG\r\n")
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{v}");
    assert!(
        v["detail"].as_str().unwrap().contains("application/pdf"),
        "{v}"
    );
    let (_, list) = kb.c.get("/api/knowledge-base").await;
    assert_eq!(list["data"], serde_json::json!([]), "nothing is stored");

    let corrupt = kb
        .file(
            "broken.pdf",
            "application/pdf",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage",
        )
        .await;
    let doc = kb.settled(&corrupt).await;
    assert_eq!(doc["processing_status"], "failed", "{doc}");
    let error = doc["processing_error"].as_str().unwrap();
    assert!(error.contains("PDF"), "{error}");
    assert_eq!(doc["vector_count"], 0);

    let pages: Vec<String> = (1..=21).map(|i| format!("Page {i}.")).collect();
    let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
    let long = kb
        .file("long.pdf", "application/pdf", &pdf_with_pages(&pages))
        .await;
    let doc = kb.settled(&long).await;
    assert_eq!(doc["processing_status"], "failed", "{doc}");
    assert!(
        doc["processing_error"].as_str().unwrap().contains("20"),
        "{doc}"
    );

    let big = kb
        .file(
            "big.txt",
            "text/plain",
            "All work and no play. ".repeat(20_000).as_bytes(),
        )
        .await;
    let doc = kb.settled(&big).await;
    assert_eq!(doc["processing_status"], "failed", "{doc}");
    assert!(
        doc["processing_error"]
            .as_str()
            .unwrap()
            .contains("256 KiB"),
        "{doc}"
    );

    let blank = kb
        .file(
            "blank.html",
            "text/html",
            b"<html><script>var x = 1;</script></html>",
        )
        .await;
    let doc = kb.settled(&blank).await;
    assert_eq!(doc["processing_status"], "failed", "{doc}");
    assert!(doc["processing_error"].is_string());

    // The failures are the documents', not the server's.
    let (status, _) = kb.c.get("/api/knowledge-base").await;
    assert_eq!(status, StatusCode::OK);
    let (_, events) = kb.c.get("/api/events?type=document.processed").await;
    assert_eq!(events["data"].as_array().unwrap().len(), 4);
    assert!(
        events["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["data"]["processing_status"] == "failed")
    );
    kb.stop().await;
}

async fn reprocess_runs_processing_again(ctx: &TestContext) {
    let kb = Kb::start(ctx, None).await;
    let id = Kb::text(&kb.c, "FAQ", "Parking is free after six.").await;
    let first = kb.settled(&id).await;
    assert_eq!(first["processing_status"], "completed");

    let (status, v) =
        kb.c.send(
            Method::POST,
            &format!("/api/knowledge-base/{id}/reprocess"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    assert_eq!(v["data"]["processing_status"], "pending");
    let again = kb.settled(&id).await;
    assert_eq!(again["processing_status"], "completed");
    assert!(
        again["last_processed_at"].as_str() > first["last_processed_at"].as_str(),
        "{first} → {again}"
    );
    // One set of chunks, not two.
    let (_, hits) = Kb::search(&kb.c, serde_json::json!({"query": "parking"})).await;
    assert_eq!(hits["data"].as_array().unwrap().len(), 1, "{hits}");

    let other = ApiCaller::bootstrap(ctx, &kb.server, "Other").await;
    for (c, path) in [
        (&other, format!("/api/knowledge-base/{id}/reprocess")),
        (
            &kb.c,
            "/api/knowledge-base/doc_0123456789abcdef/reprocess".to_owned(),
        ),
    ] {
        let (status, _) = c.send(Method::POST, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let (status, _) =
        kb.c.send(Method::POST, "/api/knowledge-base/nope/reprocess", None)
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    kb.stop().await;
}

async fn count(ctx: &TestContext, sql: &str) -> i64 {
    let row = ctx
        .repo
        .connection()
        .query_one_raw(sea_orm::Statement::from_string(
            ctx.repo.connection().get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

async fn deleting_a_document_cancels_its_processing_and_removes_its_chunks(ctx: &TestContext) {
    // No runner yet: the document's job waits.
    let service = configured(ctx, processor(), None);
    let kb = Kb::start_with(ctx, service.clone(), false).await;
    let jobs = "SELECT COUNT(*) FROM jobs WHERE kind = 'document.process'";
    let waiting = Kb::text(&kb.c, "Draft", "Never processed.").await;
    assert_eq!(count(ctx, jobs).await, 1);
    let (status, _) =
        kb.c.send(
            Method::DELETE,
            &format!("/api/knowledge-base/{waiting}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(count(ctx, jobs).await, 0, "the job went with its document");

    let (stop, task) = spawn_runner(&service, "kb-delete", Duration::from_secs(30));
    let kept = Kb::text(&kb.c, "Kept", "Lighthouse tours start at noon.").await;
    let gone = Kb::text(&kb.c, "Gone", "Lighthouse keepers retire at sixty.").await;
    settled(&kb.c, &kept).await;
    settled(&kb.c, &gone).await;
    let chunks = format!("SELECT COUNT(*) FROM kb_chunks WHERE documentation_id = '{gone}'");
    assert_eq!(count(ctx, &chunks).await, 1);
    kb.c.send(Method::DELETE, &format!("/api/knowledge-base/{gone}"), None)
        .await;
    assert_eq!(count(ctx, &chunks).await, 0);
    let (_, hits) = Kb::search(&kb.c, serde_json::json!({"query": "lighthouse"})).await;
    let ids: Vec<&str> = hits["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["documentation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [kept.as_str()]);
    stop.send(()).unwrap();
    task.await.unwrap();
    kb.stop().await;
}

/// A processor whose runs never end, like a runner that died mid-document.
struct Hangs(Arc<tokio::sync::Notify>);

#[async_trait]
impl DocumentProcessor for Hangs {
    async fn extract(&self, _: &'static str, _: Bytes) -> Result<Extracted, String> {
        self.0.notify_one();
        std::future::pending().await
    }

    fn chunk(&self, text: &str) -> Vec<String> {
        vec![text.to_owned()]
    }
}

async fn a_document_whose_runner_died_is_processed_after_restart(ctx: &TestContext) {
    let started = Arc::new(tokio::sync::Notify::new());
    let dying = configured(ctx, Arc::new(Hangs(started.clone())), None);
    let kb = Kb::start_with(ctx, dying.clone(), false).await;
    let (_stop, task) = spawn_runner(&dying, "kb-dies", Duration::from_secs(2));
    let id = Kb::text(&kb.c, "Menu", "Soup of the day: lentil.").await;
    started.notified().await;
    let (_, v) = kb.c.get(&format!("/api/knowledge-base/{id}")).await;
    assert_eq!(v["data"]["processing_status"], "processing");
    // The runner dies without handing the job back; its lease runs out.
    task.abort();
    let _ = task.await;
    ctx.clock.advance(5);

    let healthy = configured(ctx, processor(), None);
    let (stop, task) = spawn_runner(&healthy, "kb-restarted", Duration::from_secs(30));
    let doc = kb.settled(&id).await;
    assert_eq!(doc["processing_status"], "completed", "{doc}");
    stop.send(()).unwrap();
    task.await.unwrap();
    kb.stop().await;
}

db_tests!(
    every_supported_type_is_processed,
    unreadable_files_are_refused_or_fail,
    reprocess_runs_processing_again,
    deleting_a_document_cancels_its_processing_and_removes_its_chunks,
    a_document_whose_runner_died_is_processed_after_restart,
);
