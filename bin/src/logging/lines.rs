//! The log's lines, as text and as JSON, written through tracing-subscriber's `FormatFields`
//! and `FormatEvent` hooks rather than its general formatters.
//!
//! The general ones cost a fifth of a `/healthz` request, which logs one span and one event
//! (benches/README.md, "Half of the HTTP ceiling"): each field went through `nu_ansi_term`
//! styles even with colours off, the JSON span fields were parsed back into a map on every
//! record and every event, and the timestamp was formatted digit by digit. These write the
//! same lines straight into the line's buffer. A terminal still gets tracing-subscriber's
//! coloured lines (`logging.rs`).
//!
//! Text: `2026-11-26T22:35:34.123456Z  INFO request{method=GET path=/healthz …}: target:
//! message field=value`, as tracing-subscriber's `Full` format writes it without colours,
//! except that every control character of a value is escaped (`\n`, `\u{1b}`), so that a value
//! can neither end its line nor drive the terminal of whoever reads the log, and that a float's
//! last digit may differ on an exact tie ([`shortest`]).
//!
//! JSON: one object per line, `{"timestamp":…,"level":…,<event fields>,"target":…,
//! "span":{<fields>,"name":…},"spans":[…]}` (`span` the innermost span, `spans` every one from
//! the outermost). A span's fields are kept as the JSON members they will be written as, and a
//! field recorded twice appears twice: JSON readers keep the last.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The fields of text lines: `name=value`, separated by spaces; a message without its name.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TextFields;

/// Text lines (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TextLine;

/// The fields of JSON lines: `"name":value` members, separated by commas.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct JsonFields;

/// JSON lines (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct JsonLine;

impl<'w> FormatFields<'w> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        text_fields(writer, fields)
    }
}

/// `fields` as a text line writes them, to `w`: generic, so that the binary's own subscriber,
/// writing into a `String`, calls no `dyn fmt::Write` for each piece of each field.
pub(super) fn text_fields(w: impl fmt::Write, fields: impl RecordFields) -> fmt::Result {
    let mut visitor = TextVisitor {
        w,
        first: true,
        result: Ok(()),
    };
    fields.record(&mut visitor);
    visitor.result
}

impl<'w> FormatFields<'w> for JsonFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        json_members(writer, true, fields)
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let first = current.fields.is_empty();
        json_members(current.as_writer(), first, fields)
    }
}

/// `fields` as JSON members, with a comma before the first unless `first`.
pub(super) fn json_members(
    w: impl fmt::Write,
    first: bool,
    fields: impl RecordFields,
) -> fmt::Result {
    let mut visitor = JsonVisitor {
        w,
        first,
        result: Ok(()),
    };
    fields.record(&mut visitor);
    visitor.result
}

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        text_start(&mut w, meta.level())?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let fields = extensions.get::<FormattedFields<N>>();
                text_span(
                    &mut w,
                    span.name(),
                    fields.map_or("", |f| f.fields.as_str()),
                )?;
            }
            w.write_char(' ')?;
        }
        text_target(&mut w, meta.target())?;
        ctx.format_fields(w.by_ref(), event)?;
        w.write_char('\n')
    }
}

/// A text line's timestamp and level.
pub(super) fn text_start(w: &mut impl fmt::Write, level: &Level) -> fmt::Result {
    write_timestamp(w)?;
    w.write_str(match *level {
        Level::TRACE => " TRACE ",
        Level::DEBUG => " DEBUG ",
        Level::INFO => "  INFO ",
        Level::WARN => "  WARN ",
        Level::ERROR => " ERROR ",
    })
}

/// One span of a text line's scope, `name{fields}:` (`name:` without fields).
pub(super) fn text_span(w: &mut impl fmt::Write, name: &str, fields: &str) -> fmt::Result {
    w.write_str(name)?;
    if !fields.is_empty() {
        w.write_char('{')?;
        w.write_str(fields)?;
        w.write_char('}')?;
    }
    w.write_char(':')
}

