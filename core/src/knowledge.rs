//! Knowledge-base processing: the media types it reads, what the service needs from a document
//! processor (text extraction and chunking) and from an embeddings provider, and the small
//! pieces of arithmetic search needs on both databases (query terms, vector encoding, cosine).
//!
//! The service runs processing as a durable job; the heavy parsers live behind
//! [`DocumentProcessor`] (implemented by `voiceplane-extract`) and the provider behind
//! [`Embedder`] (implemented by `voiceplane-clients`), so this crate stays free of both.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::Result;

/// `text/plain`.
pub const TEXT_PLAIN: &str = "text/plain";
/// `text/markdown`.
pub const TEXT_MARKDOWN: &str = "text/markdown";
/// `text/html`.
pub const TEXT_HTML: &str = "text/html";
/// `application/pdf`.
pub const APPLICATION_PDF: &str = "application/pdf";

/// The media types a knowledge-base file may have; anything else is refused at upload (415).
pub const SUPPORTED_MEDIA_TYPES: [&str; 4] =
    [TEXT_PLAIN, TEXT_MARKDOWN, TEXT_HTML, APPLICATION_PDF];

/// The supported media type a file declared as `declared` (a `Content-Type`, parameters
/// allowed) is read as. When the declaration says nothing useful (empty,
/// `application/octet-stream`, as many clients send for every file) the file name's extension
/// decides. `None`: not a type processing can read.
pub fn media_type_of(declared: &str, filename: Option<&str>) -> Option<&'static str> {
    let essence = declared
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let by_declared = match essence.as_str() {
        "text/plain" => Some(TEXT_PLAIN),
        "text/markdown" | "text/x-markdown" => Some(TEXT_MARKDOWN),
        "text/html" | "application/xhtml+xml" => Some(TEXT_HTML),
        "application/pdf" | "application/x-pdf" => Some(APPLICATION_PDF),
        "" | "application/octet-stream" | "binary/octet-stream" => None,
        _ => return None,
    };
    by_declared.or_else(|| {
        let ext = filename?.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "txt" | "text" => Some(TEXT_PLAIN),
            "md" | "markdown" => Some(TEXT_MARKDOWN),
            "html" | "htm" | "xhtml" => Some(TEXT_HTML),
            "pdf" => Some(APPLICATION_PDF),
            _ => None,
        }
    })
}

/// The text of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The readable text, without markup; paragraphs separated by blank lines.
    pub text: String,
    /// Pages: the PDF's pages, 1 for the other types.
    pub pages: u32,
}

/// Reads documents. Implementations bound their own work (size, pages, time) and turn a
/// malformed or malicious file into an `Err`, never a panic or a hung task.
#[async_trait]
pub trait DocumentProcessor: Send + Sync {
    /// The text of `bytes`, a file of `media_type` (one of [`SUPPORTED_MEDIA_TYPES`]).
    /// `Err`: a sentence the document's owner can act on, e.g. "the PDF could not be parsed".
    async fn extract(
        &self,
        media_type: &'static str,
        bytes: Bytes,
    ) -> std::result::Result<Extracted, String>;

    /// The largest file [`extract`](Self::extract) reads: the caller stops reading a larger
    /// one after this many bytes and one more, which `extract` refuses with its sentence.
    fn max_bytes(&self) -> u64 {
        u64::MAX
    }

    /// `text` split into chunks of about 800 characters that keep sentences and paragraphs
    /// together, each overlapping the one before; empty when there is no text.
    fn chunk(&self, text: &str) -> Vec<String>;
}

/// An embeddings provider.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per input, in the order of `inputs`; a single attempt (the caller retries),
    /// batched by the implementation as the provider requires. Fails with
    /// [`crate::Error::Upstream`] or [`crate::Error::Unavailable`].
    async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>>;
}

/// The words of a search query, lower-cased, letters and digits only, at most 32 of them:
/// safe to put in a full-text query on either database, whatever the caller typed.
pub fn search_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if !terms.contains(&word) {
            terms.push(word);
        }
        if terms.len() == 32 {
            break;
        }
    }
    terms
}

/// A vector as stored: its components as little-endian `f32`, 4 bytes each.
pub fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector [`encode_vector`] stored; `None` if `bytes` is not a whole number of `f32`s.
pub fn decode_vector(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// Cosine similarity of `a` and `b`, in `[-1, 1]`; 0 when their lengths differ or either is
/// zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_win_and_octet_stream_falls_back_to_the_extension() {
        assert_eq!(
            media_type_of("text/markdown; charset=utf-8", Some("a.pdf")),
            Some(TEXT_MARKDOWN)
        );
        assert_eq!(
            media_type_of("application/octet-stream", Some("Guide.PDF")),
            Some(APPLICATION_PDF)
        );
        assert_eq!(media_type_of("", Some("notes.md")), Some(TEXT_MARKDOWN));
        assert_eq!(media_type_of("image/png", Some("a.txt")), None);
        assert_eq!(
            media_type_of("application/octet-stream", Some("a.exe")),
            None
        );
        assert_eq!(media_type_of("application/octet-stream", None), None);
    }

    #[test]
    fn search_terms_keep_words_only_once() {
        assert_eq!(
            search_terms("Refund  POLICY? refund\" OR 'x' -- ; drop"),
            ["refund", "policy", "or", "x", "drop"]
        );
        assert!(search_terms("  ** ").is_empty());
    }

    #[test]
    fn vectors_round_trip_and_compare() {
        let v = [0.5f32, -1.25, 3.0];
        assert_eq!(decode_vector(&encode_vector(&v)).as_deref(), Some(&v[..]));
        assert_eq!(decode_vector(&[0, 1, 2]), None);
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 0.0], &[0.0, 1.0])).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
    }
}
