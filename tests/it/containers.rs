//! Containers: what ptxld writes is read by NVIDIA's cuobjdump with the expected
//! entries and byte-identical PTX, assembles with ptxas, links into a host program;
//! what NVIDIA's tools write is accepted as input; broken and foreign-host
//! containers are refused with a located message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;
use ptxld::internal::input::fatbin;

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "ptxld failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dir(name: &str) -> PathBuf {
    scratch(&format!("cont-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A real link set: LLVM CUDA + NVVM + GCC + libdevice.
fn inputs() -> Vec<String> {
    [
        "fixtures/ptx/llvm/cu_lib.ptx",
        "fixtures/ptx/nvvm/nv_common.ptx",
        "fixtures/link/real-libdevice-three-producers/g_nvlib.ptx",
        "fixtures/ptx/libdevice/libdevice.sm70.ptx",
    ]
    .iter()
    .map(|p| s(&root().join(p)).to_string())
    .collect()
}

fn link(args: &[&str]) -> Output {
    let ins = inputs();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(ins.iter().map(String::as_str));
    ok(ptxld().args(&all).run())
}

fn cuobjdump() -> Option<PathBuf> {
    nvidia_tool("CUOBJDUMP", "nvidia/cu13/bin/cuobjdump")
}

#[test]
fn fatbin_entries_round_trip_through_our_reader() {
    let d = dir("rt");
    let fb = d.join("app.fatbin");
    link(&["--arch", "sm_80", "--arch", "sm_90", "-o", s(&fb)]);
    let p80 = d.join("app80.ptx");
    let p90 = d.join("app90.ptx");
    link(&["--arch", "sm_80", "-o", s(&p80)]);
    link(&["--arch", "sm_90", "-o", s(&p90)]);
    let data = std::fs::read(&fb).unwrap();
    assert_eq!(data.len() % 8, 0);
    let entries = fatbin::read(&data).unwrap();
    assert_eq!(entries.len(), 2);
    for (e, (sm, ptx)) in entries.iter().zip([(80, &p80), (90, &p90)]) {
        assert_eq!(e.kind, fatbin::KIND_PTX);
        assert_eq!(e.sm, sm);
        assert_eq!(e.flags, 0x11, "64-bit Linux");
        assert_eq!(e.identifier, "app.ptx");
        assert_eq!(e.payload, std::fs::read(ptx).unwrap());
    }
    // The object carries the same container.
    let obj = d.join("app.o");
    link(&["--arch", "sm_80", "--arch", "sm_90", "-o", s(&obj)]);
    let bytes = std::fs::read(&obj).unwrap();
    let (_, section) = ptxld::internal::input::container::fatbin_section(&bytes).unwrap();
    assert_eq!(section, &data[..]);
}

#[test]
fn cuobjdump_lists_and_extracts_exactly_what_we_wrote() {
    let Some(cuobjdump) = cuobjdump() else { return };
    let d = dir("cuobj");
    for (out, archs) in [
        ("one.fatbin", vec!["sm_80"]),
        ("two.fatbin", vec!["sm_80", "sm_90"]),
        ("one.o", vec!["sm_86"]),
        ("two.o", vec!["sm_80", "sm_90a"]),
    ] {
        let path = d.join(out);
        let mut args = Vec::new();
        for a in &archs {
            args.extend(["--arch", a]);
        }
        args.extend(["-o", s(&path)]);
        link(&args);
        let stem = out.split('.').next().unwrap();
        let listed = Command::new(&cuobjdump)
            .arg("-lptx")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            listed.status.success(),
            "{out}: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
        let expected: String = archs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("PTX file {:>4}: {stem}.{a}.ptx\n", i + 1))
            .collect();
        assert_eq!(String::from_utf8_lossy(&listed.stdout), expected, "{out}");
        // Extract and compare with --emit ptx for each arch.
        let x = d.join(format!("x-{out}"));
        std::fs::create_dir_all(&x).unwrap();
        let r = Command::new(&cuobjdump)
            .args(["-xptx", "all"])
            .arg(&path)
            .current_dir(&x)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        for a in &archs {
            let extracted = std::fs::read(x.join(format!("{stem}.{a}.ptx"))).unwrap();
            let direct = d.join(format!("{stem}-{a}.ptx"));
            link(&["--arch", a, "-o", s(&direct)]);
            assert!(extracted == std::fs::read(&direct).unwrap(), "{out} {a}");
            assert_ptxas_accepts(&x, &format!("{stem}.{a}.ptx"), a);
        }
    }
}

#[test]
fn the_object_links_into_a_host_program_that_finds_the_container() {
    let d = dir("host");
    let obj = d.join("dev.o");
    link(&["--symbol", "demo", "-o", s(&obj)]);
    let c = d.join("main.c");
    std::fs::write(
        &c,
        r#"#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
extern const unsigned char demo_fatbin_wrapper[24];
extern const unsigned char demo_fatbin_data[];
int main(void) {
    uint32_t magic, version, fmagic;
    const unsigned char *data;
    uint64_t size;
    memcpy(&magic, demo_fatbin_wrapper, 4);
    memcpy(&version, demo_fatbin_wrapper + 4, 4);
    memcpy(&data, demo_fatbin_wrapper + 8, 8);
    if (magic != 0x466243B1u || version != 1) return 1;
    if (data != demo_fatbin_data) return 2;
    if ((uintptr_t)data % 8 != 0) return 3;
    memcpy(&fmagic, data, 4);
    memcpy(&size, data + 8, 8);
    if (fmagic != 0xBA55ED50u) return 4;
    if (!memmem(data, 16 + size, ".target sm_80", 13)) return 5;
    printf("container at %p, %llu bytes of entries\n", (void *)data, (unsigned long long)size);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = d.join("main");
    let cc = Command::new("cc")
        .arg(&c)
        .arg(&obj)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("a C compiler (cc)");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "host program exit {:?}",
        run.status.code()
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("bytes of entries"));
}

#[test]
fn our_containers_are_inputs_too() {
    let d = dir("in");
    let fb = d.join("lib.fatbin");
    link(&["--arch", "sm_80", "--arch", "sm_90", "-o", s(&fb)]);
    let obj = d.join("lib.o");
    link(&["-o", s(&obj)]);
    let from_fb = d.join("from_fb.ptx");
    ok(ptxld()
        .args(["--arch", "sm_80", "-o", s(&from_fb), s(&fb)])
        .run());
    let text = std::fs::read_to_string(&from_fb).unwrap();
    assert!(text.contains(".target sm_80"), "the sm_80 entry was chosen");
    let from_obj = d.join("from_obj.ptx");
    ok(ptxld().args(["-o", s(&from_obj), s(&obj)]).run());
    // Without --arch the highest entry is taken.
    let hi = d.join("hi.ptx");
    ok(ptxld().args(["-o", s(&hi), s(&fb)]).run());
    assert!(std::fs::read_to_string(&hi)
        .unwrap()
        .contains(".target sm_90"));
    // No usable entry for a lower target.
    let out = ptxld()
        .args(["--arch", "sm_75", "-o", s(&d.join("no.ptx")), s(&fb)])
        .run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("has PTX only for sm_80, sm_90, none usable for sm_75"));
}

#[test]
fn emit_defaults_and_option_errors() {
    let d = dir("emit");
    for (name, magic) in [
        ("a.fatbin", &b"\x50\xed\x55\xba"[..]),
        ("a.o", b"\x7fELF"),
        ("a.ptx", b".version"),
        ("a.txt", b".version"),
    ] {
        let p = d.join(name);
        link(&["-o", s(&p)]);
        assert!(std::fs::read(&p).unwrap().starts_with(magic), "{name}");
    }
    let p = d.join("forced.bin");
    link(&["--emit", "fatbin", "-o", s(&p)]);
    assert!(fatbin::is_fatbin(&std::fs::read(&p).unwrap()));
    let ins = inputs();
    let mut args = vec!["--arch", "sm_80", "--arch", "sm_90", "-o", "x.ptx"];
    args.extend(ins.iter().map(String::as_str));
    let out = ptxld().args(&args).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use --emit fatbin or --emit obj"));
    // An arch below what an input's instructions need: no entry can be made
    // (`ld.global.nc` needs sm_32).
    let mut args = vec!["--arch", "sm_80", "--arch", "sm_20", "-o", "x.fatbin"];
    args.extend(ins.iter().map(String::as_str));
    let out = ptxld().args(&args).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("needs .target sm_32, which --arch sm_20 does not have"));
}

