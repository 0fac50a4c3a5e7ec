//! Part of the `ptxld` binary, not of the library: a large link runs with glibc's
//! allocator backing its heaps with transparent huge pages.
//!
//! A link keeps most of what it allocates (the parsed modules, about 60 MB for the
//! 105 MB benchmark link), and every 4 KiB page of it costs a page fault when first
//! written: 23,500 faults on that link, 14% of its CPU time in `perf`. Where the
//! kernel hands out transparent huge pages only to memory that asks for them (the
//! `madvise` mode, a common default), glibc asks when its `glibc.malloc.hugetlb=1`
//! tunable is set: 3,200–4,700 faults instead, and in most alternating comparisons the
//! link 5–30 ms faster at two threads, in some no different (docs/performance.md,
//! thirteenth session). Peak memory grows by about 8 MB.
//!
//! glibc reads tunables only when a process starts, so the command executes itself
//! once more (`/proc/self/exe`, same arguments) with the tunable added to
//! `GLIBC_TUNABLES`, before it forks or starts any thread. That costs about 1.5 ms,
//! so it is done only for a link whose named input files add up to
//! [`MIN_INPUT_BYTES`], judged from the sizes of the first few. The executed
//! process puts `GLIBC_TUNABLES` back as it was, so nothing it starts inherits the
//! change. It is not done where the kernel gives huge pages to every large mapping
//! anyway (`always`) or to none (`never`), where the tunable is already set, nor on
//! a host that takes back free memory (below). `PTXLD_HUGE_PAGES=0` turns it off
//! everywhere; `PTXLD_HUGE_PAGES=1` asks on such a host too.
//!
//! On a virtual machine whose host takes back the guest's free memory (a virtio
//! balloon that reports free pages), a huge page is a gamble: the host takes back
//! whole free 2 MB blocks soon after they are freed, and a huge page needs such a
//! block, which the host must then back again, page by page, as the kernel zeroes
//! it. 4 KiB pages come from smaller free pieces, which the host keeps. Measured on
//! the 2-core benchmark VM: first writes to fresh memory cost 0.1 ms per MB in huge
//! pages the host still backs, 2.1–3.2 ms per MB in huge pages it took back, and
//! 0.4–0.6 ms per MB in 4 KiB pages, whichever; in the benchmark's own order of
//! runs, links of 105 MB took 161–347 ms with huge pages and 159–242 ms without,
//! and links of 420 MB the same time either way (docs/performance.md, twentieth
//! session). So on such a host the link runs with 4 KiB pages: no `exec` at all.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Smallest total input size worth the second `exec`.
const MIN_INPUT_BYTES: u64 = 16 << 20;

/// How many inputs are looked at to add up their sizes.
const MAX_STATS: usize = 1024;

/// Set in the executed process: what `GLIBC_TUNABLES` was before (`=` + value), or
/// empty if it was not set.
const MARKER: &str = "PTXLD_HUGE_PAGES_FROM";

const TUNABLE: &str = "glibc.malloc.hugetlb=1";

/// Set once this process is the one executed with huge pages.
static EXECUTED: AtomicBool = AtomicBool::new(false);

/// In a process this module executed: restores `GLIBC_TUNABLES`. Call first thing
/// in `main`, before any thread starts.
pub fn restore_environment() {
    let Some(was) = std::env::var_os(MARKER) else {
        return;
    };
    EXECUTED.store(true, Ordering::Relaxed);
    std::env::remove_var(MARKER);
    match previous(&was) {
        Some(value) => std::env::set_var("GLIBC_TUNABLES", value),
        None => std::env::remove_var("GLIBC_TUNABLES"),
    }
}

/// Set by [`reexec_for`] when it did not ask because the host takes back free memory.
static HOST_RECLAIMS: AtomicBool = AtomicBool::new(false);

