//! Knowledge-base document processing for voiceplane: the [`DocumentProcessor`] the service
//! runs when a document is created or reprocessed.
//!
//! [`Processor::extract`] reads the text of a file of one of core's
//! [`SUPPORTED_MEDIA_TYPES`](voiceplane_core::knowledge::SUPPORTED_MEDIA_TYPES):
//!
//! - `text/plain`: the bytes as UTF-8 (invalid sequences replaced, a byte-order mark dropped);
//! - `text/markdown`: the text without markup, from pulldown-cmark's events (headings,
//!   paragraphs and list items keep their line breaks; link targets and image syntax go, code
//!   stays; embedded HTML is read like an HTML document);
//! - `text/html`: the visible text, rendered by html2text without decoration (no `<head>`,
//!   scripts or styles, no link targets);
//! - `application/pdf`: the text of each page (pdf-extract), lines of a paragraph joined so
//!   that sentences stay whole, and the page count.
//!
//! [`Processor::chunk`] splits the text into chunks of 500–800 characters that overlap by about
//! 100, cut at the largest boundary that fits (paragraph, line, sentence, then word).
//!
//! # Why the parsing is isolated
//!
//! Documents come from users, and PDF parsers are large and panic or loop on hostile or
//! broken files. So each document is bounded before and while it is read ([`Limits`]): its
//! size is checked first, a PDF's page count before any page's text is extracted, and the
//! parse runs on a dedicated thread with a large stack (deeply nested input does not overflow
//! it) inside [`std::panic::catch_unwind`], while the async caller waits for the answer with
//! a timeout. A panic becomes an `Err` ("the PDF could not be parsed"), a parse that takes too
//! long an `Err` naming the limit; the job runner records either as the document's
//! `processing_error`.
//!
//! A thread that hits the timeout is **abandoned, not killed**: Rust cannot stop a thread from
//! outside, so it keeps its CPU and memory until the parser returns (its answer is then
//! dropped). So parser threads are bounded: at most [`Processor::with_parser_threads`] (4 by
//! default) are alive at once, abandoned ones included, each holding a semaphore permit until
//! its parser returns. A document that finds them all taken waits for one without a thread of
//! its own, and its timeout starts when its parse does; if runaway parses hold them all for
//! long, the job that processes it times out and is retried later, rather than the process
//! piling up threads. The size limit bounds how much a single document can hold.
//!
//! The first [`Processor::new`] installs a process-wide panic hook that stays silent for
//! panics on the parser threads (their message may quote document content and always names
//! a source path) and hands every other panic to the hook that was installed before; the
//! processor then logs one `warn` per document, naming only the media type. pdf-extract and
//! lopdf print nothing to stdout or stderr; their `log` records (some quote content) go
//! nowhere unless the host installs a `log` backend.

mod html;
mod markdown;
mod pdf;

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Once};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use text_splitter::{Characters, ChunkConfig, TextSplitter};
use tokio::sync::Semaphore;
use voiceplane_core::knowledge::{
    APPLICATION_PDF, DocumentProcessor, Extracted, TEXT_HTML, TEXT_MARKDOWN, TEXT_PLAIN,
};

/// The name of the threads documents are parsed on; the panic hook recognizes them by it.
const THREAD_NAME: &str = "voiceplane-extract";
/// Parsers recurse on nested structures; 16 MiB is far more than any real document needs.
const STACK_SIZE: usize = 16 * 1024 * 1024;

/// Chunk sizes in characters: chunks grow to at least the lower bound when the text allows and
/// never exceed the upper one.
const CHUNK_CHARS: std::ops::Range<usize> = 500..800;
/// Characters each chunk repeats from the end of the one before, so that a passage cut by a
/// boundary is still found whole in one of them.
const CHUNK_OVERLAP: usize = 100;

/// How much work one document may cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest file read, in bytes.
    pub max_bytes: u64,
    /// The most pages a PDF may have.
    pub max_pages: u32,
    /// How long reading one document may take.
    pub timeout: Duration,
}

