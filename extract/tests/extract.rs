//! What the knowledge base gets from each kind of document, and what a user is told when a
//! document cannot be read.

#[path = "../../tests/support/pdf.rs"]
mod pdf;

use std::time::Duration;

use bytes::Bytes;
use lopdf::Document;
use pdf::pdf_with_pages;
use voiceplane_core::knowledge::{
    APPLICATION_PDF, DocumentProcessor, Extracted, TEXT_HTML, TEXT_MARKDOWN, TEXT_PLAIN,
};
use voiceplane_extract::{Limits, Processor};

async fn extract(media_type: &'static str, bytes: impl Into<Bytes>) -> Result<Extracted, String> {
    Processor::new(Limits::default())
        .extract(media_type, bytes.into())
        .await
}

#[tokio::test]
async fn plain_text_is_read_as_utf8() {
    let doc = extract(
        TEXT_PLAIN,
        "\u{feff}Opening hours: 9 to 5.\r\nClosed on Sundays.\n",
    )
    .await
    .unwrap();
    assert_eq!(doc.text, "Opening hours: 9 to 5.\nClosed on Sundays.");
    assert_eq!(doc.pages, 1);
}

#[tokio::test]
async fn markdown_loses_its_markup_but_keeps_its_words_and_code() {
    let doc = extract(
        TEXT_MARKDOWN,
        "# Returns\n\nSend it back within *thirty* days, see [the form](https://example.com/form).\n\n\
         ![logo](https://example.com/logo.png)\n\n* Keep the receipt\n* Use `RMA-42` as reference\n",
    )
    .await
    .unwrap();
    assert_eq!(doc.pages, 1);
    for absent in ["#", "*", "example.com", "](", "!["] {
        assert!(!doc.text.contains(absent), "{absent:?} in {:?}", doc.text);
    }
    assert!(
        doc.text
            .starts_with("Returns\n\nSend it back within thirty days, see the form.")
    );
    assert!(
        doc.text
            .contains("Keep the receipt\nUse RMA-42 as reference")
    );
}

#[tokio::test]
async fn html_gives_the_visible_text_without_scripts_or_styles() {
    let doc = extract(
        TEXT_HTML,
        r#"<html><head><title>Shop</title><style>.price { color: red }</style>
        <script>window.trackingId = "UA-1234";</script></head>
        <body><h2>Delivery</h2><p>We ship <b>worldwide</b> via <a href="https://carrier.example">our carrier</a>.</p>
        <script type="module">import "./app.js";</script>
        <style>p { margin: 0 }</style><p>Allow five days.</p></body></html>"#,
    )
    .await
    .unwrap();
    assert_eq!(doc.pages, 1);
    for absent in [
        "Shop",
        "color",
        "trackingId",
        "UA-1234",
        "app.js",
        "margin",
        "carrier.example",
    ] {
        assert!(!doc.text.contains(absent), "{absent:?} in {:?}", doc.text);
    }
    assert!(doc.text.contains("Delivery"));
    assert!(doc.text.contains("We ship worldwide via our carrier."));
    assert!(doc.text.contains("Allow five days."));
}

#[tokio::test]
async fn a_pdf_gives_the_text_of_every_page_and_its_page_count() {
    let pages = [
        "Page one explains how to reset the router.",
        "Page two lists the warranty terms.",
        "Page three has the support phone number.",
    ];
    let doc = extract(APPLICATION_PDF, pdf_with_pages(&pages))
        .await
        .unwrap();
    assert_eq!(doc.pages, 3);
    let mut from = 0;
    for page in pages {
        let at = doc.text[from..]
            .find(page)
            .unwrap_or_else(|| panic!("{page:?} not in order in {:?}", doc.text));
        from += at + page.len();
    }
}

#[tokio::test]
async fn wrapped_pdf_lines_come_back_as_whole_sentences() {
    let paragraph = "The quick brown fox jumps over the lazy dog while the support team \
                     answers every call within two rings, and the manager reviews the \
                     recordings on Fridays.";
    let doc = extract(APPLICATION_PDF, pdf_with_pages(&[paragraph]))
        .await
        .unwrap();
    assert_eq!(doc.text, paragraph);
}

#[tokio::test]
async fn a_corrupt_pdf_is_reported_as_unparseable() {
    let mut bytes = pdf_with_pages(&["Some text."]);
    bytes.truncate(bytes.len() / 3);
    for broken in [bytes, b"%PDF-1.7\nnot really a PDF".to_vec(), b"".to_vec()] {
        assert_eq!(
            extract(APPLICATION_PDF, broken).await.unwrap_err(),
            "the PDF could not be parsed"
        );
    }
}

