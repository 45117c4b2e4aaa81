//! List parameters: `limit` and `cursor` validated, through `Service` and as 400s over HTTP.

use reqwest::StatusCode;
use voiceplane_core::Error;
use voiceplane_core::model::{CallFilter, CallSearch};
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

async fn list_parameters_are_validated(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    for limit in [0, 101] {
        let err = ctx
            .service
            .call_list(
                &admin,
                &CallFilter::default(),
                &CallSearch::default(),
                &PageParams {
                    limit: Some(limit),
                    cursor: None,
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(ref m) if m.contains("limit")),
            "{err:?}"
        );
    }
    for cursor in ["garbage!", "Zm9vYmFy", ""] {
        let err = ctx
            .service
            .tool_list(
                &admin,
                &PageParams {
                    limit: None,
                    cursor: Some(cursor.into()),
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(ref m) if m.contains("cursor")),
            "{err:?}"
        );
    }
    let page = ctx
        .service
        .call_list(
            &admin,
            &CallFilter::default(),
            &CallSearch::default(),
            &PageParams {
                limit: Some(100),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.page_size(), 0);
    assert!(!page.has_more);
    assert_eq!(page.next_cursor, None);
}

async fn bad_list_parameters_are_400(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    for q in [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=-1",
        "cursor=%%%garbage",
        "cursor=bm90LWEtY3Vyc29y",
    ] {
        for path in ["/api/calls", "/api/tools"] {
            let (status, v) = c.get(&format!("{path}?{q}")).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}?{q}: {v}");
        }
    }
    let (_, v) = c.get("/api/calls?limit=abc").await;
    assert_eq!(v["detail"], "limit must be an integer between 1 and 100");
    // A parameter a list does not know is not an error.
    assert_eq!(c.get("/api/calls?foo=bar").await.0, StatusCode::OK);
    server.stop().await;
}

db_tests!(list_parameters_are_validated, bad_list_parameters_are_400,);