/// For `--stats`: whether glibc was asked for huge pages, or the user's
/// `GLIBC_TUNABLES` decides, or why not.
pub fn status() -> &'static str {
    if EXECUTED.load(Ordering::Relaxed) {
        "asked for"
    } else if tunable_set(std::env::var_os("GLIBC_TUNABLES").as_ref()) {
        "left to GLIBC_TUNABLES"
    } else if HOST_RECLAIMS.load(Ordering::Relaxed) {
        "not asked for (the host takes back free memory: 4 KiB pages are steadier)"
    } else {
        "not asked for"
    }
}

fn tunable_set(tunables: Option<&OsString>) -> bool {
    tunables
        .and_then(|t| t.to_str())
        .is_some_and(|t| t.contains("glibc.malloc.hugetlb"))
}

/// The `GLIBC_TUNABLES` to execute with and the marker that remembers the old one,
/// or `None` to leave a value that is not text alone.
fn with_tunable(tunables: Option<OsString>) -> Option<(String, String)> {
    Some(match tunables.map(OsString::into_string) {
        Some(Ok(t)) if !t.is_empty() => (format!("{t}:{TUNABLE}"), format!("={t}")),
        Some(Ok(_)) => (TUNABLE.to_string(), "=".to_string()),
        None => (TUNABLE.to_string(), String::new()),
        Some(Err(_)) => return None,
    })
}

/// The `GLIBC_TUNABLES` a marker remembers (`None`: it was not set).
fn previous(marker: &std::ffi::OsStr) -> Option<&str> {
    marker.to_str().and_then(|w| w.strip_prefix('='))
}

/// Executes this program again with huge pages asked for, if that is worth it for
/// a link of `inputs` (see the module documentation). Returns if it is not, or if
/// the `exec` failed (the link then runs as it is). Must be called before any
/// thread starts.
pub fn reexec_for(inputs: &[PathBuf]) {
    let tunables = std::env::var_os("GLIBC_TUNABLES");
    let asked = std::env::var_os("PTXLD_HUGE_PAGES");
    // `EXECUTED` is what stops a second `exec`; the marker is checked too in case a
    // caller skipped `restore_environment`: a loop of `exec`s would never end.
    if tunable_set(tunables.as_ref())
        || EXECUTED.load(Ordering::Relaxed)
        || std::env::var_os(MARKER).is_some()
        || asked.as_ref().is_some_and(|v| v == "0")
        || !kernel_needs_asking()
        || !large(inputs)
    {
        return;
    }
    // `PTXLD_HUGE_PAGES=1` asks even there.
    if asked.as_ref().is_none_or(|v| v != "1") && host_reclaims_free_memory() {
        HOST_RECLAIMS.store(true, Ordering::Relaxed);
        return;
    }
    let mut args = std::env::args_os();
    let Some(arg0) = args.next() else { return };
    let Some((value, was)) = with_tunable(tunables) else {
        return;
    };
    // Only returns on failure.
    let _ = std::process::Command::new("/proc/self/exe")
        .arg0(arg0)
        .args(args)
        .env("GLIBC_TUNABLES", value)
        .env(MARKER, OsString::from(was))
        .exec();
}

/// True if a virtio balloon device reports the guest's free pages to the host.
fn host_reclaims_free_memory() -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon") else {
        return false;
    };
    devices
        .flatten()
        .any(|d| std::fs::read(d.path().join("features")).is_ok_and(|f| reports_free_pages(&f)))
}

/// Whether a virtio device's `features` file (one `0`/`1` per feature bit, bit 0
/// first) has the balloon's free page reporting bit (`VIRTIO_BALLOON_F_REPORTING`).
fn reports_free_pages(features: &[u8]) -> bool {
    const VIRTIO_BALLOON_F_REPORTING: usize = 5;
    features.get(VIRTIO_BALLOON_F_REPORTING) == Some(&b'1')
}

