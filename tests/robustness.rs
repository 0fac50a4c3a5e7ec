//! Hostile and broken inputs: each is refused with a located, actionable message,
//! exit status 1 and no output file; nothing panics, hangs, or recurses without bound.
//! And a property: linking a linked module again reproduces it byte for byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ptxld-rob-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ptxld(d: &Path, args: &[&str]) -> Output {
    ptxld_in(d, args)
}

const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// Links `text` as `in.ptx`; expects exit 1, `want` in stderr, no output, no panic.
fn refused(name: &str, text: &[u8], want: &str) {
    let d = dir(name);
    std::fs::write(d.join("in.ptx"), text).unwrap();
    let o = ptxld(&d, &["-o", "out.ptx", "in.ptx"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains(want), "{name}: expected {want:?} in:\n{err}");
    assert!(!err.contains("panicked"), "{name}: {err}");
    assert!(!d.join("out.ptx").exists(), "{name}: output written");
    let leftovers = std::fs::read_dir(&d).unwrap().count();
    assert_eq!(leftovers, 1, "{name}: temporary files left");
}

#[test]
fn empty_truncated_and_binary_inputs() {
    refused("empty", b"", "in.ptx:1:1: empty input: no PTX in this file");
    refused("spaces", b"  \n\n", "empty input");
    refused(
        "no-version",
        b".target sm_80\n",
        "in.ptx:1:1: a PTX module must begin with `.version`",
    );
    refused(
        "no-target",
        b".version 7.0\n.address_size 64\n",
        "`.version` must be followed by `.target`",
    );
    let full = format!(
        "{HEADER}.visible .global .u32 g = 1;\n.visible .entry k (.param .u64 p)\n{{\n\tret;\n}}\n"
    );
    // Cut the module at every byte: never a panic; a cut inside an item is an error.
    let d = dir("cuts");
    for cut in HEADER.len()..full.len() {
        std::fs::write(d.join("c.ptx"), &full.as_bytes()[..cut]).unwrap();
        let o = ptxld(&d, &["-o", "out.ptx", "c.ptx"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "cut at {cut}: {err}");
        let _ = std::fs::remove_file(d.join("out.ptx"));
    }
    refused(
        "unclosed-body",
        format!("{HEADER}.visible .entry k ()\n{{\n\tret;\n").as_bytes(),
        "unclosed `{`",
    );
    refused(
        "unclosed-comment",
        format!("{HEADER}/* never closed\n").as_bytes(),
        "unterminated block comment",
    );
    refused(
        "unclosed-string",
        format!("{HEADER}.pragma \"open;\n").as_bytes(),
        "unterminated string literal",
    );
    refused(
        "binary",
        &[0x7f, 0x01, 0x02, 0x03, 0xff, 0x00, 0x10],
        "binary data, neither PTX text",
    );
    refused("nul-only", &[0u8; 64], "binary data");
    refused(
        "non-utf8",
        format!("{HEADER}.global .u32 \u{fffd}x;\n").as_bytes(),
        "non-ASCII byte 0xEF",
    );
    refused(
        "dup-version",
        format!("{HEADER}.version 7.0\n").as_bytes(),
        "duplicate `.version` directive",
    );
    refused(
        "dup-target",
        format!("{HEADER}.target sm_80\n").as_bytes(),
        "duplicate `.target` directive",
    );
}

#[test]
fn line_endings_and_a_header_only_module_are_fine() {
    // Lone CR line ends (ptxas accepts them) still give the right line numbers.
    refused(
        "cr",
        b".version 7.0\r.target sm_80\r.address_size 64\r.global .u32 g = 0x;\r",
        "in.ptx:4:18: hexadecimal literal",
    );
    let d = dir("crlf");
    let crlf = format!("{HEADER}.visible .global .u32 g = 1;\n").replace('\n', "\r\n");
    std::fs::write(d.join("crlf.ptx"), crlf).unwrap();
    std::fs::write(d.join("hdr.ptx"), HEADER).unwrap();
    let o = ptxld(&d, &["-o", "out.ptx", "crlf.ptx", "hdr.ptx"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_ptxas_accepts(&d, "out.ptx", "sm_80");
}

#[test]
fn enormous_names_deep_nesting_and_huge_numbers_stay_bounded() {
    // A 1 MB identifier links.
    let long = "x".repeat(1 << 20);
    let d = dir("long");
    std::fs::write(
        d.join("l.ptx"),
        format!("{HEADER}.visible .global .u32 {long};\n"),
    )
    .unwrap();
    let o = ptxld(&d, &["-o", "out.ptx", "l.ptx"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 100,000 nested braces in a body and in an initializer: no stack overflow.
    let deep_body = format!(
        "{HEADER}.visible .entry k ()\n{}ret;{}\n",
        "{".repeat(100_001),
        "}".repeat(100_001)
    );
    let d = dir("deep");
    std::fs::write(d.join("b.ptx"), &deep_body).unwrap();
    let o = ptxld(&d, &["-o", "out.ptx", "b.ptx"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    refused(
        "deep-init",
        format!(
            "{HEADER}.global .u32 a[1] = {}1{};\n",
            "{".repeat(100_000),
            "}".repeat(100_000)
        )
        .as_bytes(),
        "initializer nested too deeply",
    );
    refused(
        "deep-expr",
        format!(
            "{HEADER}.global .u32 a = {}1{};\n",
            "(".repeat(100_000),
            ")".repeat(100_000)
        )
        .as_bytes(),
        "nested too deeply",
    );
    // Numbers that do not fit: errors, not allocations.
    refused(
        "huge-dim",
        format!("{HEADER}.global .u8 a[99999999999999999999999];\n").as_bytes(),
        "integer literal does not fit in 64 bits",
    );
    let d = dir("huge");
    std::fs::write(
        d.join("h.ptx"),
        format!("{HEADER}.visible .global .u8 a[4294967296][4294967296];\n"),
    )
    .unwrap();
    let o = ptxld(&d, &["-o", "out.ptx", "h.ptx"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
}

#[test]
fn paths_that_cannot_work() {
    let d = dir("paths");
    std::fs::write(
        d.join("a.ptx"),
        format!("{HEADER}.visible .global .u32 g;\n"),
    )
    .unwrap();
    // A directory as input.
    let o = ptxld(&d, &["-o", "out.ptx", "."]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a directory"));
    // The same input twice.
    let o = ptxld(&d, &["-o", "out.ptx", "a.ptx", "./a.ptx"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("./a.ptx is given twice (also as a.ptx)"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Output into a directory that does not exist.
    let o = ptxld(&d, &["-o", "missing/out.ptx", "a.ptx"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write missing/out.ptx"));
    assert!(!d.join("missing").exists());
    // -o naming an input.
    let before = std::fs::read(d.join("a.ptx")).unwrap();
    let o = ptxld(&d, &["-o", "a.ptx", "a.ptx"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(d.join("a.ptx")).unwrap(), before);
}

/// Linking is idempotent: the output of a link, linked alone, is the same bytes.
#[test]
fn relinking_an_output_reproduces_it() {
    let d = dir("relink");
    for case in [
        "real-all-producers",
        "local-llvm-str-collision",
        "common-sizes-largest",
    ] {
        let inputs = case_inputs(case);
        let once = d.join(format!("{case}-1.ptx"));
        let twice = d.join(format!("{case}-2.ptx"));
        let mut args = vec!["-o", once.to_str().unwrap()];
        args.extend(inputs.iter().map(String::as_str));
        assert!(ptxld(&d, &args).status.success());
        let o = ptxld(&d, &["-o", twice.to_str().unwrap(), once.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&once).unwrap() == std::fs::read(&twice).unwrap(),
            "{case}: relinking changed the output"
        );
    }
}

/// Inputs the fuzzers found crashes with (fixtures/containers/fuzz): refused cleanly.
#[test]
fn fuzzer_findings_stay_fixed() {
    let d = root().join("fixtures/containers/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(&d).unwrap().flatten() {
        let o = ptxld(&d, &["--syntax-only", e.path().to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", e.path().display());
        assert!(err.contains("corrupt fatbin"), "{err}");
        n += 1;
    }
    assert!(n >= 1);
}
