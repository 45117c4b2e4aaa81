//! The text of a Markdown document, without its markup.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The text of `markdown` as a reader of the rendered page sees it: paragraphs, headings,
/// code blocks and lists separated by blank lines, list items and table rows one per line,
/// table cells separated by " | ". Emphasis marks, link targets and image syntax go (an
/// image's alt text stays); code stays as written; front matter goes; embedded HTML blocks
/// are read like an HTML document, inline tags dropped.
pub(crate) fn to_text(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut out = Text::default();
    let mut lists = 0usize;
    let mut in_metadata = false;
    let mut html_block: Option<String> = None;

    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
            _ if in_metadata => {}

            Event::Start(Tag::HtmlBlock) => html_block = Some(String::new()),
            Event::Html(html) => {
                if let Some(block) = html_block.as_mut() {
                    block.push_str(&html);
                }
            }
            Event::End(TagEnd::HtmlBlock) => {
                if let Some(block) = html_block.take() {
                    out.block(2);
                    out.push(&crate::html::to_text(block.as_bytes()).unwrap_or_default());
                    out.block(2);
                }
            }

            Event::Text(text) | Event::Code(text) => out.push(&text),
            Event::SoftBreak => out.push(" "),
            Event::HardBreak => out.block(1),

            Event::Start(Tag::List(_)) => {
                lists += 1;
                out.block(1);
            }
            Event::End(TagEnd::List(_)) => {
                lists = lists.saturating_sub(1);
                out.block(if lists == 0 { 2 } else { 1 });
            }
            Event::Start(Tag::Item) | Event::End(TagEnd::Item) => out.block(1),
            Event::Start(Tag::TableCell) => out.cell(),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => out.block(1),

            Event::Start(
                Tag::Paragraph
                | Tag::Heading { .. }
                | Tag::CodeBlock(_)
                | Tag::BlockQuote(_)
                | Tag::Table(_)
                | Tag::FootnoteDefinition(_),
            )
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_)
                | TagEnd::Table
                | TagEnd::FootnoteDefinition,
            )
            | Event::Rule => out.block(2),

            // Links, images, emphasis: their text comes as `Text` events, their markup and
            // targets are not text. Inline HTML tags, footnote marks and task boxes neither.
            _ => {}
        }
    }
    out.text
}

/// The text being built, with the line breaks between blocks decided lazily so that none
/// piles up at the start, between blocks or at the end.
#[derive(Default)]
struct Text {
    text: String,
    /// Newlines owed before the next text: 1 ends a line, 2 leaves a blank line.
    pending: usize,
    /// The next text starts a table row's second or later cell.
    cell: bool,
    /// A cell began in the current row.
    row_started: bool,
}

impl Text {
    fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.pending > 0 {
            self.row_started = false;
            if !self.text.is_empty() {
                self.text.truncate(self.text.trim_end().len());
                self.text.push_str(&"\n".repeat(self.pending));
            }
            self.pending = 0;
        }
        if self.cell {
            if self.row_started {
                self.text.push_str(" | ");
            }
            self.row_started = true;
            self.cell = false;
        }
        self.text.push_str(s);
    }

    fn block(&mut self, newlines: usize) {
        self.pending = self.pending.max(newlines);
    }

    fn cell(&mut self) {
        self.cell = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_their_breaks_and_lose_their_markup() {
        let text = to_text(
            "---\ntitle: Front matter\n---\n\n# Refunds\n\nWithin **thirty** days,\nno questions.\n\n\
             - first item\n- second [item](https://example.com/x)\n\n\
             ```rust\nlet x = 1;\n```\n\n| Plan | Price |\n|---|---|\n| Pro | 10 |\n\n\
             ![a diagram](diagram.png)\n\n<div>\n<p>Inside HTML</p>\n</div>\n\nLast.",
        );
        assert_eq!(
            text,
            "Refunds\n\nWithin thirty days, no questions.\n\nfirst item\nsecond item\n\n\
             let x = 1;\n\nPlan | Price\nPro | 10\n\na diagram\n\nInside HTML\n\nLast."
        );
    }

    #[test]
    fn empty_markdown_has_no_text() {
        assert_eq!(to_text(""), "");
        assert_eq!(to_text("---\n\n<!-- a comment -->\n"), "");
    }
}