#[test]
fn corrupt_containers_are_refused_with_the_byte_offset() {
    let d = dir("bad");
    let fb = d.join("good.fatbin");
    link(&["-o", s(&fb)]);
    let good = std::fs::read(&fb).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "trunc.fatbin",
            good[..100].to_vec(),
            "at byte 0x8: entries size",
        ),
        (
            "nonul.fatbin",
            {
                let mut b = good.clone();
                let n = b.len();
                b[n - 8..].fill(b'x');
                b
            },
            "PTX payload has no terminating NUL",
        ),
        (
            "arch0.fatbin",
            {
                let mut b = good.clone();
                b[16 + 0x1c..16 + 0x20].fill(0);
                b
            },
            "at byte 0x2c: entry architecture is 0",
        ),
        (
            "win.fatbin",
            {
                let mut b = good.clone();
                b[16 + 0x28] = 0x41;
                b
            },
            "built for Windows",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = ptxld().args(["-o", s(&d.join("out.ptx")), s(&p)]).run();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
        assert!(!err.contains("panicked"));
    }
    // A 32-bit entry whose PTX is 64-bit: the flags contradict the text.
    let mut b = good.clone();
    b[16 + 0x28] = 0x10;
    let p = d.join("host32.fatbin");
    std::fs::write(&p, b).unwrap();
    let out = ptxld().args(["-o", s(&d.join("out.ptx")), s(&p)]).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("host platform mismatch"));
}

fn nvidia_containers() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/containers"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "fatbin" || x == "o"))
        .collect();
    v.sort();
    v
}

