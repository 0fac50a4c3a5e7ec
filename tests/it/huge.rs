//! A 2 GB module links with bounded memory (issue #8): the input is mapped and
//! written out by the kernel, never copied onto the heap, and nothing the linker
//! allocates grows with the input's bytes, only with its symbols and references.
//! Time is not asserted here (tests never time); `just bench` measures it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;

use crate::support::{huge_module, ptxld, scratch};

/// Size of the generated module.
const INPUT_BYTES: u64 = 2_000_000_000;

/// The private writable memory ptxld may map for it (`RLIMIT_DATA`: heap, thread
/// stacks, the allocator's reserve), a fifth of the input. Measured need: between
/// 250 and 300 MB, of which about 190 MB is glibc's growth pad (`M_TOP_PAD`, 64 MiB
/// per arena, set in main.rs) and about 100 MB the heap at its peak (heaptrack); the
/// input's mapping is shared and read-only, so it does not count.
const HEAP_LIMIT: u64 = INPUT_BYTES / 5;

fn tail(path: &Path, n: u64) -> Vec<u8> {
    let mut f = File::open(path).unwrap();
    f.seek(SeekFrom::End(-(n as i64))).unwrap();
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    buf
}

#[test]
fn a_2_gb_module_links_with_its_heap_limited_to_a_fifth_of_it() {
    let d = scratch("huge-module");
    let len = huge_module::generate(&d.join("huge.ptx"), INPUT_BYTES);
    huge_module::write_ext(&d.join("ext.ptx"));
    let mut cmd = ptxld()
        .args(["-o", "out.ptx", "ext.ptx", "huge.ptx"])
        .current_dir(&d)
        .command();
    // SAFETY: only an async-signal-safe system call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: HEAP_LIMIT as libc::rlim_t,
                rlim_max: HEAP_LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{len}-byte module with a {HEAP_LIMIT}-byte heap: {:?}\n{err}",
        o.status
    );
    // Every kernel is in the output, in order, after ext_fn and the prototypes: the
    // last megabyte is the input's.
    let out = d.join("out.ptx");
    assert!(std::fs::metadata(&out).unwrap().len() > len);
    assert!(tail(&out, 1 << 20) == tail(&d.join("huge.ptx"), 1 << 20));
    std::fs::remove_dir_all(&d).unwrap();
}
