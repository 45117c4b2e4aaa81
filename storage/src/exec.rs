//! What the statements every write shares (its event, audit entry, webhook deliveries and
//! jobs) run on: any SeaORM connection or transaction, or the direct writer of a SQLite file
//! (`direct.rs`), which runs a whole transaction on one thread. Those statements are built
//! once, by SeaORM, whichever runs them.

use async_trait::async_trait;
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use voiceplane_core::Result;

use crate::convert::db_err;

/// Runs the statements of a write.
#[async_trait]
pub(crate) trait Exec: Sync {
    /// The dialect statements are built for.
    fn backend(&self) -> DbBackend;

    /// Runs `statement`; the number of rows it changed.
    async fn run(&self, statement: Statement) -> Result<u64>;

    /// The rows of `statement`, which selects two text columns.
    async fn text_pairs(&self, statement: Statement) -> Result<Vec<(String, String)>>;
}

#[async_trait]
impl<C: ConnectionTrait> Exec for C {
    fn backend(&self) -> DbBackend {
        self.get_database_backend()
    }

    async fn run(&self, statement: Statement) -> Result<u64> {
        Ok(self
            .execute_raw(statement)
            .await
            .map_err(db_err)?
            .rows_affected())
    }

    async fn text_pairs(&self, statement: Statement) -> Result<Vec<(String, String)>> {
        let rows = self.query_all_raw(statement).await.map_err(db_err)?;
        rows.iter()
            .map(|row| Ok((row.try_get_by_index(0)?, row.try_get_by_index(1)?)))
            .collect::<std::result::Result<_, sea_orm::TryGetError>>()
            .map_err(|e| db_err(e.into()))
    }
}
