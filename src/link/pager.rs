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

/// How many batches, and how many bytes of text (or one batch, if larger), the
/// helper thread reads ahead of the writer. Four 1 MB batches keep the writer fed
/// (x1: it waits ~3 ms in all); 16 MB of them raised peak RSS by 6–14 MB for nothing.
const AHEAD: usize = 4;
const AHEAD_BYTES: u64 = 4 << 20;

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

/// The index one past the last run of the batch that starts at run `start`: runs
/// are added while the batch holds at most `max_bytes` of text (a batch has at least
/// one run).
fn batch_end(runs: &[Run], start: usize, max_bytes: u64) -> usize {
    let mut bytes = 0;
    let mut next = start;
    while next < runs.len() {
        let len = runs[next].hi - runs[next].lo;
        if next > start && bytes + len > max_bytes {
            break;
        }
        bytes += len;
        next += 1;
    }
    next
}

/// The texts of the runs `start..end`, in order.
pub(crate) struct Batch {
    pub start: usize,
    pub end: usize,
    pub texts: Vec<RunText>,
}

impl Batch {
    fn bytes_read(&self) -> u64 {
        self.texts.iter().flatten().map(|t| t.len() as u64).sum()
    }
}

/// Hands the writer the runs' texts, a batch at a time, in order. The helper thread
/// sends whole batches: one message (and at most one wake-up of a waiting writer) per
/// batch, not per run (a run is one module's text, often a few kilobytes).
pub(crate) struct Reader<'r, 'a> {
    runs: &'r [Run],
    srcs: &'r [ModuleText<'a>],
    /// Batches read by the helper thread, when there is one.
    ahead: Option<Receiver<Batch>>,
    /// Bytes read by the helper and not yet written.
    in_flight: Option<&'r AtomicU64>,
    /// The first run of the next batch.
    next: usize,
    /// Bytes of text per batch.
    batch_bytes: u64,
}

impl<'r, 'a> Reader<'r, 'a> {
    /// Calls `write` with a reader for `runs` in batches of `batch_bytes` of text
    /// ([`batch_end`]); a helper thread reads ahead when the thread pool has more than
    /// one thread (with one, the writer reads each batch when it gets to it).
    pub fn scope<R>(
        runs: &'r [Run],
        srcs: &'r [ModuleText<'a>],
        batch_bytes: u64,
        write: impl FnOnce(&mut Reader<'_, 'a>) -> R,
    ) -> R {
        if runs.len() < 2 || rayon::current_num_threads() < 2 {
            return write(&mut Reader {
                runs,
                srcs,
                ahead: None,
                in_flight: None,
                next: 0,
                batch_bytes,
            });
        }
        let (tx, rx) = sync_channel(AHEAD);
        let in_flight = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut start = 0;
                while start < runs.len() {
                    let end = batch_end(runs, start, batch_bytes);
                    let len: u64 = runs[start..end].iter().map(|r| r.hi - r.lo).sum();
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
                    let batch = read_batch(runs, srcs, start, end);
                    in_flight.fetch_add(batch.bytes_read(), Ordering::AcqRel);
                    // The writer stopped early (a write failed): stop reading.
                    if tx.send(batch).is_err() {
                        return;
                    }
                    start = end;
                }
            });
            // Dropping the reader (and its receiver) ends the helper early on errors.
            let result = write(&mut Reader {
                runs,
                srcs,
                ahead: Some(rx),
                in_flight: Some(&in_flight),
                next: 0,
                batch_bytes,
            });
            stop.store(true, Ordering::Release);
            result
        })
    }

    /// The next batch, `None` after the last.
    pub fn next_batch(&mut self) -> Option<Batch> {
        if self.next >= self.runs.len() {
            return None;
        }
        // Without a helper, or should it have died, the batch is read here (and
        // there is no read-ahead left to account for).
        let ahead = self.ahead.as_ref().and_then(|rx| rx.recv().ok());
        if ahead.is_none() {
            self.ahead = None;
            self.in_flight = None;
        }
        let batch = ahead.unwrap_or_else(|| {
            let end = batch_end(self.runs, self.next, self.batch_bytes);
            read_batch(self.runs, self.srcs, self.next, end)
        });
        self.next = batch.end;
        Some(batch)
    }

    /// The writer has written `batch`.
    pub fn done(&mut self, batch: &Batch) {
        for (run, text) in self.runs[batch.start..batch.end].iter().zip(&batch.texts) {
            if text.is_none() {
                run.written_from_mapping(self.srcs);
            }
        }
        if let Some(n) = self.in_flight {
            n.fetch_sub(batch.bytes_read(), Ordering::AcqRel);
        }
    }
}

fn read_batch(runs: &[Run], srcs: &[ModuleText<'_>], start: usize, end: usize) -> Batch {
    Batch {
        start,
        end,
        texts: runs[start..end].iter().map(|r| r.read(srcs)).collect(),
    }
}
