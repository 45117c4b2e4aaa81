//! The binary's own subscriber: the lines of [`super::log_layer`], behind a [`Targets`]
//! filter, without tracing-subscriber's `Registry` and `fmt` layer under them.
//!
//! Every request opens a span, enters it at each poll, records two fields into it and logs
//! one event in it. Under the registry, that was a slab slot with a map of extensions, the
//! span's fields kept as one of them (found by type at each record and each event), and every
//! call going through each layer of the stack. In-process that is 0.9 µs of a request; in
//! the server, where that much code and data is cold again by the next request, it measured
//! up to several times more (benches/README.md, "What the request log costs").
//!
//! Here a span is a pooled slot holding its metadata, parent, reference count and its fields,
//! formatted as the line will show them, in a buffer the slot keeps between spans. The lines
//! are the same bytes as [`super::log_layer`]'s (a test compares them). A filter on spans or
//! fields (`EnvFilter`) and a terminal's colours still go through the registry.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::sync::{Mutex, MutexGuard, PoisonError};

use sharded_slab::{Clear, Pool};
use thread_local::ThreadLocal;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_core::span::Current;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;

use super::lines;
use crate::config::LogFormat;

/// Lines in `format` to `writer`, for the events and spans `filter` enables.
pub(super) struct Lines<W> {
    filter: Targets,
    format: LogFormat,
    writer: W,
    spans: Pool<SpanSlot>,
    /// Each thread's entered spans, innermost last. Unlike the registry's, entering takes no
    /// reference to the span: a span's handle outlives its entering (`Span::enter`'s guard
    /// borrows it, `Instrumented` and `EnteredSpan` own it), and a stale id, left by a guard
    /// forgotten or dropped on another thread, finds no slot (a slot's key carries its
    /// generation) rather than another span. Counting a reference up and down at each poll
    /// was two slot lookups and two atomic updates of every request's span.
    entered: ThreadLocal<RefCell<Vec<Id>>>,
}

#[derive(Default)]
struct SpanSlot {
    metadata: Option<&'static Metadata<'static>>,
    parent: Option<Id>,
    refs: AtomicUsize,
    /// As the line writes them: `a=1 b="x"`, or JSON members `"a":1,"b":"x"`.
    fields: Mutex<String>,
}