/// A text line's target, before the event's fields.
pub(super) fn text_target(w: &mut impl fmt::Write, target: &str) -> fmt::Result {
    w.write_str(target)?;
    w.write_str(": ")
}

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        json_start(&mut w, event)?;
        // A scope runs from the innermost span out.
        if let Some(innermost) = ctx.event_scope().and_then(|mut scope| scope.next()) {
            w.write_str(",\"span\":")?;
            json_span_ref::<S, N>(&mut w, &innermost)?;
            w.write_str(",\"spans\":[")?;
            let outward = ctx
                .event_scope()
                .into_iter()
                .flat_map(|scope| scope.from_root());
            for (i, span) in outward.enumerate() {
                if i > 0 {
                    w.write_char(',')?;
                }
                json_span_ref::<S, N>(&mut w, &span)?;
            }
            w.write_char(']')?;
        }
        w.write_str("}\n")
    }
}

/// A JSON line up to its spans: timestamp, level, the event's fields and its target.
pub(super) fn json_start(w: &mut impl fmt::Write, event: &Event<'_>) -> fmt::Result {
    let meta = event.metadata();
    w.write_str("{\"timestamp\":\"")?;
    write_timestamp(w)?;
    w.write_str("\",\"level\":\"")?;
    w.write_str(meta.level().as_str())?;
    w.write_char('"')?;
    json_members(&mut *w, false, event)?;
    w.write_str(",\"target\":")?;
    json_string(w, meta.target())
}

fn json_span_ref<S, N>(
    w: &mut Writer<'_>,
    span: &tracing_subscriber::registry::SpanRef<'_, S>,
) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let extensions = span.extensions();
    let fields = extensions.get::<FormattedFields<N>>();
    json_span(w, span.name(), fields.map_or("", |f| f.fields.as_str()))
}

/// `{<the span's fields>,"name":"<its name>"}`.
pub(super) fn json_span(w: &mut impl fmt::Write, name: &str, fields: &str) -> fmt::Result {
    w.write_char('{')?;
    if !fields.is_empty() {
        w.write_str(fields)?;
        w.write_char(',')?;
    }
    w.write_str("\"name\":")?;
    json_string(w, name)?;
    w.write_char('}')
}

/// Writes the current UTC time as `2026-11-26T22:35:34.123456Z`, as tracing-subscriber's
/// default timer does. Each thread keeps the text of the last second it wrote, which changes
/// once a second rather than once a line.
fn write_timestamp(w: &mut impl fmt::Write) -> fmt::Result {
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = now.as_secs();
    SECOND.with_borrow_mut(|(kept, text)| {
        if *kept != seconds {
            text.clear();
            let at = i64::try_from(seconds)
                .ok()
                .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
                .unwrap_or_default();
            write!(text, "{}", at.format("%Y-%m-%dT%H:%M:%S"))?;
            *kept = seconds;
        }
        w.write_str(text)
    })?;
    write_fraction(w, now.subsec_micros())
}

/// `.000123Z`: the microseconds (below a million) as six digits, and the zone.
fn write_fraction(w: &mut impl fmt::Write, micros: u32) -> fmt::Result {
    // Seven digits with a leading 1, which is dropped: the microseconds with their zeros.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(1_000_000 + micros);
    w.write_char('.')?;
    w.write_str(digits.get(1..).unwrap_or("000000"))?;
    w.write_char('Z')
}

/// Fields as `name=value`: values as their `Debug` (strings quoted), messages as written.
struct TextVisitor<W> {
    w: W,
    first: bool,
    result: fmt::Result,
}

impl<W: fmt::Write> TextVisitor<W> {
    fn field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            self.name(field)?;
            Escaped(&mut self.w).write_fmt(value)
        })();
    }

    /// `field` with the value `parts` make, which need no escaping.
    fn plain(&mut self, field: &Field, parts: &[&str]) {
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            self.name(field)?;
            parts.iter().try_for_each(|part| self.w.write_str(part))
        })();
    }

    /// The separator and `name=` before a field's value (nothing for a message).
    fn name(&mut self, field: &Field) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.w.write_char(' ')?;
        }
        let name = field.name();
        if name != "message" {
            self.w.write_str(name.strip_prefix("r#").unwrap_or(name))?;
            self.w.write_char('=')?;
        }
        Ok(())
    }
}

