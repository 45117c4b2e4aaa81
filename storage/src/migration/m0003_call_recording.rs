//! Where a call's recording is stored. SQLite adds one column per statement.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{big_integer_null, string_null, text_null};

pub(super) struct M0003CallRecording;

impl MigrationName for M0003CallRecording {
    fn name(&self) -> &str {
        "m0003_call_recording"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M0003CallRecording {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            text_null("recording_key"),
            string_null("recording_content_type"),
            big_integer_null("recording_size"),
        ] {
            m.alter_table(Table::alter().table("calls").add_column(column).take())
                .await?;
        }
        Ok(())
    }
}
