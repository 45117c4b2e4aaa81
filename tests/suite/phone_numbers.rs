//! Phone numbers: unique per organization, and their assignment to agents kept consistent
//! from both sides.

use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

async fn phone_numbers_are_unique_per_organization(ctx: &TestContext) {
    let a = ctx.admin("A").await;
    let b = ctx.admin("B").await;
    let body = || -> NewPhoneNumber {
        serde_json::from_value(json!({"phone_number": "+442071838750", "provider": "twilio"}))
            .unwrap()
    };
    let n = ctx.service.phone_number_create(&a, body()).await.unwrap();
    assert!(voiceplane_core::ids::IdKind::PhoneNumber.matches(&n.phone_number_id));
    assert!(n.supports_inbound && n.supports_outbound);
    assert!(matches!(
        ctx.service.phone_number_create(&a, body()).await,
        Err(Error::Conflict(_))
    ));
    ctx.service.phone_number_create(&b, body()).await.unwrap();
    let no_provider: NewPhoneNumber =
        serde_json::from_value(json!({"phone_number": "+442071838751"})).unwrap();
    assert!(matches!(
        ctx.service.phone_number_create(&a, no_provider).await,
        Err(Error::InvalidInput(_))
    ));
    let bad_intg: NewPhoneNumber = serde_json::from_value(
        json!({"phone_number": "+442071838752", "integration_id": "intg_000000000000"}),
    )
    .unwrap();
    assert!(matches!(
        ctx.service.phone_number_create(&a, bad_intg).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn phone_assignment_stays_consistent_both_ways(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let n1 = ctx
        .service
        .phone_number_create(&admin, body(phone_number_body("+14155550201")))
        .await
        .unwrap();
    let n2 = ctx
        .service
        .phone_number_create(&admin, body(phone_number_body("+14155550202")))
        .await
        .unwrap();
    let n3 = ctx
        .service
        .phone_number_create(&admin, body(phone_number_body("+14155550203")))
        .await
        .unwrap();
    let mut input: NewAgent = body(agent_body("A"));
    input.assigned_phone_number_ids = vec![n1.phone_number_id.clone(), n2.phone_number_id.clone()];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    let b = ctx
        .service
        .agent_create(&admin, body(agent_body("B")))
        .await
        .unwrap();

    // Agent side: A keeps n2, takes n3, drops n1.
    let updated = ctx
        .service
        .agent_update(
            &admin,
            &a.agent_id,
            body(json!({"assigned_phone_number_ids": [n2.phone_number_id, n3.phone_number_id], "agent_name": "A2"})),
        )
        .await
        .unwrap();
    assert_eq!(updated.agent_name, "A2");
    assert_eq!(
        updated.assigned_phone_number_ids,
        vec![n2.phone_number_id.clone(), n3.phone_number_id.clone()]
    );
    let n1v = ctx
        .service
        .phone_number_view(&admin, &n1.phone_number_id)
        .await
        .unwrap();
    assert_eq!(
        (n1v.assigned_agent_id, n1v.status),
        (None, PhoneNumberStatus::Unassigned)
    );

    // Number side: n3 moves to B.
    let moved = ctx
        .service
        .phone_number_update(
            &admin,
            &n3.phone_number_id,
            body(json!({"assigned_agent_id": b.agent_id})),
        )
        .await
        .unwrap();
    assert_eq!(moved.status, PhoneNumberStatus::Assigned);
    assert_eq!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .assigned_phone_number_ids,
        vec![n2.phone_number_id.clone()]
    );
    assert_eq!(
        ctx.service
            .agent_view(&admin, &b.agent_id)
            .await
            .unwrap()
            .assigned_phone_number_ids,
        vec![n3.phone_number_id.clone()]
    );
    // Agent lists carry the same numbers.
    let listed = ctx
        .service
        .agent_list(&admin, &PageParams::default())
        .await
        .unwrap();
    let listed_b = listed
        .items
        .iter()
        .find(|x| x.agent_id == b.agent_id)
        .unwrap();
    assert_eq!(
        listed_b.assigned_phone_number_ids,
        vec![n3.phone_number_id.clone()]
    );

    // Referencing a number of another organization, or an unknown agent, is a 400.
    let other = ctx.admin("Acme").await;
    let foreign = ctx
        .service
        .phone_number_create(&other, body(phone_number_body("+14155550299")))
        .await
        .unwrap();
    let err = ctx
        .service
        .agent_update(
            &admin,
            &a.agent_id,
            body(json!({"assigned_phone_number_ids": [foreign.phone_number_id]})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains(&foreign.phone_number_id)),
        "{err:?}"
    );
    let err = ctx
        .service
        .phone_number_update(
            &admin,
            &n1.phone_number_id,
            body(json!({"assigned_agent_id": "agent_ffffffffffffffff"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");

    // Deleting an agent frees its numbers.
    let gone = ctx.service.agent_delete(&admin, &b.agent_id).await.unwrap();
    assert_eq!(gone.data.agent_id, b.agent_id);
    let n3v = ctx
        .service
        .phone_number_view(&admin, &n3.phone_number_id)
        .await
        .unwrap();
    assert_eq!(
        (n3v.assigned_agent_id, n3v.status),
        (None, PhoneNumberStatus::Unassigned)
    );
    assert!(matches!(
        ctx.service.agent_view(&admin, &b.agent_id).await,
        Err(Error::NotFound(_))
    ));

    let page = ctx
        .service
        .phone_number_list(&admin, &Default::default(), &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(
        page.items[0].phone_number_id, n3.phone_number_id,
        "newest first"
    );
}

/// `GET /api/phone-numbers?agent_id=` keeps the numbers of that agent: none for an agent with
/// none or of another organization, 400 for something that is no agent id, and every page
/// of a filtered list holds only that agent's numbers.
async fn numbers_are_listed_by_agent(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Numbers").await;
    let other = ApiCaller::bootstrap(ctx, &server, "Elsewhere").await;
    let agent = c.create("/api/agents", agent_body("Desk")).await["agent_id"].clone();
    let idle = c.create("/api/agents", agent_body("Idle")).await["agent_id"].clone();
    let foreign = other.create("/api/agents", agent_body("Theirs")).await["agent_id"].clone();
    let mut assigned = Vec::new();
    for i in 0..3 {
        let mut body = phone_number_body(&format!("+4420718387{i:02}"));
        body["assigned_agent_id"] = agent.clone();
        assigned.push(c.create("/api/phone-numbers", body).await["phone_number_id"].clone());
    }
    c.create("/api/phone-numbers", phone_number_body("+442071838799"))
        .await;
    let mut body = phone_number_body("+442071838798");
    body["assigned_agent_id"] = foreign.clone();
    other.create("/api/phone-numbers", body).await;

    let ids = |page: &serde_json::Value| -> Vec<serde_json::Value> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["phone_number_id"].clone())
            .collect()
    };
    let agent_id = agent.as_str().unwrap();
    let (status, first) = c
        .get(&format!("/api/phone-numbers?agent_id={agent_id}&limit=2"))
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(ids(&first), vec![assigned[2].clone(), assigned[1].clone()]);
    let cursor = first["pagination"]["next_cursor"].as_str().unwrap();
    let (_, second) = c
        .get(&format!(
            "/api/phone-numbers?agent_id={agent_id}&limit=2&cursor={cursor}"
        ))
        .await;
    assert_eq!(ids(&second), vec![assigned[0].clone()]);
    assert_eq!(second["pagination"]["has_more"], false);

    let (_, all) = c.get("/api/phone-numbers").await;
    assert_eq!(ids(&all).len(), 4);
    for agent in [&idle, &foreign] {
        let (status, none) = c
            .get(&format!(
                "/api/phone-numbers?agent_id={}",
                agent.as_str().unwrap()
            ))
            .await;
        assert_eq!(status, 200);
        assert_eq!(ids(&none), Vec::<serde_json::Value>::new());
    }
    let (status, err) = c.get("/api/phone-numbers?agent_id=tool_1").await;
    assert_eq!(status, 400, "{err}");
    assert!(err["detail"].as_str().unwrap().contains("agent"), "{err}");
    server.stop().await;
}

db_tests!(
    phone_numbers_are_unique_per_organization,
    phone_assignment_stays_consistent_both_ways,
    numbers_are_listed_by_agent,
);
