//! Durable jobs: claimed under a lease, due by `run_at`; `unique_key` keeps a recurring job
//! single.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, integer, string, string_null, text, text_null,
};

use super::pk;

pub(super) struct M0005Jobs;

impl MigrationName for M0005Jobs {
    fn name(&self) -> &str {
        "m0005_jobs"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0005Jobs {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("jobs")
                .col(pk("job_id"))
                .col(string("kind"))
                .col(text("payload"))
                .col(string("status"))
                .col(integer("attempts"))
                .col(integer("max_attempts"))
                .col(big_integer("run_at"))
                .col(string_null("locked_by"))
                .col(big_integer_null("locked_until"))
                .col(text_null("last_error"))
                .col(string_null("unique_key"))
                .col(big_integer("created_at"))
                .col(big_integer("updated_at"))
                .take(),
        )
        .await?;
        // The claim scans queued jobs by due time and running ones by lease end.
        for (name, col) in [("ix_jobs_due", "run_at"), ("ix_jobs_lease", "locked_until")] {
            m.create_index(
                Index::create()
                    .name(name)
                    .table("jobs")
                    .col("status")
                    .col(col)
                    .take(),
            )
            .await?;
        }
        m.create_index(
            Index::create()
                .name("ux_jobs_unique_key")
                .table("jobs")
                .col("unique_key")
                .unique()
                .take(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("jobs").take()).await
    }
}
