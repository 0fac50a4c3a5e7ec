//! The C API from C (docs/c-api.md): `tests/link.c`, compiled with the system's C
//! compiler against `libptxld.a` and `include/ptxld.h`, links real producers' modules
//! (the README's example set) and checks the error paths; its output must be the
//! command line's, byte for byte. It runs under `valgrind --error-exitcode=1` (no
//! invalid access, no definite leak) where valgrind is installed; in CI it is, and a
//! missing valgrind or C compiler fails the test instead of skipping it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder of the libraries cargo builds for this test's profile
/// (`target/<profile>`), with `libptxld.a` built: cargo builds a crate's rlib for its
/// tests, not its C libraries.
fn built() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let release = dir.file_name().is_some_and(|n| n == "release");
    let o = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "ptxld-capi", "-p", "ptxld"])
        .args(release.then_some("--release"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cargo build: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Says a tool is missing: fails in CI, where every tool is installed.
fn missing(tool: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{tool} is missing and CI is set"
    );
    eprintln!("\n*** SKIPPED {tool}: not installed ***\n");
}

/// Compiles `tests/link.c` into `program` with the compiler and linker `flags`.
fn compile(program: &Path, flags: &[String]) {
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-o"])
        .arg(program)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/link.c"))
        .args(flags)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&cc.stderr);
    assert!(cc.status.success(), "cc: {err}");
}

const INPUTS: [&str; 4] = [
    "fixtures/ptx/llvm/cu_lib.ptx",
    "fixtures/ptx/nvvm/nv_common.ptx",
    "fixtures/link/real-libdevice-three-producers/g_nvlib.ptx",
    "fixtures/ptx/libdevice/libdevice.sm70.ptx",
];

#[test]
fn a_c_program_links_through_the_api() {
    if !have("cc") {
        return missing("cc");
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api");
    std::fs::create_dir_all(&tmp).unwrap();
    let program = tmp.join("link");
    let lib = built();
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let mut flags = vec![format!("-I{}", include.display())];
    flags.push(lib.join("libptxld.a").display().to_string());
    flags.extend(["-lpthread", "-ldl", "-lm"].map(String::from));
    compile(&program, &flags);
    let out = tmp.join("out.ptx");
    let inputs: Vec<PathBuf> = INPUTS.iter().map(|i| root().join(i)).collect();
    let mut run = match have("valgrind") {
        true => {
            let mut c = Command::new("valgrind");
            c.args([
                "--quiet",
                "--error-exitcode=1",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
            ])
            .arg(&program);
            c
        }
        false => {
            missing("valgrind");
            Command::new(&program)
        }
    };
    let o = run.arg(&out).args(&inputs).output().unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("c api: all checks passed"));
    // The command line's output for the same inputs and options.
    let cli = tmp.join("cli.ptx");
    let ptxld = lib.join("ptxld");
    if ptxld.exists() {
        let o = Command::new(&ptxld)
            .args(["--arch=sm_80", "-O3", "-o"])
            .arg(&cli)
            .args(&inputs)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(std::fs::read(&cli).unwrap() == std::fs::read(&out).unwrap());
    }
}

/// `scripts/install-capi.sh` installs the library, the header and a pkg-config file
/// that a C program builds with (`cc link.c $(pkg-config --cflags --libs ptxld)`),
/// against the shared library this time.
#[test]
fn installed_with_pkg_config() {
    if !have("cc") || !have("pkg-config") {
        return missing("cc or pkg-config");
    }
    let lib = built();
    let profile = lib.file_name().unwrap().to_str().unwrap().to_string();
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api-install");
    let _ = std::fs::remove_dir_all(&tmp);
    let o = Command::new(root().join("scripts/install-capi.sh"))
        .arg(&tmp)
        .env(
            "PTXLD_PROFILE",
            if profile == "release" {
                "release"
            } else {
                "debug"
            },
        )
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "install: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "ptxld"])
        .env("PKG_CONFIG_PATH", tmp.join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert!(
        pc.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&pc.stderr)
    );
    let flags = String::from_utf8(pc.stdout).unwrap();
    assert!(flags.contains("-lptxld"), "{flags}");
    let program = tmp.join("link");
    let flags: Vec<String> = flags.split_whitespace().map(String::from).collect();
    compile(&program, &flags);
    let inputs: Vec<PathBuf> = INPUTS.iter().map(|i| root().join(i)).collect();
    let o = Command::new(&program)
        .env("LD_LIBRARY_PATH", tmp.join("lib"))
        .arg(tmp.join("out.ptx"))
        .args(&inputs)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The checked-in header is what cbindgen makes of the API (`UPDATE_EXPECT=1`
/// writes it).
#[test]
fn header_is_current() {
    let made = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/ptxld.h")).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/ptxld.h");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == made,
        "include/ptxld.h is not what cbindgen makes of src/lib.rs: UPDATE_EXPECT=1 cargo test -p ptxld-capi"
    );
}
