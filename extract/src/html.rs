//! The visible text of an HTML document.

use html2text::render::TrivialDecorator;

/// Wide enough that html2text never wraps a paragraph: a wrap would put line breaks inside
/// sentences, and the chunker prefers cutting at line breaks over sentence ends.
const WIDTH: usize = 1_000_000;

/// The text a reader of `html` sees: html5ever parses it (as browsers do, whatever the
/// markup's state) and html2text renders the DOM without `<head>`, `<script>` or `<style>`,
/// without decoration (no `#` before headings, `*` before list items or `[…]` around links)
/// and without link targets; table cells come one per line. `Err` only if the renderer fails.
pub(crate) fn to_text(html: &[u8]) -> Result<String, ()> {
    let html = html.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(html);
    html2text::config::with_decorator(TrivialDecorator::new())
        .raw_mode(true)
        .link_footnotes(false)
        .allow_width_overflow()
        .string_from_read(html, WIDTH)
        .map(|text| {
            text.lines()
                .map(str::trim_end)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_visible_text_remains() {
        let text = to_text(
            br#"<!doctype html><html><head><title>Page title</title>
            <meta name="description" content="meta words">
            <style>body { color: red }</style><script>var secret = 1;</script></head>
            <body><h1>Refunds</h1><p>Within <a href="https://example.com/x">thirty days</a>.</p>
            <script>alert("inline")</script><noscript>Enable JS</noscript>
            <ul><li>First</li><li>Second</li></ul></body></html>"#,
        )
        .unwrap();
        for absent in [
            "Page title",
            "meta words",
            "color",
            "secret",
            "alert",
            "example.com",
            "#",
            "*",
            "[",
        ] {
            assert!(!text.contains(absent), "{absent:?} in {text:?}");
        }
        for present in ["Refunds", "Within thirty days.", "First", "Second"] {
            assert!(text.contains(present), "{present:?} not in {text:?}");
        }
    }
}