#[tokio::test]
async fn a_pdf_that_makes_the_parser_panic_is_reported_as_unparseable() {
    // pdf-extract expects every page to have a MediaBox and panics without one.
    let mut doc = Document::load_mem(&pdf_with_pages(&["One.", "Two."])).unwrap();
    let pages_id = doc
        .catalog()
        .unwrap()
        .get(b"Pages")
        .unwrap()
        .as_reference()
        .unwrap();
    doc.get_dictionary_mut(pages_id)
        .unwrap()
        .remove(b"MediaBox");
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();

    assert_eq!(
        extract(APPLICATION_PDF, bytes).await.unwrap_err(),
        "the PDF could not be parsed"
    );
    // The processor still works afterwards.
    assert_eq!(
        extract(APPLICATION_PDF, pdf_with_pages(&["Fine."]))
            .await
            .unwrap()
            .pages,
        1
    );
}

#[tokio::test]
async fn a_pdf_without_text_asks_for_a_text_layer() {
    let error = extract(APPLICATION_PDF, pdf_with_pages(&["", ""]))
        .await
        .unwrap_err();
    assert!(
        error.starts_with("no text could be extracted from the PDF"),
        "{error}"
    );
    assert!(error.contains("OCR"), "{error}");
}

#[tokio::test]
async fn a_blank_document_is_refused() {
    assert_eq!(
        extract(TEXT_PLAIN, " \n\t").await.unwrap_err(),
        "the document has no text"
    );
    assert_eq!(
        extract(
            TEXT_HTML,
            "<html><head><title>t</title></head><body> </body></html>"
        )
        .await
        .unwrap_err(),
        "the document has no text"
    );
}

#[tokio::test]
async fn a_pdf_over_the_page_limit_is_refused() {
    let limits = Limits {
        max_pages: 2,
        ..Limits::default()
    };
    let error = Processor::new(limits)
        .extract(APPLICATION_PDF, pdf_with_pages(&["a", "b", "c"]).into())
        .await
        .unwrap_err();
    assert_eq!(error, "the PDF has 3 pages; the limit is 2");
}

#[tokio::test]
async fn a_document_over_the_size_limit_is_refused_before_it_is_read() {
    let limits = Limits {
        max_bytes: 1024,
        ..Limits::default()
    };
    let processor = Processor::new(limits);
    let error = processor
        .extract(TEXT_PLAIN, Bytes::from(vec![b'a'; 1025]))
        .await
        .unwrap_err();
    assert_eq!(error, "the document is larger than the 1 KiB limit");
    assert!(
        processor
            .extract(TEXT_PLAIN, Bytes::from(vec![b'a'; 1024]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_document_that_takes_too_long_is_given_up() {
    let limits = Limits {
        timeout: Duration::from_millis(1),
        ..Limits::default()
    };
    // Far more than a millisecond of parsing (about 300 pages of text).
    let page =
        "A line of text that the parser has to place, word by word, on the page. ".repeat(20);
    let pages = vec![page.as_str(); 300];
    let error = Processor::new(limits)
        .extract(APPLICATION_PDF, pdf_with_pages(&pages).into())
        .await
        .unwrap_err();
    assert_eq!(error, "processing the document took longer than 1 ms");
}

fn processor() -> Processor {
    Processor::new(Limits::default())
}

#[test]
fn a_short_paragraph_is_one_chunk() {
    let text = "Our office is open from 9 to 5. Call us any time.";
    assert_eq!(processor().chunk(text), [text]);
}

#[test]
fn blank_text_has_no_chunks() {
    assert!(processor().chunk("").is_empty());
    assert!(processor().chunk(" \n\n\t ").is_empty());
}

#[test]
fn long_text_is_cut_at_sentence_ends_into_overlapping_chunks_of_at_most_800_characters() {
    let text: String = (1..=60)
        .map(|i| format!("Sentence number {i} says something about refunds and delivery times. "))
        .collect();
    let chunks = processor().chunk(&text);
    assert!(chunks.len() > 3, "{} chunks", chunks.len());
    for chunk in &chunks {
        assert!(
            chunk.chars().count() <= 800,
            "{} chars",
            chunk.chars().count()
        );
        assert!(chunk.starts_with("Sentence number "), "{chunk:?}");
        assert!(chunk.ends_with("delivery times."), "{chunk:?}");
    }
    for pair in chunks.windows(2) {
        let last_sentence = pair[0].rsplit(". ").next().unwrap();
        assert!(
            pair[1].starts_with(last_sentence.trim_end_matches('.')),
            "{:?} does not overlap {:?}",
            pair[1],
            pair[0]
        );
    }
}

#[test]
fn a_paragraph_that_fits_in_a_chunk_is_never_cut() {
    // Two of them do not fit in 800 characters together.
    let paragraphs = ["First", "Second", "Third"]
        .map(|name| format!("{name} paragraph. ").repeat(25).trim().to_owned());
    let chunks = processor().chunk(&paragraphs.join("\n\n"));
    for paragraph in &paragraphs {
        assert!(
            chunks
                .iter()
                .any(|chunk| chunk.contains(paragraph.as_str())),
            "{paragraph:?} is cut in {chunks:?}"
        );
    }
}
