//! The log's writer: lines are copied into one pending buffer, and a thread of its own writes
//! the whole buffer at once whenever it holds something.
//!
//! tracing-appender's non-blocking writer, which this replaces, sent each line as a `Vec`
//! through a channel to a thread that woke for it, wrote it and slept again. On 2 cores that
//! cost nothing measurable; with the server on 8 cores, the logged `/healthz` and agent read
//! stopped at about 180,000 requests/s with three of the eight cores idle, while the same
//! server without its request log went on to 360,000 (benches/README.md, "Scaling"): each line
//! paid an allocation freed on another thread, a slot of a channel every core wrote to, and
//! the clone and drop of the channel's sender (two shared counters) per event.
//!
//! Here a line is one short lock and a copy. The thread is woken only by the first line into
//! an empty buffer, and after each write it lets [`LINGER`] pass before it looks again: on a
//! busy server the lines of that moment gather into one write, and the loggers, who find it
//! awake, never have to wake it. Without the pause it woke for nearly every line: on one
//! core, a `/healthz` cost a third more CPU than with tracing-appender, whose receiver yields
//! a few times before it sleeps.
//!
//! Nothing is dropped: a logger waits while [`MAX_PENDING`] bytes are waiting (a stuck stderr
//! stops the logging threads rather than filling memory), and once the guard is dropped the
//! last lines are written and later ones go straight to the output under the lock.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// The most bytes of lines waiting for the writer thread before loggers wait for it.
const MAX_PENDING: usize = 16 * 1024 * 1024;

/// How long the writer thread waits after a write before it takes the next batch: the most
/// a line waits for its write, beyond the write before it.
const LINGER: Duration = Duration::from_millis(1);

/// The buffer a batch leaves behind is cut back to this, so that one burst does not hold its
/// size for the life of the process.
const KEEP_CAPACITY: usize = 256 * 1024;

/// Hands lines to the writer thread: a [`MakeWriter`] for the log's subscriber.
#[derive(Clone)]
pub(crate) struct LineWriter {
    shared: Arc<Shared>,
}

/// Stops the writer thread when dropped, once every line given before is written.
pub(crate) struct WriterGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// The writer thread waits here for lines.
    lines: Condvar,
    /// Loggers wait here for room.
    room: Condvar,
    max_pending: usize,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    /// The writer thread waits on `lines` (or is about to): the next line wakes it.
    writer_asleep: bool,
    /// A logger waits on `room`.
    logger_waiting: bool,
    closed: bool,
    /// The output, once the writer thread has ended: lines are written to it under the lock.
    after: Option<Box<dyn Write + Send>>,
}

/// Starts the thread `name` writing lines to `out`.
pub(crate) fn spawn(
    name: &str,
    out: impl Write + Send + 'static,
) -> io::Result<(LineWriter, WriterGuard)> {
    spawn_bounded(name, Box::new(out), MAX_PENDING)
}

