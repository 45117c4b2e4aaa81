//! Invariants under concurrent requests: one revocation among many, no phone number left
//! pointing at a deleted integration, never an organization without an admin, instances
//! migrating a fresh database together, and a SQLite read that waits on a lock holding up no
//! other request.

use std::sync::Arc;

use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::auth::Credentials;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_suite::*;

async fn fifty_parallel_revokes_revoke_once(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let created = ctx
        .service
        .api_key_create(
            &admin,
            NewApiKey {
                name: "victim".into(),
                role: Role::User,
                expires_at: None,
                scopes: None,
            },
        )
        .await
        .unwrap();
    let key_id = created.key.key_id.clone();
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let service = Arc::clone(&ctx.service);
        let (admin, key_id) = (admin.clone(), key_id.clone());
        tasks.push(tokio::spawn(async move {
            service.api_key_revoke(&admin, &key_id).await
        }));
    }
    let mut first = 0;
    for task in tasks {
        let out = task
            .await
            .unwrap()
            .expect("every revoke answers with the key");
        assert_eq!(out.data.status, ApiKeyStatus::Revoked);
        if out.message == "API key revoked" {
            first += 1;
        } else {
            assert_eq!(out.message, "API key was already revoked");
        }
    }
    assert_eq!(first, 1, "exactly one request revoked the key");
    let err = ctx
        .service
        .authenticate(&Credentials {
            api_key: Some(created.api_key.clone()),
            organization_id: Some(admin.organization_id.clone()),
            bearer: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unauthenticated(_)));
}

async fn integration_delete_never_orphans_a_number(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let (mut deleted, mut refused) = (0, 0);
    for round in 0..20 {
        let intg = ctx
            .service
            .integration_create(
                &admin,
                serde_json::from_value(json!({
                    "name": format!("line {round}"), "provider": "telnyx", "category": "telephony",
                    "credentials": {"api_key": "KEY0123"}
                }))
                .unwrap(),
            )
            .await
            .unwrap();
        let id = intg.integration_id.clone();
        let (s1, s2) = (Arc::clone(&ctx.service), Arc::clone(&ctx.service));
        let (a1, a2) = (admin.clone(), admin.clone());
        let (id1, id2) = (id.clone(), id.clone());
        let delete = tokio::spawn(async move { s1.integration_delete(&a1, &id1).await });
        let create = tokio::spawn(async move {
            let input: NewPhoneNumber = serde_json::from_value(json!({
                "phone_number": format!("+1415555{:04}", round), "integration_id": id2
            }))
            .unwrap();
            s2.phone_number_create(&a2, input).await
        });
        let (delete, create) = (delete.await.unwrap(), create.await.unwrap());
        match (&delete, &create) {
            (Ok(_), Err(Error::InvalidInput(_))) => deleted += 1,
            (Err(Error::Conflict(_)), Ok(n)) => {
                assert_eq!(n.integration_id.as_deref(), Some(id.as_str()));
                refused += 1;
            }
            other => panic!("round {round}: impossible outcome {other:?}"),
        }
        // Whatever happened, no number points at a missing integration.
        let numbers = ctx
            .service
            .phone_number_list(
                &admin,
                &Default::default(),
                &PageParams {
                    limit: Some(100),
                    cursor: None,
                },
            )
            .await
            .unwrap();
        for n in numbers.items {
            if let Some(i) = &n.integration_id {
                ctx.service
                    .integration_view(&admin, i)
                    .await
                    .expect("referenced integration exists");
            }
        }
    }
    assert_eq!(deleted + refused, 20);
}

async fn two_admins_demoting_each_other_leave_one_admin(ctx: &TestContext) {
    for round in 0..8 {
        let boot = ctx.bootstrap(&format!("Org {round}")).await;
        let a = ctx.actor(&boot.organization_id, &boot.api_key).await;
        let email = format!("second-{round}@example.com");
        let inv = ctx
            .service
            .invitation_create(
                &a,
                NewInvitation {
                    email: email.clone(),
                    role: Role::Admin,
                },
            )
            .await
            .unwrap();
        let user_b = format!("user_second{round:012}");
        let token = jwt_for(&user_b, Some(&email), 600);
        let member_b = ctx
            .service
            .invitation_accept(Some(&token), &inv.invite_id)
            .await
            .unwrap()
            .data;
        let b = ctx
            .service
            .authenticate(&Credentials {
                bearer: Some(token),
                organization_id: Some(boot.organization_id.clone()),
                api_key: None,
            })
            .await
            .unwrap();
        let member_a = ctx
            .service
            .member_list(&a)
            .await
            .unwrap()
            .into_iter()
            .find(|m| m.user_id == boot.user_id)
            .unwrap();
        let (s1, s2) = (Arc::clone(&ctx.service), Arc::clone(&ctx.service));
        let demote_b = tokio::spawn(async move {
            s1.member_update(
                &a,
                &member_b.membership_id,
                MemberUpdate { role: Role::User },
            )
            .await
        });
        let demote_a = tokio::spawn(async move {
            s2.member_update(
                &b,
                &member_a.membership_id,
                MemberUpdate { role: Role::User },
            )
            .await
        });
        let results = [demote_b.await.unwrap(), demote_a.await.unwrap()];
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(
            ok, 1,
            "round {round}: exactly one demotion goes through: {results:?}"
        );
        assert!(
            results.iter().any(|r| matches!(r, Err(Error::Conflict(_)))),
            "{results:?}"
        );
        let admin_actor = ctx.actor(&boot.organization_id, &boot.api_key).await;
        let admins = ctx
            .service
            .member_list(&admin_actor)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.role == Role::Admin)
            .count();
        assert_eq!(admins, 1, "round {round}");
    }
}

