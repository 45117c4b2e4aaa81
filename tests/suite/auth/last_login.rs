//! A user's `last_login` records the last JWT sign-in, written at most once a minute, on SQLite
//! and Postgres; API keys do not touch it.

use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::time::Timestamp;
use voiceplane_suite::{TestContext, db_tests, jwt_for};

/// The `last_login` of `user_id` as the member list shows it to `admin`.
async fn last_login(ctx: &TestContext, admin: &Actor, user_id: &str) -> Option<Timestamp> {
    ctx.service
        .member_list(admin)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.user_id == user_id)
        .expect("the user is a member")
        .last_login
}

/// Authenticates `token` in `org` and returns the clock's readings just before and after.
async fn sign_in(ctx: &TestContext, org: &str, token: &str) -> (Timestamp, Timestamp) {
    let before = ctx.clock.peek();
    ctx.service
        .authenticate(&Credentials {
            bearer: Some(token.to_owned()),
            organization_id: Some(org.to_owned()),
            api_key: None,
        })
        .await
        .expect("the token authenticates");
    (before, ctx.clock.peek())
}

async fn jwt_sign_in_writes_last_login_at_most_once_a_minute(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.as_str();
    let admin = ctx.actor(org, &boot.api_key).await;
    assert_eq!(
        last_login(ctx, &admin, &boot.user_id).await,
        None,
        "an API key is not a sign-in"
    );

    let token = jwt_for(&boot.user_id, None, 600);
    let (before, after) = sign_in(ctx, org, &token).await;
    let first = last_login(ctx, &admin, &boot.user_id)
        .await
        .expect("a JWT sign-in sets last_login");
    assert!(
        before <= first && first <= after,
        "{first:?} in {before:?}..{after:?}"
    );

    ctx.clock.advance(30);
    sign_in(ctx, org, &token).await;
    assert_eq!(
        last_login(ctx, &admin, &boot.user_id).await,
        Some(first),
        "a second sign-in within the minute writes nothing"
    );

    ctx.clock.advance(31);
    let (before, after) = sign_in(ctx, org, &token).await;
    let second = last_login(ctx, &admin, &boot.user_id).await.unwrap();
    assert!(
        before <= second && second <= after,
        "{second:?} in {before:?}..{after:?}"
    );

    ctx.clock.advance(3600);
    ctx.actor(org, &boot.api_key).await;
    assert_eq!(
        last_login(ctx, &admin, &boot.user_id).await,
        Some(second),
        "API keys leave last_login alone"
    );
}

db_tests!(jwt_sign_in_writes_last_login_at_most_once_a_minute);