impl<W: fmt::Write> Visit for TextVisitor<W> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            if self.result.is_ok() {
                self.result = self
                    .name(field)
                    .and_then(|()| Escaped(&mut self.w).write_str(value));
            }
        } else if value
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
        {
            // What `Debug` writes for such a string, without its escaping of every character
            // in turn (an operation id is one of these on every request).
            self.plain(field, &["\"", value, "\""]);
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.field(field, format_args!("{value}"));
        if let Some(source) = value.source() {
            let name = field.name();
            self.result = self.result.and_then(|()| {
                write!(
                    self.w,
                    " {}.sources=[",
                    name.strip_prefix("r#").unwrap_or(name)
                )?;
                let mut next = Some(source);
                let mut first = true;
                while let Some(error) = next {
                    if !std::mem::take(&mut first) {
                        self.w.write_str(", ")?;
                    }
                    write!(Escaped(&mut self.w), "{error}")?;
                    next = error.source();
                }
                self.w.write_char(']')
            });
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.plain(field, &[itoa::Buffer::new().format(value)]);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.plain(field, &[itoa::Buffer::new().format(value)]);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.plain(field, &[if value { "true" } else { "false" }]);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match shortest(&mut zmij::Buffer::new(), value) {
            // Digits, a point and a sign.
            Some(text) => self.plain(field, &[text]),
            None => self.field(field, format_args!("{value:?}")),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, format_args!("{value:?}"));
    }
}

/// `value` as the shortest decimal that reads back as it, which is what `Debug` writes,
/// where zmij can write it; `None` where `Debug` must.
///
/// Between 1e-4 and 1e16 in magnitude, where `Debug` writes no exponent, zmij (serde_json's
/// float writer) writes the same digits and `.0` after a whole number, in a tenth of the
/// instructions: that is every request line's `latency_ms`, where `Debug` was about 900 of the
/// line's 8,000. The one difference is an exact tie between two shortest decimals, which zmij
/// breaks to the even digit and `Debug` upwards (`0.0010004043579101562` against `…563`); the
/// API's JSON, written by serde_json, breaks it as zmij does. Zero, tiny and huge numbers, NaN
/// and the infinities are left to `Debug`.
fn shortest(buffer: &mut zmij::Buffer, value: f64) -> Option<&str> {
    (1e-4..1e16)
        .contains(&value.abs())
        .then(|| buffer.format_finite(value))
}

/// Writes through to `W` with control characters (but tabs) escaped: `\n`, `\r`, `\u{1b}`.
struct Escaped<'a, W: ?Sized>(&'a mut W);

impl<W: fmt::Write + ?Sized> fmt::Write for Escaped<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Control characters are the bytes below 0x20, 0x7f, and U+0080 to U+009F, whose
        // UTF-8 starts with 0xc2 (as do a few printable characters, which the loop passes).
        // Without a short circuit, so that the compiler checks many bytes at once: the pieces
        // are short, and nearly all of them clean.
        let control = s.bytes().fold(false, |found, b| {
            found | (b < 0x20) | (b == 0x7f) | (b == 0xc2)
        });
        if !control {
            return self.0.write_str(s);
        }
        let mut rest = s;
        while let Some(at) = rest.find(|c: char| c.is_control() && c != '\t') {
            let (clean, tail) = rest.split_at(at);
            self.0.write_str(clean)?;
            let mut chars = tail.chars();
            match chars.next() {
                Some('\n') => self.0.write_str("\\n")?,
                Some('\r') => self.0.write_str("\\r")?,
                Some(c) => write!(self.0, "{}", c.escape_unicode())?,
                None => {}
            }
            rest = chars.as_str();
        }
        self.0.write_str(rest)
    }
}

/// Fields as JSON members: numbers and booleans as such, strings and everything else as the
/// string of its `Debug` (or, for errors, its `Display`).
struct JsonVisitor<W> {
    w: W,
    /// No comma before the next member.
    first: bool,
    result: fmt::Result,
}