fn ptx_payloads(path: &Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap();
    let bytes = if fatbin::is_fatbin(&data) {
        data.clone()
    } else {
        ptxld::internal::input::container::fatbin_section(&data)
            .unwrap()
            .1
            .to_vec()
    };
    let mut v: Vec<Vec<u8>> = fatbin::read(&bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|e| e.kind == fatbin::KIND_PTX)
        .map(|e| e.payload)
        .collect();
    v.sort();
    v
}

/// fatbinary 13.5, libnvfatbin 12.9 and nvcc 13.5 wrote these (uncompressed, ZSTD, LZ4,
/// PTX + cubin, `sm_90a`, two containers, `.nv_fatbin` and `__nv_relfatbin`);
/// `expected/<file>/` holds what `cuobjdump -xptx all` extracted from each.
#[test]
fn nvidia_written_containers_read_exactly_as_cuobjdump_extracts_them() {
    let files = nvidia_containers();
    assert!(files.len() >= 12);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let exp_dir = root().join("fixtures/containers/expected").join(&name);
        let mut expected: Vec<Vec<u8>> = std::fs::read_dir(&exp_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        expected.sort();
        assert!(!expected.is_empty(), "{name}");
        assert_eq!(ptx_payloads(f), expected, "{name}");
        ok(ptxld().args(["--syntax-only", s(f)]).run());
    }
}

#[test]
fn nvidia_written_containers_link() {
    let c = |n: &str| s(&root().join("fixtures/containers").join(n)).to_string();
    let d = dir("nvin");
    // fatbinary's a.ptx (uncompressed) + libnvfatbin's b.ptx (LZ4): weak-first-wins-func.
    let out = d.join("ab.ptx");
    ok(ptxld()
        .args([
            "-o",
            s(&out),
            &c("ptx_sm80.fatbin"),
            &c("nvfatbin_lz4_sm80.fatbin"),
        ])
        .run());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("0x1A2B3C4D") && !text.contains("0x5E6F7081"),
        "first weak wins"
    );
    assert_ptxas_accepts(&d, "ab.ptx", "sm_80");
    // ZSTD fatbin and an LZ4 object in the other order: b's copy wins.
    let out2 = d.join("ba.ptx");
    ok(ptxld()
        .args([
            "-o",
            s(&out2),
            &c("ptx_sm80_zstd.fatbin"),
            &c("nvcc_ptx_sm80_lz4.o"),
        ])
        .run());
    // nvcc -rdc objects (ZSTD `__nv_relfatbin`): `twice` resolves across them. Their PTX
    // is `.version 9.5`, newer than the ptxas 12.9 of the test tools, so no assembly.
    let out3 = d.join("rdc.ptx");
    ok(ptxld()
        .args([
            "-o",
            s(&out3),
            &c("nvcc_rdc_user_sm80.o"),
            &c("nvcc_rdc_sm80.o"),
        ])
        .run());
    let text = std::fs::read_to_string(&out3).unwrap();
    assert!(text.starts_with(".version 9.5\n.target sm_80\n"));
    assert!(!text.contains(".extern .func (.param .b32 func_retval0) twice"));
    // The sm_70 entry is chosen for sm_75; the sm_80 one for sm_80.
    let out4 = d.join("pick75.ptx");
    ok(ptxld()
        .args([
            "--arch",
            "sm_75",
            "-o",
            s(&out4),
            &c("ptx_sm70_sm80.fatbin"),
        ])
        .run());
    assert!(std::fs::read_to_string(&out4)
        .unwrap()
        .contains(".target sm_75"));
    let err = ptxld()
        .args([
            "-o",
            s(&d.join("x.ptx")),
            &c("ptx_sm90a.fatbin"),
            &c("ptx_sm80.fatbin"),
        ])
        .run();
    assert_eq!(
        err.status.code(),
        Some(1),
        "sm_90a does not combine with sm_80"
    );
}

/// Corrupted and foreign-host containers made from NVIDIA's files (`bad/*.txt` says
/// what is wrong and where). Rejected with a message naming the file; never a panic.
/// Three are accepted on purpose: an unpadded payload and an options-descriptor offset
/// of 0 (cuobjdump is lenient about the first; nothing reads the second), and zero
/// padding after the last container (what a host linker leaves in `.nv_fatbin`).
#[test]
fn broken_nvidia_containers_are_refused_with_a_reason() {
    let accepted = ["payload_unpadded", "optdesc_zero", "trailing_zeros_16"];
    let bad = root().join("fixtures/containers/bad");
    let mut n = 0;
    for e in std::fs::read_dir(&bad).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "txt") {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        let out = ptxld()
            .args(["-o", s(&dir("badnv").join("o.ptx")), s(&p)])
            .run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{stem}: {err}");
        if accepted.contains(&stem.as_str()) {
            assert!(out.status.success(), "{stem}: {err}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{stem} was accepted");
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(err.contains(&name), "{stem}: {err}");
        }
        n += 1;
    }
    assert!(n >= 12);
}
