//! Machine code through ptxas (docs/machine-code.md): `--emit cubin`, and fatbins with
//! ptxas's cubins (`--gpu-code sm_NN`) beside PTX (`compute_NN`), checked with NVIDIA's
//! cuobjdump. The tests with ptxas skip loudly without it (never in CI); the usage
//! errors need none.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;
use ptxld::internal::input::fatbin;

/// LLVM, NVRTC and NVVM modules with six kernels, for sm_80.
const CASE: &str = "fixtures/link/real-weak-template-llvm-nvrtc";

/// The kernels of [`CASE`].
const KERNELS: [&str; 6] = [
    "_Z7k_scalePfPKfii",
    "_Z9rt_reducePfPKf8RtParams",
    "nv_kernel",
    "_Z6k_tilePi",
    "_Z6k_miscPdPKfi4Pair",
    "_Z7rt_miscPdPKfi",
];

fn inputs() -> Vec<String> {
    let case = std::fs::read_to_string(root().join(CASE).join("case.txt")).unwrap();
    let line = case.lines().find(|l| l.starts_with("inputs:")).unwrap();
    line["inputs:".len()..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// ptxld with `PTXAS` set, in the case's folder, `args` then the inputs.
fn link(ptxas: &Path, args: &[&str]) -> Output {
    ptxld()
        .env("PTXAS", Some(ptxas.as_os_str()))
        .current_dir(root().join(CASE))
        .args(args)
        .args(inputs())
        .run()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

fn cuobjdump() -> Option<PathBuf> {
    nvidia_tool("CUOBJDUMP", "nvidia/cu13/bin/cuobjdump")
}

/// cuobjdump's standard output for `args`; it must succeed.
fn dump(cuobjdump: &Path, args: &[&str], file: &Path) -> String {
    let o = Command::new(cuobjdump)
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cuobjdump {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// How many times cuobjdump -sass shows each kernel's code.
fn sass_functions(sass: &str, kernel: &str) -> usize {
    sass.lines()
        .filter(|l| l.trim() == format!("Function : {kernel}"))
        .count()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_cubin_is_what_ptxas_makes_of_the_output() {
    let (Some(ptxas), Some(cuobjdump)) = (ptxas(), cuobjdump()) else {
        return;
    };
    let d = scratch("machine-code-cubin");
    let (cubin, ptx, reference) = (d.join("k.cubin"), d.join("k.ptx"), d.join("ref.cubin"));
    ok(link(&ptxas, &["--arch", "sm_80", "-o", s(&cubin)]));
    let bytes = std::fs::read(&cubin).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    let sass = dump(&cuobjdump, &["-sass"], &cubin);
    for k in KERNELS {
        assert_eq!(sass_functions(&sass, k), 1, "{k} in\n{sass}");
    }
    // The same as ptxas on the PTX output.
    ok(link(&ptxas, &["--arch", "sm_80", "-o", s(&ptx)]));
    let o = Command::new(&ptxas)
        .args(["-arch=sm_80", s(&ptx), "-o", s(&reference)])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(std::fs::read(&reference).unwrap() == bytes);
    // ptxas options: `--maxrregcount` and `-Xptxas` reach ptxas.
    let limited = d.join("limited.cubin");
    ok(link(
        &ptxas,
        &["--arch", "sm_80", "--maxrregcount", "24", "-o", s(&limited)],
    ));
    let usage = dump(&cuobjdump, &["-res-usage"], &limited);
    let regs: Vec<u32> = usage
        .split("REG:")
        .skip(1)
        .map(|r| r.split(|c: char| !c.is_ascii_digit()).next().unwrap())
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(regs.len(), KERNELS.len(), "{usage}");
    assert!(regs.iter().all(|&r| r <= 24), "{usage}");
    // `-O0` reaches ptxas: other machine code than its default -O3.
    let unoptimized = d.join("o0.cubin");
    ok(link(
        &ptxas,
        &["--arch", "sm_80", "-O0", "-o", s(&unoptimized)],
    ));
    assert!(std::fs::read(&unoptimized).unwrap() != bytes);
    let o = link(
        &ptxas,
        &[
            "--arch",
            "sm_80",
            "-Xptxas",
            "--no-such-option",
            "-o",
            s(&limited),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("ptxld: error: ptxas: Unknown option '-no-such-option'"),
        "{}",
        stderr(&o)
    );
    assert!(!limited.exists(), "a failed link removes its output");
}

#[test]
fn a_fatbin_has_ptxas_cubins_and_ptx_in_the_order_given() {
    let (Some(ptxas), Some(cuobjdump)) = (ptxas(), cuobjdump()) else {
        return;
    };
    let d = scratch("machine-code-fatbin");
    let fb = d.join("app.fatbin");
    let codes = ["--gpu-code", "sm_80,sm_90", "--gpu-code", "compute_90"];
    ok(link(&ptxas, &[&codes[..], &["-o", s(&fb)]].concat()));
    assert_eq!(
        dump(&cuobjdump, &["-lelf", "-lptx"], &fb),
        "ELF file    1: app.sm_80.cubin\nELF file    2: app.sm_90.cubin\n\
         PTX file    1: app.sm_90.ptx\n"
    );
    let sass = dump(&cuobjdump, &["-sass"], &fb);
    assert!(sass.contains("code for sm_80") && sass.contains("code for sm_90"));
    for k in KERNELS {
        assert_eq!(sass_functions(&sass, k), 2, "{k} in\n{sass}");
    }
    // Each entry is what the single-target outputs are.
    let data = std::fs::read(&fb).unwrap();
    let entries = fatbin::read(&data).unwrap();
    let kinds: Vec<(u16, u32)> = entries.iter().map(|e| (e.kind, e.sm)).collect();
    assert_eq!(
        kinds,
        [
            (fatbin::KIND_ELF, 80),
            (fatbin::KIND_ELF, 90),
            (fatbin::KIND_PTX, 90)
        ]
    );
    for (e, arch) in entries.iter().zip(["sm_80", "sm_90"]) {
        let one = d.join(format!("{arch}.cubin"));
        ok(link(&ptxas, &["--arch", arch, "-o", s(&one)]));
        let cubin = std::fs::read(&one).unwrap();
        assert_eq!(&e.payload[..cubin.len()], &cubin[..], "{arch}");
        assert!(e.payload[cubin.len()..].iter().all(|&b| b == 0));
        assert_eq!(e.flags, 0x11, "64-bit Linux");
    }
    let ptx = d.join("sm_90.ptx");
    ok(link(&ptxas, &["--arch", "sm_90", "-o", s(&ptx)]));
    assert!(entries[2].payload == std::fs::read(&ptx).unwrap());
    // Byte-identical from run to run and at one thread; the object carries it.
    let again = d.join("again");
    std::fs::create_dir(&again).unwrap();
    let again = again.join("app.fatbin");
    ok(link(
        &ptxas,
        &[&codes[..], &["-j", "1", "-o", s(&again)]].concat(),
    ));
    assert!(std::fs::read(&again).unwrap() == data);
    let obj = d.join("app.o");
    ok(link(&ptxas, &[&codes[..], &["-o", s(&obj)]].concat()));
    let bytes = std::fs::read(&obj).unwrap();
    let (_, section) = ptxld::internal::input::container::fatbin_section(&bytes).unwrap();
    assert!(section == &data[..]);
}

/// A slip ptxas refuses is reported at the input line, and nothing is written; the
/// same in a split assembly, whose note names the part.
#[test]
fn ptxas_errors_point_at_the_inputs() {
    let (Some(ptxas), Some(nvjitlink)) = (ptxas(), nvjitlink()) else {
        return;
    };
    let d = scratch("machine-code-error");
    std::fs::write(
        d.join("k.ptx"),
        ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\
         \t.reg .b64 %rd<3>;\n\tadd.f32 %rd1, %rd2, %rd1;\n\tret;\n}\n\
         .visible .entry k2()\n{\n\tret;\n}\n",
    )
    .unwrap();
    for (parts, note) in [
        ("1", "target sm_80, output line 7"),
        ("2", "target sm_80 part 1 of 2, part line 7"),
    ] {
        let o = ptxld()
            .env("PTXAS", Some(ptxas.as_os_str()))
            .env("NVJITLINK", Some(nvjitlink.as_os_str()))
            .current_dir(&d)
            .args(["--split-kernels", parts, "-o", "k.cubin", "k.ptx"])
            .run();
        assert_eq!(o.status.code(), Some(1));
        assert!(
            stderr(&o).starts_with(
                "ptxld: error: k.ptx:8:2: ptxas: Arguments mismatch for instruction 'add'\n"
            ),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(note), "{}", stderr(&o));
        assert!(!d.join("k.cubin").exists());
    }
}

fn nvjitlink() -> Option<PathBuf> {
    nvidia_tool("NVJITLINK_SO", "nvidia/nvjitlink/lib/libnvJitLink.so.12")
}

/// `--split-kernels` (docs/machine-code.md): the kernels assembled in parts linked by
/// nvJitLink, in a cubin and in a fatbin's machine code; the same bytes from run to
/// run and at any thread count; `-v` says how the kernels were shared out.
#[test]
fn split_assembly_makes_one_cubin_of_the_parts() {
    let (Some(ptxas), Some(cuobjdump), Some(nvjitlink)) = (ptxas(), cuobjdump(), nvjitlink())
    else {
        return;
    };
    let d = scratch("machine-code-split");
    let split = |args: &[&str]| {
        ok(ptxld()
            .env("PTXAS", Some(ptxas.as_os_str()))
            .env("NVJITLINK", Some(nvjitlink.as_os_str()))
            .current_dir(root().join(CASE))
            .args(args)
            .args(inputs())
            .run())
    };
    let cubin = d.join("k.cubin");
    let o = split(&[
        "-v",
        "--arch",
        "sm_80",
        "--split-kernels",
        "4",
        "-o",
        s(&cubin),
    ]);
    assert!(
        stderr(&o).contains(
            "--split-kernels: sm_80 in 4 parts of 1, 1, 2, 2 kernels, linked by nvJitLink 12."
        ),
        "{}",
        stderr(&o)
    );
    let sass = dump(&cuobjdump, &["-sass"], &cubin);
    for k in KERNELS {
        assert_eq!(sass_functions(&sass, k), 1, "{k} in\n{sass}");
    }
    let bytes = std::fs::read(&cubin).unwrap();
    for j in ["1", "2"] {
        let again = d.join(format!("j{j}.cubin"));
        split(&[
            "-j",
            j,
            "--arch",
            "sm_80",
            "--split-kernels",
            "4",
            "-o",
            s(&again),
        ]);
        assert!(std::fs::read(&again).unwrap() == bytes, "-j {j}");
    }
    // More parts than kernels: one each.
    let o = split(&[
        "-v",
        "--arch",
        "sm_80",
        "--split-kernels",
        "9",
        "-o",
        s(&cubin),
    ]);
    assert!(
        stderr(&o).contains("in 6 parts of 1, 1, 1, 1, 1, 1 kernels"),
        "{}",
        stderr(&o)
    );
    let fb = d.join("app.fatbin");
    split(&[
        "--gpu-code",
        "sm_80,sm_90,compute_90",
        "--split-kernels",
        "3",
        "-o",
        s(&fb),
    ]);
    assert_eq!(
        dump(&cuobjdump, &["-lelf", "-lptx"], &fb),
        "ELF file    1: app.sm_80.cubin\nELF file    2: app.sm_90.cubin\n\
         PTX file    1: app.sm_90.ptx\n"
    );
    let sass = dump(&cuobjdump, &["-sass"], &fb);
    for k in KERNELS {
        assert_eq!(sass_functions(&sass, k), 2, "{k} in\n{sass}");
    }
    // Without nvJitLink: refused before anything is read, and nothing written.
    let none = d.join("none.cubin");
    let o = ptxld()
        .env("PTXAS", Some(ptxas.as_os_str()))
        .env(
            "NVJITLINK",
            Some("/nonexistent-ptxld/libnvJitLink.so".as_ref()),
        )
        .current_dir(root().join(CASE))
        .args(["--split-kernels", "2", "-o", s(&none)])
        .args(inputs())
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "NVJITLINK is /nonexistent-ptxld/libnvJitLink.so, which does not exist; \
             --split-kernels needs nvJitLink"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!none.exists());
}

/// What cannot be linked is refused before anything is read, with what to do.
#[test]
fn machine_code_usage_errors() {
    let d = scratch("machine-code-usage");
    let refused = |args: &[&str], says: &str| {
        let o = ptxld()
            .env("PTXAS", Some("/nonexistent-ptxld/ptxas".as_ref()))
            .current_dir(root().join(CASE))
            .args(args)
            .args(inputs())
            .run();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(std::fs::read_dir(&d).unwrap().next().is_none(), "{args:?}");
    };
    let out = |name: &str| d.join(name).to_str().unwrap().to_string();
    refused(
        &[
            "--gpu-code",
            "sm_80",
            "--arch",
            "sm_80",
            "-o",
            &out("a.fatbin"),
        ],
        "--gpu-code names the targets: leave out --arch",
    );
    refused(
        &["--gpu-code", "sm_80", "-o", &out("a.ptx")],
        "--gpu-code makes a fatbin: use --emit fatbin or --emit obj",
    );
    refused(
        &["--arch", "sm_80", "--arch", "sm_90", "-o", &out("a.cubin")],
        "a cubin is for one --arch",
    );
    refused(
        &["--arch", "sm_80", "-o", &out("a.cubin")],
        "PTXAS is /nonexistent-ptxld/ptxas, which",
    );
    refused(
        &["--gpu-code", "sm_80,compute_80", "-o", &out("a.fatbin")],
        "--gpu-code sm_NN needs ptxas",
    );
    refused(
        &["--split-kernels", "2", "-o", &out("a.ptx")],
        "--split-kernels splits ptxas's work on machine code: use it with --emit cubin",
    );
    // PTX alone needs no ptxas.
    ok(ptxld()
        .env("PTXAS", Some("/nonexistent-ptxld/ptxas".as_ref()))
        .current_dir(root().join(CASE))
        .args([
            "--gpu-code",
            "compute_80,compute_90",
            "-o",
            &out("p.fatbin"),
        ])
        .args(inputs())
        .run());
    let o = ptxld()
        .args(["--gpu-code", "sm_8x", "-o", &out("b.fatbin"), "x.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("sm_8x"), "{}", stderr(&o));
}

/// `Build::gpu_code`, `Build::ptxas_option`, a cubin and a split cubin from a build script, in a
/// child process that has `PTXAS` ([`in_child_with_ptxas`]).
#[test]
fn build_api_writes_machine_code() {
    const CHILD: &str = "PTXLD_TEST_BUILD_MACHINE_CODE_CHILD";
    const NAME: &str = "machine_code::build_api_writes_machine_code";
    let Some(d) = std::env::var_os(CHILD) else {
        let (Some(ptxas), Some(cuobjdump), Some(_)) = (ptxas(), cuobjdump(), nvjitlink()) else {
            return;
        };
        let d = scratch("machine-code-build-api");
        in_child_with_ptxas(NAME, CHILD, &d, &ptxas);
        assert_eq!(
            dump(&cuobjdump, &["-lelf", "-lptx"], &d.join("app.fatbin")),
            "ELF file    1: app.sm_80.cubin\nPTX file    1: app.sm_80.ptx\n"
        );
        for cubin in ["k.cubin", "k3.cubin"] {
            let usage = dump(&cuobjdump, &["-res-usage"], &d.join(cubin));
            assert_eq!(
                usage.matches("REG:").count(),
                KERNELS.len(),
                "{cubin}: {usage}"
            );
        }
        return;
    };
    let d = PathBuf::from(d);
    let case = root().join(CASE);
    let files: Vec<PathBuf> = inputs().iter().map(|f| case.join(f)).collect();
    // A build of the case's inputs into `d`, with `with`'s settings, as NAME.
    let build = |name: &str, with: &dyn Fn(&mut ptxld::Build)| {
        let mut b = ptxld::Build::new();
        b.files(&files).out_dir(&d).cargo_metadata(false);
        with(&mut b);
        b.try_compile(name)
    };
    let fatbin = build("app", &|b| {
        b.gpu_code("sm_80")
            .gpu_code("compute_80")
            .ptxas_option("-O2")
            .emit(ptxld::OutputKind::Fatbin);
    });
    assert_eq!(fatbin.unwrap(), d.join("app.fatbin"));
    let cubin = build("k", &|b| {
        b.arch("sm_80").emit(ptxld::OutputKind::Cubin);
    });
    assert_eq!(cubin.unwrap(), d.join("k.cubin"));
    let split = build("k3", &|b| {
        b.arch("sm_80")
            .emit(ptxld::OutputKind::Cubin)
            .split_kernels(3);
    });
    assert_eq!(split.unwrap(), d.join("k3.cubin"));
    let bad = build("bad", &|b| {
        b.gpu_code("sm_8x").emit(ptxld::OutputKind::Fatbin);
    });
    match bad {
        Err(ptxld::BuildError::Options { message, .. }) => {
            assert!(message.contains("sm_8x"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