impl<W: fmt::Write> JsonVisitor<W> {
    fn member(&mut self, field: &Field, value: impl FnOnce(&mut W) -> fmt::Result) {
        if self.result.is_err() {
            return;
        }
        self.result = (|| {
            if !std::mem::take(&mut self.first) {
                self.w.write_char(',')?;
            }
            let name = field.name();
            json_string(&mut self.w, name.strip_prefix("r#").unwrap_or(name))?;
            self.w.write_char(':')?;
            value(&mut self.w)
        })();
    }

    /// The member `field` with the text `value` writes, as a JSON string.
    fn text(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        thread_local! {
            static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
        }
        self.member(field, |w| {
            SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
                Ok(mut text) => {
                    text.clear();
                    text.write_fmt(value)?;
                    json_string(w, &text)
                }
                // Only when a value's own `Debug` logs: then use a buffer of its own.
                Err(_) => json_string(w, &value.to_string()),
            })
        });
    }
}

impl<W: fmt::Write> Visit for JsonVisitor<W> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            let mut buffer = zmij::Buffer::new();
            match shortest(&mut buffer, value) {
                Some(text) => self.member(field, |w| w.write_str(text)),
                None => self.member(field, |w| write!(w, "{value:?}")),
            }
        } else {
            self.member(field, |w| w.write_str("null"));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.member(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.member(field, |w| w.write_str(itoa::Buffer::new().format(value)));
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.member(field, |w| write!(w, "{value}"));
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        self.member(field, |w| write!(w, "{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.member(field, |w| w.write_str(if value { "true" } else { "false" }));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.member(field, |w| json_string(w, value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.text(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text(field, format_args!("{value:?}"));
    }
}

/// `s` as a JSON string, escaped by serde_json when it needs escaping at all.
fn json_string(w: &mut impl fmt::Write, s: &str) -> fmt::Result {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        w.write_char('"')?;
        w.write_str(s)?;
        return w.write_char('"');
    }
    serde_json::to_writer(FmtBytes(w), s).map_err(|_| fmt::Error)
}

/// An `io::Write` over a `fmt::Write`, for serde_json, which writes UTF-8 in whole
/// characters (it splits strings only around the ASCII it escapes).
struct FmtBytes<'a, W: ?Sized>(&'a mut W);

