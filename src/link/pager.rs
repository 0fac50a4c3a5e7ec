//! The inputs' bytes for the writer, read ahead of it.
//!
//! Parsing reads each mapped input through a copy and never touches its mapping
//! (`frontend::parse_from_copy`), so at the end of parsing no input page is
//! resident. The writer needs every input's text once more, in output order. Mapping
//! the pages back in and releasing them behind the writer would cost a TLB
//! shootdown per module (an interrupt to every core the process runs on); instead
//! the text is read (`pread`-like) into buffers, by a helper thread when the thread
//! pool has more than one thread, so that resident memory holds the inputs being
//! written and no more (docs/performance.md).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::time::Duration;

use super::rope::ModuleText;

/// Runs whose source range is larger than this are written from the mapping (and
/// its pages released after), not from a copy: one run never doubles its memory.
const MAX_COPY: u64 = 16 << 20;

/// How many runs, and how many bytes of text (or one run, if larger), the helper
/// thread reads ahead of the writer.
const AHEAD: usize = 64;
const AHEAD_BYTES: u64 = 16 << 20;

/// Consecutive output pieces from the source of one mapped module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// The module.
    pub module: u32,
    /// The index of its first piece.
    pub start: usize,
    /// The source range its pieces lie in.
    pub lo: u64,
    pub hi: u64,
}

/// A run's text: a copy of its range, or `None` to use the mapping.
pub(crate) type RunText = Option<Vec<u8>>;

impl Run {
    /// Reads the run's range from its file; `None` if it is too large to copy or the
    /// file cannot be read whole (the mapping is used then).
    fn read(&self, srcs: &[ModuleText<'_>]) -> RunText {
        let pages = srcs[self.module as usize].pages?;
        let len = self.hi - self.lo;
        if len > MAX_COPY {
            return None;
        }
        pages.read_vec_at(self.lo, len as usize)
    }

    /// After writing the run from the mapping: drop the pages it mapped in (parsing
    /// left them out, since the file could be read).
    fn written_from_mapping(&self, srcs: &[ModuleText<'_>]) {
        if let Some(pages) = srcs[self.module as usize].pages {
            if pages.is_readable_file() {
                pages.release();
            }
        }
    }
}

/// Hands the writer each run's text, in order.
pub(crate) struct Reader<'r, 'a> {
    runs: &'r [Run],
    srcs: &'r [ModuleText<'a>],
    /// Texts read by the helper thread, when there is one.
    ahead: Option<Receiver<RunText>>,
    /// Bytes read by the helper and not yet written.
    in_flight: Option<&'r AtomicU64>,
    /// The next run to hand out.
    next: usize,
}

impl<'r, 'a> Reader<'r, 'a> {
    /// Calls `write` with a reader for `runs`; a helper thread reads ahead when the
    /// thread pool has more than one thread (with one, the writer reads each run
    /// when it gets to it).
    pub fn scope<R>(
        runs: &'r [Run],
        srcs: &'r [ModuleText<'a>],
        write: impl FnOnce(&mut Reader<'_, 'a>) -> R,
    ) -> R {
        if runs.len() < 2 || rayon::current_num_threads() < 2 {
            return write(&mut Reader {
                runs,
                srcs,
                ahead: None,
                in_flight: None,
                next: 0,
            });
        }
        let (tx, rx) = sync_channel(AHEAD);
        let in_flight = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for run in runs {
                    let len = run.hi - run.lo;
                    loop {
                        let held = in_flight.load(Ordering::Acquire);
                        if held == 0 || held + len <= AHEAD_BYTES {
                            break;
                        }
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    let text = run.read(srcs);
                    if let Some(t) = &text {
                        in_flight.fetch_add(t.len() as u64, Ordering::AcqRel);
                    }
                    // The writer stopped early (a write failed): stop reading.
                    if tx.send(text).is_err() {
                        return;
                    }
                }
            });
            // Dropping the reader (and its receiver) ends the helper early on errors.
            let result = write(&mut Reader {
                runs,
                srcs,
                ahead: Some(rx),
                in_flight: Some(&in_flight),
                next: 0,
            });
            stop.store(true, Ordering::Release);
            result
        })
    }

    /// The text of the next run.
    pub fn next_text(&mut self) -> RunText {
        let run = &self.runs[self.next];
        self.next += 1;
        match &self.ahead {
            Some(rx) => rx.recv().ok().flatten(),
            None => run.read(self.srcs),
        }
    }

    /// The writer has written run `i`, from `text`.
    pub fn done(&mut self, i: usize, text: &RunText) {
        match (text, self.in_flight) {
            (None, _) => self.runs[i].written_from_mapping(self.srcs),
            (Some(t), Some(n)) => {
                n.fetch_sub(t.len() as u64, Ordering::AcqRel);
            }
            (Some(_), None) => {}
        }
    }
}