/// True if the kernel gives transparent huge pages only to memory that asks.
fn kernel_needs_asking() -> bool {
    std::fs::read("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|mode| mode.windows(9).any(|w| w == b"[madvise]"))
}

/// True if the files among `inputs` add up to [`MIN_INPUT_BYTES`] (looking at the
/// first [`MAX_STATS`] of them), or if the first [`SAMPLE`] of them, as many times
/// over as there are inputs, would.
fn large(inputs: &[PathBuf]) -> bool {
    large_by(
        inputs.len(),
        inputs
            .iter()
            .map(|path| std::fs::metadata(path).map_or(0, |m| m.len())),
    )
}

/// How many inputs are enough to judge a link's size by: a link of thousands of
/// modules took 360 `stat` calls (about 3 ms, before anything else could start)
/// to add up to [`MIN_INPUT_BYTES`].
const SAMPLE: usize = 16;

/// [`large`] for `count` inputs of the given sizes (read lazily, in order).
fn large_by(count: usize, sizes: impl Iterator<Item = u64>) -> bool {
    let mut total = 0u64;
    for (i, size) in sizes.take(MAX_STATS).enumerate() {
        total += size;
        let seen = i as u64 + 1;
        if total >= MIN_INPUT_BYTES
            || (seen >= SAMPLE as u64 && total / seen * count as u64 >= MIN_INPUT_BYTES)
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever `GLIBC_TUNABLES` was, the executed process gets it back.
    #[test]
    fn the_marker_gives_back_the_old_tunables() {
        for old in [
            None,
            Some(""),
            Some("glibc.malloc.check=3"),
            Some("a=1:b=2"),
        ] {
            let (value, marker) = with_tunable(old.map(OsString::from)).unwrap();
            assert!(value.ends_with(TUNABLE), "{value}");
            assert!(tunable_set(Some(&OsString::from(&value))));
            if let Some(o) = old.filter(|o| !o.is_empty()) {
                assert!(value.starts_with(o), "{value}");
            }
            assert_eq!(previous(std::ffi::OsStr::new(&marker)), old, "{marker:?}");
        }
    }

    /// A link is large by its total, or by a sample of its first inputs; sizes past
    /// the point of deciding are never asked for.
    #[test]
    fn a_link_is_judged_large_by_its_first_inputs() {
        let mb = 1 << 20;
        let asked = std::cell::Cell::new(0);
        let sizes = |list: Vec<u64>| {
            asked.set(0);
            list.into_iter().inspect(|_| asked.set(asked.get() + 1))
        };
        // 2,310 modules of 45 KB: decided after the sample.
        assert!(large_by(2310, sizes(vec![45 << 10; 2310])));
        assert_eq!(asked.get(), SAMPLE);
        // One big file.
        assert!(large_by(1, sizes(vec![20 * mb])));
        // Fifteen small files: 15 MB in all, not large.
        assert!(!large_by(15, sizes(vec![mb; 15])));
        assert_eq!(asked.get(), 15);
        // Small first files, a large one later: added up until it is reached.
        let mut late = vec![1 << 10; 100];
        late[60] = 16 * mb;
        assert!(large_by(100, sizes(late)));
        assert_eq!(asked.get(), 61);
        // Many tiny files, 100 KB in all.
        assert!(!large_by(100, sizes(vec![1 << 10; 100])));
    }

    /// The feature bits of this benchmark VM's balloon (free page reporting on), of
    /// one without it, and files too short to say.
    #[test]
    fn free_page_reporting_is_feature_bit_five() {
        let vm = b"01100101000000000000000000000000100000000000000000000000\n";
        assert!(reports_free_pages(vm));
        assert!(!reports_free_pages(
            b"01100001000000000000000000000000100000000000\n"
        ));
        assert!(!reports_free_pages(b"0110"));
        assert!(!reports_free_pages(b""));
    }

    #[test]
    fn tunables_that_are_not_text_are_left_alone() {
        use std::os::unix::ffi::OsStringExt;
        assert!(with_tunable(Some(OsString::from_vec(vec![0xff]))).is_none());
    }
}