impl Default for Limits {
    /// 50 MiB, 2000 pages, 60 seconds.
    fn default() -> Self {
        Limits {
            max_bytes: 50 * 1024 * 1024,
            max_pages: 2000,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Parser threads alive at once by default.
const PARSER_THREADS: usize = 4;

/// The knowledge-base [`DocumentProcessor`]: bounded text extraction and chunking.
pub struct Processor {
    limits: Limits,
    splitter: TextSplitter<Characters>,
    parsers: Parsers,
}

/// Runs parses on threads of their own, at most a fixed number alive at once, however many
/// were abandoned after their timeout.
#[derive(Debug, Clone)]
struct Parsers(Arc<Semaphore>);

/// Why [`Parsers::run`] has no answer.
#[derive(Debug, PartialEq, Eq)]
enum Unanswered {
    /// The parse took longer than its timeout; its thread runs on until it returns.
    TimedOut,
    /// No thread could be started.
    NoThread,
    /// The thread ended without answering: only an unwinding `send` could do that.
    Silent,
}

impl Parsers {
    fn new(threads: usize) -> Self {
        Self(Arc::new(Semaphore::new(threads.max(1))))
    }

    /// `parse`'s answer, run on a parser thread once one is free, within `timeout` (counted
    /// from the start of the parse, not of the wait for a thread).
    async fn run<T: Send + 'static>(
        &self,
        timeout: Duration,
        parse: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Unanswered> {
        let permit = Arc::clone(&self.0)
            .acquire_owned()
            .await
            .map_err(|_| Unanswered::NoThread)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .stack_size(STACK_SIZE)
            .spawn(move || {
                // Held until the parser returns, after a timeout too: that is the bound.
                let _permit = permit;
                // After a timeout nobody waits for the answer any more.
                let _ = tx.send(parse());
            })
            .map_err(|_| Unanswered::NoThread)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(Unanswered::Silent),
            Err(_) => Err(Unanswered::TimedOut),
        }
    }
}

impl Processor {
    /// A processor that holds every document to `limits`.
    pub fn new(limits: Limits) -> Self {
        silence_parser_panics();
        let config = ChunkConfig::new(CHUNK_CHARS)
            .with_overlap(CHUNK_OVERLAP)
            .expect("the overlap is smaller than the smallest chunk")
            .with_trim(true);
        Processor {
            limits,
            splitter: TextSplitter::new(config),
            parsers: Parsers::new(PARSER_THREADS),
        }
    }

    /// Keeps at most `threads` parser threads alive at once (at least 1), abandoned ones
    /// included; 4 by default.
    pub fn with_parser_threads(mut self, threads: usize) -> Self {
        self.parsers = Parsers::new(threads);
        self
    }
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl DocumentProcessor for Processor {
    fn max_bytes(&self) -> u64 {
        self.limits.max_bytes
    }

    async fn extract(&self, media_type: &'static str, bytes: Bytes) -> Result<Extracted, String> {
        let kind = Kind::of(media_type)
            .ok_or_else(|| format!("documents of type {media_type} cannot be processed"))?;
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if size > self.limits.max_bytes {
            return Err(format!(
                "the document is larger than the {} limit",
                human_bytes(self.limits.max_bytes)
            ));
        }

        let max_pages = self.limits.max_pages;
        let parse = move || {
            let result = panic::catch_unwind(AssertUnwindSafe(|| kind.read(&bytes, max_pages)))
                .unwrap_or_else(|_| Err(kind.unreadable()));
            if PANICKED.replace(false) {
                tracing::warn!(
                    media_type,
                    "a document parser panicked; the document is reported as unreadable"
                );
            }
            result
        };
        match self.parsers.run(self.limits.timeout, parse).await {
            Ok(result) => result,
            Err(Unanswered::Silent) => Err(kind.unreadable()),
            Err(Unanswered::NoThread) => Err(
                "the document could not be processed now (no thread is available); try again later"
                    .to_owned(),
            ),
            Err(Unanswered::TimedOut) => Err(format!(
                "processing the document took longer than {}",
                human_duration(self.limits.timeout)
            )),
        }
    }

    fn chunk(&self, text: &str) -> Vec<String> {
        self.splitter
            .chunks(text)
            .filter(|chunk| !chunk.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// The supported media types, as the parser thread handles them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Markdown,
    Html,
    Pdf,
}

impl Kind {
    fn of(media_type: &str) -> Option<Kind> {
        match media_type {
            TEXT_PLAIN => Some(Kind::Plain),
            TEXT_MARKDOWN => Some(Kind::Markdown),
            TEXT_HTML => Some(Kind::Html),
            APPLICATION_PDF => Some(Kind::Pdf),
            _ => None,
        }
    }

    /// The text of `bytes`; runs on the parser thread.
    fn read(self, bytes: &[u8], max_pages: u32) -> Result<Extracted, String> {
        let (text, pages) = match self {
            Kind::Plain => (text_of(bytes).replace("\r\n", "\n"), 1),
            Kind::Markdown => (markdown::to_text(&text_of(bytes)), 1),
            Kind::Html => (html::to_text(bytes).map_err(|()| self.unreadable())?, 1),
            Kind::Pdf => pdf::to_text(bytes, max_pages)?,
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(match self {
                Kind::Pdf => "no text could be extracted from the PDF (scanned PDFs need OCR, \
                              which is not supported); upload a PDF with a text layer or the \
                              text itself"
                    .to_owned(),
                _ => "the document has no text".to_owned(),
            });
        }
        Ok(Extracted {
            text: text.to_owned(),
            pages,
        })
    }

    /// The error of a document the parser failed on.
    fn unreadable(self) -> String {
        match self {
            Kind::Plain => "the text document could not be read",
            Kind::Markdown => "the Markdown document could not be read",
            Kind::Html => "the HTML document could not be read",
            Kind::Pdf => pdf::UNPARSEABLE,
        }
        .to_owned()
    }
}

/// `bytes` as UTF-8, invalid sequences replaced and a byte-order mark dropped.
fn text_of(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

thread_local! {
    /// Set by the panic hook on a parser thread, so that the thread logs once per document.
    static PANICKED: Cell<bool> = const { Cell::new(false) };
}

/// Panics on the parser threads are expected (hostile files) and answered with an `Err`; the
/// default hook would print their message, which may quote the document, and a source path.
fn silence_parser_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(THREAD_NAME) {
                PANICKED.set(true);
            } else {
                previous(info);
            }
        }));
    });
}