impl<W: fmt::Write + ?Sized> std::io::Write for FmtBytes<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(bytes).map_err(std::io::Error::other)?;
        self.0.write_str(text).map_err(std::io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Lines written, kept for the test.
    #[derive(Clone, Default)]
    pub(in crate::logging) struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        pub(in crate::logging) fn lines(&self) -> Vec<String> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Self;

        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    #[derive(Debug)]
    struct Outer(Inner);

    #[derive(Debug)]
    struct Inner;

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the upload failed")
        }
    }

    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("disk full")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    impl std::error::Error for Inner {}

    /// What a request logs, and a warning with every kind of field, in a nested span.
    pub(in crate::logging) fn log_a_request() {
        let request = tracing::info_span!(
            "request",
            method = %"GET",
            path = %"/api/agents/agent_1",
            operation = Some("agent_view"),
            status = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        let _request = request.enter();
        let nested = tracing::info_span!("nested", n = 3u64);
        nested.in_scope(|| {
            tracing::warn!(
                ok = true,
                below = -2i64,
                ratio = 0.5f64,
                text = "say \"hi\"\n\u{1b}[31m",
                error = &Outer(Inner) as &(dyn std::error::Error + 'static),
                "it went {}",
                "wrong\nhere"
            );
        });
        request.record("status", 200u16);
        request.record("latency_ms", 1.25f64);
        tracing::info!("request completed");
    }

    fn lines_of<N, E>(fields: N, line: E, log: impl FnOnce()) -> Vec<String>
    where
        N: for<'w> FormatFields<'w> + Send + Sync + 'static,
        E: FormatEvent<tracing_subscriber::Registry, N> + Send + Sync + 'static,
    {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(captured.clone())
                .with_ansi(false)
                .fmt_fields(fields)
                .event_format(line),
        );
        tracing::subscriber::with_default(subscriber, log);
        captured.lines()
    }

    /// The timestamp's form, and the rest of the line after it.
    pub(in crate::logging) fn after_timestamp(line: &str) -> &str {
        let (stamp, rest) = line.split_at(27);
        assert!(
            chrono::DateTime::parse_from_rfc3339(stamp).is_ok() && stamp.ends_with('Z'),
            "{line}"
        );
        assert_eq!(stamp.len(), "2026-11-26T22:35:34.123456Z".len(), "{line}");
        rest
    }

    #[test]
    fn text_lines_show_every_kind_of_field_with_control_characters_escaped() {
        let lines = lines_of(TextFields, TextLine, log_a_request);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            after_timestamp(&lines[0]),
            "  WARN request{method=GET path=/api/agents/agent_1 operation=\"agent_view\"}:\
             nested{n=3}: voiceplane_bin::logging::lines::tests: it went wrong\\nhere ok=true \
             below=-2 ratio=0.5 text=\"say \\\"hi\\\"\\n\\u{1b}[31m\" error=the upload failed \
             error.sources=[disk full]"
        );
        assert_eq!(
            after_timestamp(&lines[1]),
            "  INFO request{method=GET path=/api/agents/agent_1 operation=\"agent_view\" \
             status=200 latency_ms=1.25}: voiceplane_bin::logging::lines::tests: request completed"
        );
    }

    #[test]
    fn a_string_field_is_written_as_its_debug_form() {
        let printable: String = (0x20u8..0x7f).map(char::from).collect();
        for value in [
            "agent_view",
            "",
            "it's {a} ~b~ 100% <ok>",
            printable.as_str(),
            "tab\there",
            "é",
        ] {
            let lines = lines_of(TextFields, TextLine, || tracing::info!(f = value));
            let (_, written) = lines[0].split_once(" f=").unwrap();
            assert_eq!(written, format!("{value:?}"), "{value:?}");
        }
    }

    #[test]
    fn a_float_field_is_written_as_its_shortest_decimal() {
        let mut values = vec![
            0.0,
            -0.0,
            1e-4,
            1e-4f64.next_down(),
            1e16,
            1e16f64.next_down(),
            -1e16f64.next_down(),
            1e15,
            123_456_789_012_345.6,
            0.1 + 0.2,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::EPSILON,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        // Latencies as the request line computes them, microsecond by microsecond up to 1 s.
        values.extend(
            (0..1_000_000u64).map(|us| std::time::Duration::from_micros(us).as_secs_f64() * 1000.0),
        );
        // And numbers of every exponent and sign, from a fixed sequence of bit patterns.
        let mut bits = 0x9e37_79b9_7f4a_7c15u64;
        values.extend((0..1_000_000).map(|_| {
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            f64::from_bits(bits)
        }));
        // Numbers of few significant bits, where two shortest decimals can tie.
        values.extend((1..1_000_000u32).map(|m| f64::from(m) * 2f64.powi(-20)));
        let mut ties = 0;
        for value in values {
            let mut buffer = zmij::Buffer::new();
            let ours =
                shortest(&mut buffer, value).map_or_else(|| format!("{value:?}"), str::to_owned);
            let debug = format!("{value:?}");
            if ours == debug {
                continue;
            }
            // A tie: `Debug` takes the digit above, zmij the even one below; both are the
            // shortest text that reads back as `value`.
            ties += 1;
            let (head, last) = ours.split_at(ours.len() - 1);
            let last = last.parse::<u8>().unwrap();
            assert_eq!(last % 2, 0, "{ours} against {debug}");
            assert_eq!(debug, format!("{head}{}", last + 1), "{ours}");
            assert_eq!(
                ours.parse::<f64>().unwrap().to_bits(),
                value.to_bits(),
                "{ours}"
            );
        }
        assert!(
            ties > 0,
            "the sample holds no tie: the test no longer tests one"
        );
        let lines = lines_of(TextFields, TextLine, || tracing::info!(latency_ms = 1.5f64));
        assert!(lines[0].ends_with(" latency_ms=1.5"), "{}", lines[0]);
        let lines = lines_of(JsonFields, JsonLine, || {
            tracing::info!(latency_ms = 0.001f64)
        });
        assert!(lines[0].contains(r#""latency_ms":0.001,"#), "{}", lines[0]);
    }

    #[test]
    fn integer_and_boolean_fields_are_written_as_their_debug_form() {
        let check = |log: &dyn Fn(), debug: String| {
            let text = lines_of(TextFields, TextLine, log);
            assert!(text[0].ends_with(&format!(" f={debug}")), "{}", text[0]);
            let json = lines_of(JsonFields, JsonLine, log);
            assert!(json[0].contains(&format!(r#""f":{debug},"#)), "{}", json[0]);
        };
        for value in [0, -1, 503, i64::MIN, i64::MAX] {
            check(&|| tracing::info!(f = value), format!("{value:?}"));
        }
        for value in [0, 7, u64::MAX] {
            check(&|| tracing::info!(f = value), format!("{value:?}"));
        }
        check(&|| tracing::info!(f = 503u16), "503".to_owned());
        for value in [true, false] {
            check(&|| tracing::info!(f = value), format!("{value:?}"));
        }
    }

    #[test]
    fn text_lines_are_tracing_subscribers_own_without_control_characters() {
        let log = || {
            let request = tracing::info_span!(
                "request",
                method = %"GET",
                path = %"/healthz",
                operation = Some("health_live"),
                status = tracing::field::Empty,
            );
            let _request = request.enter();
            tracing::warn!(
                attempt = 2u64,
                ok = false,
                late = 0.25f64,
                "retrying {}",
                "soon"
            );
            request.record("status", 503u16);
            tracing::error!(error = %"gone", "request completed");
        };
        let captured = Captured::default();
        let theirs = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(captured.clone())
                .with_ansi(false),
        );
        tracing::subscriber::with_default(theirs, log);
        let theirs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let ours = lines_of(TextFields, TextLine, log);
        let (theirs, ours): (Vec<&str>, Vec<&str>) = (
            theirs.lines().map(after_timestamp).collect(),
            ours.iter().map(|line| after_timestamp(line)).collect(),
        );
        assert_eq!(ours.len(), 2);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn json_lines_are_one_object_each_with_the_spans_fields() {
        let lines = lines_of(JsonFields, JsonLine, log_a_request);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let values: Vec<serde_json::Value> = lines
            .iter()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        let warning = &values[0];
        after_timestamp(warning["timestamp"].as_str().unwrap());
        assert_eq!(warning["level"], "WARN");
        assert_eq!(warning["message"], "it went wrong\nhere");
        assert_eq!(warning["ok"], true);
        assert_eq!(warning["below"], -2);
        assert_eq!(warning["ratio"], 0.5);
        assert_eq!(warning["text"], "say \"hi\"\n\u{1b}[31m");
        assert_eq!(warning["error"], "the upload failed");
        assert_eq!(warning["target"], "voiceplane_bin::logging::lines::tests");
        assert_eq!(
            warning["span"],
            serde_json::json!({"n": 3, "name": "nested"})
        );
        let request = serde_json::json!({
            "method": "GET",
            "path": "/api/agents/agent_1",
            "operation": "agent_view",
            "name": "request",
        });
        assert_eq!(
            warning["spans"],
            serde_json::json!([request, {"n": 3, "name": "nested"}])
        );
        let completed = &values[1];
        assert_eq!(completed["message"], "request completed");
        assert_eq!(completed["span"]["status"], 200);
        assert_eq!(completed["span"]["latency_ms"], 1.25);
        assert_eq!(completed["span"]["operation"], "agent_view");
        assert_eq!(completed["spans"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn microseconds_are_six_digits() {
        for (micros, text) in [
            (0, ".000000Z"),
            (7, ".000007Z"),
            (123_456, ".123456Z"),
            (999_999, ".999999Z"),
        ] {
            let mut written = String::new();
            write_fraction(&mut written, micros).unwrap();
            assert_eq!(written, text);
        }
    }

    #[test]
    fn a_timestamp_is_the_time_it_is_written() {
        let before = chrono::Utc::now();
        let mut text = String::new();
        write_timestamp(&mut text).unwrap();
        let written = chrono::DateTime::parse_from_rfc3339(&text).unwrap();
        let after = chrono::Utc::now();
        // Written with microseconds, so truncated from `before`'s nanoseconds.
        assert!(
            written >= before - chrono::Duration::microseconds(1) && written <= after,
            "{text}"
        );
    }
}
