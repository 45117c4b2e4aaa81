//! A folder of one test's own, under the system's temporary folder, removed when dropped:
//! the one way the tests make folders (the suite's [`TestContext`](crate::TestContext) holds
//! one; `storage/tests/blob` includes this file as it does `s3_env.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// An empty folder made for one test, removed with everything in it when dropped (also when
/// the test panics).
#[derive(Debug)]
pub struct TestFolder(PathBuf);

impl TestFolder {
    /// A new empty folder named `voiceplane-{prefix}-…`, unique across processes and tests.
    pub fn new(prefix: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "voiceplane-{prefix}-{nanos:x}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("the test's folder is created");
        Self(path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestFolder {
    fn drop(&mut self) {
        // A test may have removed it already (a store whose root disappears).
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
