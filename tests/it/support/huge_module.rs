//! A generated huge module (tests/it/huge.rs, `just bench`), linked together with the
//! small module [`write_ext`] writes, which defines the function it calls.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes a module of at least `bytes` bytes to `path` and returns its size:
/// kernels of about 1 MB, mostly register arithmetic, with a module-local variable
/// loaded every 40 instructions and a call to another module's function in the
/// first: the shape of generated or unrolled code, which is how modules get this
/// large.
pub fn generate(path: &Path, bytes: u64) -> u64 {
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
    while written < bytes {
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

/// Writes the module defining `ext_fn`, which the huge module calls.
pub fn write_ext(path: &Path) {
    std::fs::write(
        path,
        ".version 7.0\n.target sm_80\n.address_size 64\n\
         .visible .func (.param .b32 r) ext_fn(.param .b32 a)\n{\n\tst.param.b32 [r], 0;\n\tret;\n}\n",
    )
    .unwrap();
}
