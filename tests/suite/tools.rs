//! Tools: listing with a total count, duplicates and bad URLs refused, and the CRUD of tools
//! that agents reference.

use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

async fn tools_list_reports_total_count(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    for i in 0..7 {
        ctx.service
            .tool_create(&admin, new_tool(&format!("tool_{i}")))
            .await
            .unwrap();
    }
    let page = ctx
        .service
        .tool_list(
            &admin,
            &PageParams {
                limit: Some(3),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.total_count, Some(7));
    assert_eq!(page.page_size(), 3);
    assert!(page.has_more);
    assert_eq!(page.items[0].tool_name, "tool_6");
    assert_eq!(page.items[0].http_method, "GET");
    assert_eq!(page.items[0].timeout_seconds, 10);
    let next = ctx
        .service
        .tool_list(
            &admin,
            &PageParams {
                limit: Some(5),
                cursor: page.next_cursor,
            },
        )
        .await
        .unwrap();
    assert_eq!(next.page_size(), 4);
    assert_eq!(next.items.last().unwrap().tool_name, "tool_0");
    assert_eq!(next.total_count, Some(7));

    let dup = ctx
        .service
        .tool_create(&admin, new_tool("tool_3"))
        .await
        .unwrap_err();
    assert!(matches!(dup, Error::Conflict(_)), "{dup:?}");
    let mut bad = new_tool("ok");
    bad.url = "ftp://x".into();
    assert!(matches!(
        ctx.service.tool_create(&admin, bad).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn tools_are_managed(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let t = ctx
        .service
        .tool_create(&admin, body(tool_body("lookup")))
        .await
        .unwrap();
    let full = ctx.service.tool_view(&admin, &t.tool_id).await.unwrap();
    assert_eq!(full, t);
    assert_eq!(full.url, "https://x.example/api");
    let updated = ctx
        .service
        .tool_update(
            &admin,
            &t.tool_id,
            body(json!({"timeout_seconds": 5, "headers": {"X-K": "v"}})),
        )
        .await
        .unwrap();
    assert_eq!(updated.timeout_seconds, 5);
    assert_eq!(updated.tool_name, "lookup", "untouched fields stay");
    assert_eq!(
        ctx.service.tool_view(&admin, &t.tool_id).await.unwrap(),
        updated
    );
    assert!(
        serde_json::from_value::<ToolUpdate>(json!({"nme": "x"})).is_err(),
        "unknown fields are refused"
    );
    assert!(matches!(
        ctx.service
            .tool_update(&admin, &t.tool_id, body(json!({"timeout_seconds": 0})))
            .await,
        Err(Error::InvalidInput(_))
    ));
    ctx.service
        .tool_create(&admin, body(tool_body("other")))
        .await
        .unwrap();
    assert!(matches!(
        ctx.service
            .tool_update(&admin, &t.tool_id, body(json!({"tool_name": "other"})))
            .await,
        Err(Error::Conflict(_))
    ));

    // Deleting a tool takes it off the agents that used it.
    let mut input: NewAgent = body(agent_body("A"));
    input.custom_tools = vec![t.tool_id.clone()];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    let deleted = ctx.service.tool_delete(&admin, &t.tool_id).await.unwrap();
    assert_eq!(deleted.data.tool_id, t.tool_id);
    assert_eq!(deleted.message, "tool deleted");
    assert!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .custom_tools
            .is_empty()
    );
    assert!(matches!(
        ctx.service.tool_view(&admin, &t.tool_id).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service.tool_delete(&admin, &t.tool_id).await,
        Err(Error::NotFound(_))
    ));
}

db_tests!(tools_list_reports_total_count, tools_are_managed,);