/// `bytes` for a sentence: "50 MiB", "1.5 MiB", "300 KiB", "12 bytes".
fn human_bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    let scaled = |unit: u64, name: &str| {
        if bytes.is_multiple_of(unit) {
            format!("{} {name}", bytes / unit)
        } else {
            let value = bytes as f64 / unit as f64;
            format!("{value:.1} {name}")
        }
    };
    if bytes >= MIB {
        scaled(MIB, "MiB")
    } else if bytes >= KIB {
        scaled(KIB, "KiB")
    } else {
        format!("{bytes} bytes")
    }
}

/// `d` for a sentence: "60 s", or "250 ms" under a second or when not whole seconds.
fn human_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Parses that hang past their timeout keep their threads, and no more than the bound are
    /// ever alive: the next parse waits (its own timeout not yet running) until a hung one
    /// returns, then runs.
    #[tokio::test]
    async fn timed_out_parser_threads_are_bounded() {
        let parsers = Parsers::new(2);
        let alive = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let hang = |release: std::sync::mpsc::Receiver<()>| {
            let (alive, most) = (Arc::clone(&alive), Arc::clone(&most));
            move || {
                let now = alive.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let _ = release.recv();
                alive.fetch_sub(1, Ordering::SeqCst);
            }
        };
        let mut releases = Vec::new();
        for _ in 0..2 {
            let (release, released) = std::sync::mpsc::channel();
            releases.push(release);
            let answer = parsers.run(Duration::from_millis(10), hang(released)).await;
            assert_eq!(answer, Err(Unanswered::TimedOut));
        }
        assert_eq!(alive.load(Ordering::SeqCst), 2, "abandoned, not killed");

        let third = tokio::spawn({
            let parsers = parsers.clone();
            async move { parsers.run(Duration::from_secs(5), || "parsed").await }
        });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(!third.is_finished(), "a third thread started beside two");
        releases.remove(0).send(()).unwrap();
        assert_eq!(third.await.unwrap(), Ok("parsed"));
        assert_eq!(most.load(Ordering::SeqCst), 2);
        releases.remove(0).send(()).unwrap();
    }

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(human_bytes(50 * 1024 * 1024), "50 MiB");
        assert_eq!(human_bytes(1024 * 1024 + 512 * 1024), "1.5 MiB");
        assert_eq!(human_bytes(300 * 1024), "300 KiB");
        assert_eq!(human_bytes(12), "12 bytes");
        assert_eq!(human_duration(Duration::from_secs(60)), "60 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
    }

    #[test]
    fn plain_text_loses_its_byte_order_mark_and_keeps_invalid_bytes_visible() {
        assert_eq!(text_of(b"\xEF\xBB\xBFhello"), "hello");
        assert_eq!(text_of(b"caf\xE9"), "caf\u{FFFD}");
    }
}
