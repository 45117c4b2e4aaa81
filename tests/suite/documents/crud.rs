//! Knowledge-base documents: text documents created, viewed, updated and deleted, and the
//! agents that reference them. (File uploads are in `recordings`.)

use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

async fn documents_are_created_and_viewed(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let doc = ctx
        .service
        .document_create_text(
            &admin,
            NewTextDocument {
                name: "Prices".into(),
                text: "Tea: 2€".into(),
            },
        )
        .await
        .unwrap();
    assert!(voiceplane_core::ids::IdKind::Document.matches(&doc.documentation_id));
    assert_eq!(doc.doc_type, DocumentType::Text);
    assert_eq!(doc.size, "Tea: 2€".len() as i64);
    assert_eq!(doc.processing_status, ProcessingStatus::Pending);
    let viewed = ctx
        .service
        .document_view(&admin, &doc.documentation_id)
        .await
        .unwrap();
    assert_eq!(viewed, doc);
    assert!(matches!(
        ctx.service
            .document_create_text(
                &admin,
                NewTextDocument {
                    name: "".into(),
                    text: "x".into()
                }
            )
            .await,
        Err(Error::InvalidInput(_))
    ));
}

async fn documents_are_managed(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let mut docs = Vec::new();
    for i in 0..3 {
        docs.push(
            ctx.service
                .document_create_text(
                    &admin,
                    NewTextDocument {
                        name: format!("d{i}"),
                        text: "t".into(),
                    },
                )
                .await
                .unwrap(),
        );
    }
    let page = ctx
        .service
        .document_list(
            &admin,
            &PageParams {
                limit: Some(2),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.items
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["d2", "d1"]
    );
    assert!(page.has_more);
    let renamed = ctx
        .service
        .document_update(
            &admin,
            &docs[0].documentation_id,
            DocumentUpdate {
                name: Some("Prices".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.service
            .document_view(&admin, &docs[0].documentation_id)
            .await
            .unwrap(),
        renamed
    );
    let mut input: NewAgent = body(agent_body("A"));
    input.kb_document_ids = vec![
        docs[0].documentation_id.clone(),
        docs[1].documentation_id.clone(),
    ];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    ctx.service
        .document_delete(&admin, &docs[0].documentation_id)
        .await
        .unwrap();
    assert_eq!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .kb_document_ids,
        vec![docs[1].documentation_id.clone()]
    );
}

db_tests!(documents_are_created_and_viewed, documents_are_managed,);