impl Clear for SpanSlot {
    fn clear(&mut self) {
        self.metadata = None;
        self.parent = None;
        self.fields
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

fn key_of(id: &Id) -> usize {
    usize::try_from(id.into_u64() - 1).unwrap_or(usize::MAX)
}

fn locked(fields: &Mutex<String>) -> MutexGuard<'_, String> {
    fields.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W> Lines<W>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    pub(super) fn new(format: LogFormat, filter: Targets, writer: W) -> Self {
        Self {
            filter,
            format,
            writer,
            spans: Pool::new(),
            entered: ThreadLocal::new(),
        }
    }

    /// Appends `values` to a span's `fields`, as the line writes them.
    fn add_fields(&self, fields: &mut String, values: &Record<'_>) -> fmt::Result {
        match self.format {
            LogFormat::Text => {
                if !fields.is_empty() {
                    fields.push(' ');
                }
                lines::text_fields(fields, values)
            }
            LogFormat::Json => {
                let first = fields.is_empty();
                lines::json_members(fields, first, values)
            }
        }
    }

    fn current(&self) -> Option<Id> {
        let entered = self.entered.get()?.borrow();
        entered.last().cloned()
    }

    /// The span an event or a new span belongs to: its explicit parent, else the current span
    /// unless it asked for none.
    fn parent_of(&self, explicit: Option<&Id>, contextual: bool) -> Option<Id> {
        match explicit {
            Some(id) => Some(id.clone()),
            None if contextual => self.current(),
            None => None,
        }
    }

    /// Calls `each` with the name and fields of `id` and of each of its ancestors, from the
    /// outermost.
    fn each_from_outermost(
        &self,
        id: &Id,
        each: &mut dyn FnMut(&str, &str) -> fmt::Result,
    ) -> fmt::Result {
        let Some(span) = self.spans.get(key_of(id)) else {
            return Ok(());
        };
        if let Some(parent) = &span.parent {
            self.each_from_outermost(parent, each)?;
        }
        each(
            span.metadata.map_or("", |m| m.name()),
            &locked(&span.fields),
        )
    }

    fn line(&self, w: &mut String, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let scope = self.parent_of(event.parent(), event.is_contextual());
        match self.format {
            LogFormat::Text => {
                lines::text_start(w, meta.level())?;
                if let Some(id) = &scope {
                    // A closed span's id (entered by a forgotten guard) writes nothing.
                    let mut any = false;
                    self.each_from_outermost(id, &mut |name, fields| {
                        any = true;
                        lines::text_span(w, name, fields)
                    })?;
                    if any {
                        w.write_char(' ')?;
                    }
                }
                lines::text_target(w, meta.target())?;
                lines::text_fields(&mut *w, event)?;
                w.write_char('\n')
            }
            LogFormat::Json => {
                lines::json_start(w, event)?;
                if let Some(id) = &scope
                    && let Some(span) = self.spans.get(key_of(id))
                {
                    w.write_str(",\"span\":")?;
                    let name = span.metadata.map_or("", |m| m.name());
                    lines::json_span(w, name, &locked(&span.fields))?;
                    drop(span);
                    w.write_str(",\"spans\":[")?;
                    let mut first = true;
                    self.each_from_outermost(id, &mut |name, fields| {
                        if !std::mem::take(&mut first) {
                            w.write_char(',')?;
                        }
                        lines::json_span(w, name, fields)
                    })?;
                    w.write_char(']')?;
                }
                w.write_str("}\n")
            }
        }
    }
}

impl<W> Subscriber for Lines<W>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if self.filter.would_enable(meta.target(), meta.level()) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.filter.would_enable(meta.target(), meta.level())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        tracing_subscriber::Layer::<tracing_subscriber::Registry>::max_level_hint(&self.filter)
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let parent = self
            .parent_of(attrs.parent(), attrs.is_contextual())
            .map(|id| self.clone_span(&id));
        let key = self
            .spans
            .create_with(|span| {
                span.metadata = Some(attrs.metadata());
                span.parent = parent;
                *span.refs.get_mut() = 1;
                let fields = span
                    .fields
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner);
                let _ = match self.format {
                    LogFormat::Text => lines::text_fields(fields, attrs),
                    LogFormat::Json => lines::json_members(fields, true, attrs),
                };
            })
            // As the registry does: a slab of millions of open spans is a leak to see.
            .expect("no room for another span");
        Id::from_u64(key as u64 + 1)
    }

    fn record(&self, id: &Id, values: &Record<'_>) {
        if let Some(span) = self.spans.get(key_of(id)) {
            let _ = self.add_fields(&mut locked(&span.fields), values);
        }
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        thread_local! {
            static LINE: RefCell<String> = const { RefCell::new(String::new()) };
        }
        let write = |line: &mut String| {
            line.clear();
            if self.line(line, event).is_ok() {
                let _ = self
                    .writer
                    .make_writer_for(event.metadata())
                    .write_all(line.as_bytes());
            }
        };
        LINE.with(|line| match line.try_borrow_mut() {
            Ok(mut line) => write(&mut line),
            // An event logged while formatting one (by a field's `Debug`).
            Err(_) => write(&mut String::new()),
        });
    }

    fn enter(&self, id: &Id) {
        self.entered.get_or_default().borrow_mut().push(id.clone());
    }

    fn exit(&self, id: &Id) {
        let Some(entered) = self.entered.get() else {
            return;
        };
        let mut entered = entered.borrow_mut();
        if let Some(at) = entered.iter().rposition(|e| e == id) {
            entered.remove(at);
        }
    }

    fn clone_span(&self, id: &Id) -> Id {
        if let Some(span) = self.spans.get(key_of(id)) {
            span.refs.fetch_add(1, Ordering::Relaxed);
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let Some(span) = self.spans.get(key_of(&id)) else {
            return false;
        };
        if span.refs.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        fence(Ordering::Acquire);
        let parent = span.parent.clone();
        drop(span);
        self.spans.clear(key_of(&id));
        if let Some(parent) = parent {
            self.try_close(parent);
        }
        true
    }

    fn current_span(&self) -> Current {
        match self.current() {
            Some(id) => match self.spans.get(key_of(&id)).and_then(|s| s.metadata) {
                Some(meta) => Current::new(id, meta),
                None => Current::none(),
            },
            None => Current::none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;
    use crate::logging::lines::tests::{Captured, after_timestamp, log_a_request};

    fn ours(format: LogFormat, spec: &str, log: impl FnOnce()) -> Vec<String> {
        let captured = Captured::default();
        let subscriber = Lines::new(format, spec.parse().unwrap(), captured.clone());
        tracing::subscriber::with_default(subscriber, log);
        captured.lines()
    }

    fn registrys(format: LogFormat, spec: &str, log: impl FnOnce()) -> Vec<String> {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::registry()
            .with(spec.parse::<Targets>().unwrap())
            .with(super::super::log_layer(format, false, captured.clone()));
        tracing::subscriber::with_default(subscriber, log);
        captured.lines()
    }

    /// Spans nested, entered twice, given an explicit parent or none, recorded after the
    /// fact, closed while a clone lives on, reused once closed, and entered on another thread.
    fn log_spans_every_way() {
        log_a_request();
        let outer = tracing::info_span!("outer", who = "a");
        let again = outer.clone();
        {
            let _first = outer.enter();
            let _second = again.enter();
            tracing::info!("entered twice");
        }
        drop(outer);
        tracing::info!(parent: &again, "through a clone");
        let orphan = tracing::info_span!(parent: None, "orphan", n = 1u64);
        let _orphan = orphan.enter();
        let child = tracing::info_span!(parent: &again, "child");
        tracing::info!(parent: &child, "explicit parent");
        tracing::info!(parent: None, "no parent");
        drop((child, again));
        tracing::info!("in the orphan");
        let later = tracing::info_span!("later", early = 1u64, late = tracing::field::Empty);
        later.record("late", "x");
        let moved = later.clone();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                moved.in_scope(|| tracing::warn!("on another thread"));
            });
        })
        .join()
        .unwrap();
        drop(later);
        let fresh = tracing::info_span!("fresh");
        fresh.in_scope(|| tracing::info!("a slot that is reused starts empty"));
        tracing::debug!("filtered out");
    }

    #[test]
    fn text_and_json_lines_are_the_registrys_to_the_byte() {
        for format in [LogFormat::Text, LogFormat::Json] {
            let ours = ours(format, "info", log_spans_every_way);
            let theirs = registrys(format, "info", log_spans_every_way);
            assert_eq!(ours.len(), 9, "{ours:#?}");
            let strip = |lines: &[String]| -> Vec<String> {
                lines
                    .iter()
                    .map(|line| match format {
                        LogFormat::Text => after_timestamp(line).to_owned(),
                        LogFormat::Json => {
                            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                            after_timestamp(v["timestamp"].as_str().unwrap());
                            v["timestamp"] = serde_json::Value::Null;
                            v.to_string()
                        }
                    })
                    .collect()
            };
            assert_eq!(strip(&ours), strip(&theirs), "{format:?}");
        }
        let text = ours(LogFormat::Text, "info", log_spans_every_way);
        let shown = |message: &str| {
            text.iter()
                .find(|line| line.ends_with(message))
                .map(|line| after_timestamp(line).to_owned())
                .unwrap_or_else(|| panic!("no line {message}: {text:#?}"))
        };
        assert!(shown("through a clone").contains(" outer{who=\"a\"}: "));
        assert!(shown("explicit parent").contains(" outer{who=\"a\"}:child: "));
        assert!(shown("no parent").starts_with("  INFO voiceplane_bin::"));
        assert!(shown("in the orphan").contains(" orphan{n=1}: "));
        assert!(
            shown("on another thread").contains(":later{early=1 late=\"x\"}: "),
            "{text:#?}"
        );
        assert!(shown("starts empty").contains(" orphan{n=1}:fresh: "));
    }

    #[test]
    fn levels_follow_the_targets() {
        let lines = ours(
            LogFormat::Text,
            "warn,voiceplane_bin::logging=debug",
            || {
                tracing::debug!("kept");
                tracing::info!(target: "sqlx::query", "dropped");
                tracing::warn!(target: "sqlx::query", "slow statement");
                tracing::trace!("dropped too");
            },
        );
        let messages: Vec<&str> = lines.iter().map(|l| after_timestamp(l)).collect();
        assert_eq!(
            messages,
            [
                " DEBUG voiceplane_bin::logging::subscriber::tests: kept",
                "  WARN sqlx::query: slow statement"
            ]
        );
    }

    /// Entering takes no reference: a span closed while still entered (its guard forgotten)
    /// frees its slot, and the id left entered finds nothing, not the span that reuses it.
    #[test]
    fn a_span_closed_while_entered_leaves_no_stale_fields() {
        let lines = ours(LogFormat::Text, "info", || {
            let gone = tracing::info_span!("gone", n = 1u64);
            std::mem::forget(gone.enter());
            drop(gone);
            let fresh = tracing::info_span!(parent: None, "fresh", m = 2u64);
            tracing::info!("after");
            fresh.in_scope(|| tracing::info!("inside"));
        });
        let messages: Vec<&str> = lines.iter().map(|l| after_timestamp(l)).collect();
        assert_eq!(
            messages,
            [
                "  INFO voiceplane_bin::logging::subscriber::tests: after",
                "  INFO fresh{m=2}: voiceplane_bin::logging::subscriber::tests: inside",
            ]
        );
    }

    #[test]
    fn current_span_is_the_innermost_entered() {
        let subscriber = Lines::new(
            LogFormat::Text,
            "info".parse().unwrap(),
            Captured::default(),
        );
        tracing::subscriber::with_default(subscriber, || {
            assert!(tracing::Span::current().is_none());
            let request = tracing::info_span!("request");
            request.in_scope(|| {
                assert_eq!(
                    tracing::Span::current().metadata().unwrap().name(),
                    "request"
                );
                tracing::info_span!("inner").in_scope(|| {
                    assert_eq!(tracing::Span::current().metadata().unwrap().name(), "inner");
                });
                assert_eq!(tracing::Span::current().id(), request.id());
            });
            assert!(tracing::Span::current().is_none());
        });
    }
}
