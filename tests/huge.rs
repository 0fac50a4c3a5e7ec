//! A 2 GB module links with bounded memory (issue #8): the input is mapped and
//! written out by the kernel, never copied onto the heap, and nothing the linker
//! allocates grows with the input's bytes, only with its symbols and references.
//! Time is not asserted here (tests never time); `just bench` measures it.

mod common;

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Size of the generated module.
const INPUT_BYTES: u64 = 2_000_000_000;

/// The private writable memory ptxld may map for it (`RLIMIT_DATA`: heap, thread
/// stacks, the allocator's reserve), a fifth of the input. Measured need: between
/// 250 and 300 MB, of which about 190 MB is glibc's growth pad (`M_TOP_PAD`, 64 MiB
/// per arena, set in main.rs) and about 100 MB the heap at its peak (heaptrack); the
/// input's mapping is shared and read-only, so it does not count.
const HEAP_LIMIT: u64 = INPUT_BYTES / 5;

/// Kernels of about 1 MB, mostly register arithmetic, with a module-local variable
/// loaded every 40 instructions and a call to another module's function in the
/// first: the shape of generated or unrolled code, which is how modules get this
/// large.
fn generate(path: &Path) -> u64 {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    let head = ".version 7.0\n.target sm_80\n.address_size 64\n\n\
                .extern .func (.param .b32 r) ext_fn(.param .b32 a);\n\
                .global .align 4 .u32 counter;\n\n";
    w.write_all(head.as_bytes()).unwrap();
    let mut block = String::from("\tld.global.u32 \t%r1, [counter];\n");
    for i in 0..39 {
        block.push_str(&format!(
            "\tadd.s32 \t%r{}, %r{}, {};\n",
            2 + i % 5,
            1 + i % 6,
            i
        ));
    }
    let mut written = head.len() as u64;
    let mut k = 0;
    while written < INPUT_BYTES {
        let mut f = format!(
            ".visible .entry k{k}(.param .u64 k{k}_out)\n{{\n\t.reg .b32 \t%r<8>;\n\
             \t.reg .b64 \t%rd<2>;\n\tld.param.u64 \t%rd1, [k{k}_out];\n"
        );
        if k == 0 {
            f.push_str(
                "\t{\n\t.param .b32 a;\n\tst.param.b32 \t[a], %r1;\n\t.param .b32 r;\n\
                 \tcall.uni (r), ext_fn, (a);\n\tld.param.b32 \t%r2, [r];\n\t}\n",
            );
        }
        w.write_all(f.as_bytes()).unwrap();
        written += f.len() as u64;
        for _ in 0..(1 << 20) / block.len() {
            w.write_all(block.as_bytes()).unwrap();
            written += block.len() as u64;
        }
        let end = "\tst.global.u32 \t[%rd1], %r2;\n\tret;\n}\n";
        w.write_all(end.as_bytes()).unwrap();
        written += end.len() as u64;
        k += 1;
    }
    w.flush().unwrap();
    written
}

fn tail(path: &Path, n: u64) -> Vec<u8> {
    let mut f = File::open(path).unwrap();
    f.seek(SeekFrom::End(-(n as i64))).unwrap();
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    buf
}

#[test]
fn a_2_gb_module_links_with_its_heap_limited_to_a_fifth_of_it() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("huge-module");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let len = generate(&d.join("huge.ptx"));
    std::fs::write(
        d.join("ext.ptx"),
        ".version 7.0\n.target sm_80\n.address_size 64\n\
         .visible .func (.param .b32 r) ext_fn(.param .b32 a)\n{\n\tst.param.b32 [r], 0;\n\tret;\n}\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptxld"));
    cmd.args(["-o", "out.ptx", "ext.ptx", "huge.ptx"])
        .current_dir(&d);
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
