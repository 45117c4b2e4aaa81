//! PDF text, page by page, with the page count checked before any page is read.

use std::panic::{self, AssertUnwindSafe};

use pdf_extract::{Document, PlainTextOutput, output_doc_page};

/// The error of a PDF the parser failed on.
pub(crate) const UNPARSEABLE: &str = "the PDF could not be parsed";

/// The text of the PDF `bytes` and its page count. Pages are separated by a blank line.
///
/// pdf-extract's `extract_text_from_mem_by_pages` would read every page before we could count
/// them, and stops silently at the first page it fails on; this loads the document once,
/// refuses it over `max_pages`, then reads each page on its own: a page that fails or panics
/// adds no text, and the document fails only when every page did.
pub(crate) fn to_text(bytes: &[u8], max_pages: u32) -> Result<(String, u32), String> {
    let mut doc = Document::load_mem(bytes).map_err(|_| UNPARSEABLE.to_owned())?;
    // lopdf opens documents encrypted with an empty user password itself; still encrypted
    // here means a password is needed to read it.
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("the PDF is password-protected; upload a copy without a password".to_owned());
    }

    let page_numbers: Vec<u32> = doc.get_pages().into_keys().collect();
    let total = page_numbers.len();
    let pages = u32::try_from(total).unwrap_or(u32::MAX);
    if pages == 0 {
        return Err(UNPARSEABLE.to_owned());
    }
    if pages > max_pages {
        return Err(format!(
            "the PDF has {pages} pages; the limit is {max_pages}"
        ));
    }

    let mut text = String::new();
    let mut failed = 0usize;
    for number in page_numbers {
        match panic::catch_unwind(AssertUnwindSafe(|| page_text(&doc, number))) {
            Ok(Some(page)) => {
                let page = unwrap_lines(&page);
                if !page.is_empty() {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&page);
                }
            }
            Ok(None) | Err(_) => failed += 1,
        }
    }
    if failed == total {
        return Err(UNPARSEABLE.to_owned());
    }
    Ok((text, pages))
}

/// The text of page `number`, as pdf-extract lays it out; `None` if the page cannot be read.
fn page_text(doc: &Document, number: u32) -> Option<String> {
    let mut text = String::new();
    output_doc_page(doc, &mut PlainTextOutput::new(&mut text), number).ok()?;
    Some(text)
}

/// pdf-extract ends a line with one newline and a paragraph (a larger vertical gap) with two.
/// Joining the lines of each paragraph keeps sentences whole, so that the chunker cuts at
/// sentence ends rather than wherever the page wrapped.
fn unwrap_lines(page: &str) -> String {
    let mut paragraphs = Vec::new();
    for paragraph in page.split("\n\n") {
        let joined = paragraph
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if !joined.is_empty() {
            paragraphs.push(joined);
        }
    }
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_join_and_paragraphs_stay_apart() {
        assert_eq!(
            unwrap_lines("\nThe refund policy covers\n  thirty days.\n\n\nShipping is free.\n"),
            "The refund policy covers thirty days.\n\nShipping is free."
        );
        assert_eq!(unwrap_lines(" \n \n"), "");
    }
}