/// Instances starting together on a fresh database all migrate successfully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_migrations_on_a_fresh_database() {
    use voiceplane_storage::SeaRepository;
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(ctx) =
            TestContext::unmigrated(backend, "concurrent_migrations_on_a_fresh_database").await
        else {
            continue;
        };
        let mut repos = Vec::new();
        for _ in 0..4 {
            repos.push(
                SeaRepository::connect(&ctx.database_options())
                    .await
                    .unwrap(),
            );
        }
        let tasks: Vec<_> = repos
            .iter()
            .cloned()
            .map(|r| tokio::spawn(async move { r.migrate().await }))
            .collect();
        for task in tasks {
            task.await
                .unwrap()
                .expect("every instance's migration succeeds");
        }
        voiceplane_core::repo::HealthRepository::ping(&repos[0])
            .await
            .unwrap();
        for repo in repos {
            let _ = repo.connection().clone().close().await;
        }
        ctx.cleanup().await;
    }
}

db_tests!(
    fifty_parallel_revokes_revoke_once,
    integration_delete_never_orphans_a_number,
    two_admins_demoting_each_other_leave_one_admin,
);

/// Holds SQLite's WAL read locks of `db` (bytes 123–127 of its `-shm` file: `WAL_READ_LOCK(0..4)`
/// at `120 + 3 + i`, as SQLite's unix VFS lays them out), as a connection of another process
/// could: a read that starts meanwhile finds no read mark it may take and waits, retrying, until
/// they are released. An open-file-description lock conflicts with the POSIX locks SQLite takes
/// in this same process, where a plain `fcntl` lock would not. Released when dropped.
#[cfg(target_os = "linux")]
fn hold_wal_read_locks(db: &std::path::Path) -> std::fs::File {
    use nix::fcntl::{FcntlArg, fcntl};
    use nix::libc;

    let mut shm = db.as_os_str().to_owned();
    shm.push("-shm");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm)
        .unwrap();
    let lock = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 123,
        l_len: 5,
        l_pid: 0,
    };
    // A read transaction that is running holds one of them for an instant: try again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while fcntl(&file, FcntlArg::F_OFD_SETLK(&lock)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the WAL read locks stay taken"
        );
        std::thread::yield_now();
    }
    file
}

/// A calls page whose SQLite read waits on a lock does not hold up an unrelated request. On a
/// runtime with a single thread, the page's read is started and the test goes on: had the read
/// run on that thread, the test would resume only after it gave up. `/healthz` then answers
/// over HTTP while the page still waits, and the page is read once the lock is gone. SQLite
/// only: the reads that run outside sqlx are those of a SQLite file.
#[cfg(target_os = "linux")]
#[test]
fn a_read_waiting_on_a_locked_database_holds_up_no_other_request() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let ctx = TestContext::sqlite().await;
            let admin = ctx.admin("Acme").await;
            let server = TestServer::start(&ctx).await;
            let page = || {
                let service = Arc::clone(&ctx.service);
                let admin = admin.clone();
                async move {
                    service
                        .call_list(
                            &admin,
                            &CallFilter::default(),
                            &CallSearch::default(),
                            &PageParams::default(),
                        )
                        .await
                }
            };
            // Opens the reader's connection, so that the next read waits on the lock alone.
            page().await.unwrap();

            let locks = hold_wal_read_locks(ctx.sqlite_file().unwrap());
            let waiting = tokio::spawn(page());
            // The page runs up to its read, which waits.
            tokio::task::yield_now().await;
            assert!(
                !waiting.is_finished(),
                "the page's read ran on the runtime's thread and gave up before the test resumed"
            );
            let health = http_client()
                .get(server.url("/healthz"))
                .send()
                .await
                .expect("/healthz answers while the page waits");
            assert_eq!(health.status(), reqwest::StatusCode::OK);
            assert!(!waiting.is_finished(), "the page waits for the lock");
            drop(locks);
            let read = waiting.await.unwrap();
            assert!(read.is_ok(), "{read:?}");
            server.stop().await;
            ctx.cleanup().await;
        });
}
