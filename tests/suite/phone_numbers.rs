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
        .phone_number_list(&admin, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(
        page.items[0].phone_number_id, n3.phone_number_id,
        "newest first"
    );
}

db_tests!(
    phone_numbers_are_unique_per_organization,
    phone_assignment_stays_consistent_both_ways,
);