fn spawn_bounded(
    name: &str,
    out: Box<dyn Write + Send>,
    max_pending: usize,
) -> io::Result<(LineWriter, WriterGuard)> {
    let shared = Arc::new(Shared {
        state: Mutex::default(),
        lines: Condvar::new(),
        room: Condvar::new(),
        max_pending,
    });
    let thread = {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || shared.write_out(out))?
    };
    Ok((
        LineWriter {
            shared: Arc::clone(&shared),
        },
        WriterGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `line` whole.
    fn push(&self, line: &[u8]) -> io::Result<()> {
        let mut state = self.lock();
        loop {
            if let Some(out) = state.after.as_mut() {
                return out.write_all(line).and_then(|()| out.flush());
            }
            if state.closed || state.pending.len() < self.max_pending {
                break;
            }
            state.logger_waiting = true;
            state = self
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.pending.extend_from_slice(line);
        let wake = std::mem::take(&mut state.writer_asleep);
        drop(state);
        if wake {
            self.lines.notify_one();
        }
        Ok(())
    }

    /// The writer thread: every batch, until closed and empty.
    fn write_out(&self, mut out: Box<dyn Write + Send>) {
        let mut batch = Vec::new();
        loop {
            let mut state = self.lock();
            while state.pending.is_empty() && !state.closed {
                state.writer_asleep = true;
                state = self
                    .lines
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.pending.is_empty() {
                let _ = out.flush();
                state.after = Some(out);
                drop(state);
                self.room.notify_all();
                return;
            }
            std::mem::swap(&mut state.pending, &mut batch);
            let room = std::mem::take(&mut state.logger_waiting);
            drop(state);
            if room {
                self.room.notify_all();
            }
            // As with any log to stderr, a line that cannot be written is lost: there is
            // nowhere to report it.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
            batch.shrink_to(KEEP_CAPACITY);
            if !self.lock().closed {
                std::thread::sleep(LINGER);
            }
        }
    }
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.lines.notify_one();
        self.shared.room.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One event's line: the subscribers write each line with one `write_all`.
pub(crate) struct Line<'a>(&'a Shared);

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.push(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LineWriter {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line(&self.shared)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    /// An output whose bytes the test reads, and which can be made to stop (a stuck pipe).
    #[derive(Clone, Default)]
    struct Output {
        bytes: Arc<Mutex<Vec<u8>>>,
        gate: Arc<Mutex<Option<mpsc::Receiver<()>>>>,
    }

    impl Write for Output {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if let Some(gate) = self.gate.lock().unwrap().as_ref() {
                let _ = gate.recv();
            }
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Output {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.bytes.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::yield_now();
        }
    }

    #[test]
    fn every_line_of_every_thread_is_written_whole_and_in_each_threads_order() {
        let output = Output::default();
        let (writer, guard) = spawn("test-log", output.clone()).unwrap();
        std::thread::scope(|s| {
            for t in 0..8 {
                let writer = &writer;
                s.spawn(move || {
                    for i in 0..5_000 {
                        let line = format!("thread {t} line {i} {}\n", "x".repeat(i % 300));
                        writer.make_writer().write_all(line.as_bytes()).unwrap();
                    }
                });
            }
        });
        // Dropping the guard writes what is still pending before it returns.
        drop(guard);
        let lines = output.lines();
        assert_eq!(lines.len(), 8 * 5_000);
        let mut next = [0usize; 8];
        for line in &lines {
            let words: Vec<&str> = line.split(' ').collect();
            let (t, i): (usize, usize) = (words[1].parse().unwrap(), words[3].parse().unwrap());
            assert_eq!(i, next[t], "thread {t}'s lines in order: {line}");
            assert_eq!(words[4].len(), i % 300, "a whole line: {line}");
            next[t] += 1;
        }
    }

    #[test]
    fn a_stuck_output_makes_loggers_wait_instead_of_dropping_lines() {
        let (open, gate) = mpsc::channel();
        let output = Output::default();
        *output.gate.lock().unwrap() = Some(gate);
        let (writer, guard) = spawn_bounded("test-log", Box::new(output.clone()), 64).unwrap();
        let shared = Arc::clone(&writer.shared);
        // The first line is taken by the writer thread, which then waits on the output.
        writer.make_writer().write_all(b"first\n").unwrap();
        until("the writer thread to take the first line", || {
            shared.lock().pending.is_empty()
        });
        // 64 bytes fill the pending buffer; the logger of the next line must wait.
        writer.make_writer().write_all(&[b'.'; 63]).unwrap();
        writer.make_writer().write_all(b"\n").unwrap();
        let blocked = std::thread::spawn({
            let writer = writer.clone();
            move || writer.make_writer().write_all(b"last\n").unwrap()
        });
        until("the logger to wait for room", || {
            shared.lock().logger_waiting
        });
        assert!(!blocked.is_finished());
        assert_eq!(output.lines(), Vec::<String>::new());
        // The output moves again: everything is written, in order.
        drop(open);
        blocked.join().unwrap();
        drop(guard);
        assert_eq!(output.lines(), ["first", &".".repeat(63), "last"]);
    }

    #[test]
    fn a_line_logged_after_the_guard_is_dropped_is_still_written() {
        let output = Output::default();
        let (writer, guard) = spawn("test-log", output.clone()).unwrap();
        writer.make_writer().write_all(b"before\n").unwrap();
        drop(guard);
        writer.make_writer().write_all(b"after\n").unwrap();
        assert_eq!(output.lines(), ["before", "after"]);
    }
}
