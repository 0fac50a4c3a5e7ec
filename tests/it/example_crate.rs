//! The example crate in examples/build-script links PTX in its build.rs with
//! `ptxld::Build` and embeds the results; it must build, run and pass its test from a
//! clean target, and its failing link (feature `broken-link`) must read well in
//! cargo's output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn target() -> PathBuf {
    Path::new(root()).join("target/example-crate")
}

/// `cargo ARGS` on the example crate, with none of ptxld's variables set and no
/// backtraces asked for.
fn cargo(args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .args(args)
        .arg("--manifest-path")
        .arg(format!("{}/examples/build-script/Cargo.toml", root()))
        .env("CARGO_TARGET_DIR", target())
        .env_remove("PTXLD_ARCH")
        .env_remove("PTXLD_FLAGS")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

/// What the build script printed for cargo, in the build whose output contains
/// `marker`.
fn script_output(marker: &str) -> String {
    std::fs::read_dir(target().join("debug/build"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("output"))
        .filter(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find(|t| t.contains(marker))
        .unwrap_or_else(|| panic!("no build script output with {marker}"))
}

/// The file `name` in the example's OUT_DIR.
fn out_dir_file(name: &str) -> PathBuf {
    std::fs::read_dir(target().join("debug/build"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("out").join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} in OUT_DIR"))
}

#[test]
fn build_script_example_builds_and_embeds_the_link() {
    let out = cargo(&["run", "--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(".target sm_80"), "{stdout}");
    assert!(stdout.contains(".visible .entry nv_kernel("), "{stdout}");
    assert!(stdout.contains("kernels_multi.fatbin: "), "{stdout}");
    assert!(
        stdout.contains("libkernels_obj.a, linked in: a fatbin of"),
        "{stdout}"
    );
    // --gc-sections dropped libdevice's unused functions from kernels.ptx.
    let text = std::fs::read_to_string(out_dir_file("kernels.ptx")).unwrap();
    assert!(text.len() < 20_000, "{} bytes", text.len());
    assert!(!text.contains("__nv_sinf"));
    // `flag("-Map=...")` wrote the link map.
    let map = std::fs::read_to_string(out_dir_file("kernels.map")).unwrap();
    assert!(map.contains("nv_kernel"), "{map}");
    // What the build script told cargo: ptxld's own variables, under their
    // target-specific names too, never cargo's; the inputs; the object's library.
    let output = script_output("cargo:rustc-link-lib=static=kernels_obj");
    for want in [
        "cargo:rerun-if-env-changed=PTXLD_ARCH\n",
        "cargo:rerun-if-env-changed=TARGET_PTXLD_FLAGS\n",
        "cargo:rerun-if-env-changed=PTXLD_FLAGS\n",
        "fixtures/ptx/libdevice/libdevice.sm70.ptx",
        "cargo:rustc-link-search=native=",
    ] {
        assert!(output.contains(want), "{want} missing:\n{output}");
    }
    assert!(!output.contains("=OUT_DIR"), "{output}");
    assert!(!output.contains("cargo:warning"), "{output}");
    // The object cargo linked in is reached through its wrapper symbol.
    let test = cargo(&["test", "--quiet"]);
    assert!(
        test.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(String::from_utf8_lossy(&test.stdout).contains("1 passed"));
}

#[test]
fn a_failed_link_stops_the_build_at_its_line_with_every_inputs_errors() {
    let out = cargo(&["build", "--quiet", "--features", "broken-link"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // The build script's line, not ptxld's.
    assert!(stderr.contains("panicked at build.rs:22:"), "{stderr}");
    assert!(
        stderr.contains("ptxld could not link broken.ptx (11 errors) from:"),
        "{stderr}"
    );
    // Every input's errors: the missing one and both broken ones.
    for want in [
        "error: cannot read ",
        "fixtures/ptx/missing.ptx: No such file or directory",
        "fixtures/broken/address-brackets.ptx:11:32: expected `]` before `;`",
        "fixtures/broken/address-brackets.ptx:14:28:",
        "fixtures/broken/call-shape.ptx:19:22:",
        "fixtures/broken/call-shape.ptx:23:22: call to `f` has 0 arguments",
    ] {
        assert!(stderr.contains(want), "{want} missing:\n{stderr}");
    }
    // Each diagnostic once, and no backtrace or frame of ptxld's own code.
    assert_eq!(stderr.matches("address-brackets.ptx:11:32").count(), 1);
    for noise in ["stack backtrace", "src/build", "ptxld::build"] {
        assert!(!stderr.contains(noise), "{noise}:\n{stderr}");
    }
}

/// Warnings reach cargo as one `cargo:warning` line each, with the location, from a
/// build script of a crate made here.
#[test]
fn warnings_are_one_cargo_warning_each() {
    let dir = target().join("warning-crate");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"ptxld-warning-example\"\nversion = \"0.0.0\"\nedition = \
         \"2021\"\npublish = false\n\n[build-dependencies]\nptxld = {{ path = {:?}, \
         default-features = false }}\n\n[workspace]\n",
        root()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    let script = format!(
        "fn main() {{\n    ptxld::Build::new().file({:?}).compile(\"abi\");\n}}\n",
        format!("{}/fixtures/abi/violations.ptx", root())
    );
    std::fs::write(dir.join("build.rs"), script).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output = script_output("fixtures/abi/violations.ptx");
    let warnings: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("cargo:warning="))
        .collect();
    // The command line prints the same diagnostics over several lines each.
    let cli = Command::new(env!("CARGO_BIN_EXE_ptxld"))
        .arg(format!("{}/fixtures/abi/violations.ptx", root()))
        .arg("-o")
        .arg(dir.join("cli.ptx"))
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&cli.stderr);
    let diagnostics = rendered.matches("ptxld: warning: ").count();
    assert!(diagnostics >= 2, "{rendered}");
    assert!(rendered.lines().count() > diagnostics, "{rendered}");
    assert_eq!(warnings.len(), diagnostics, "{output}");
    for w in &warnings {
        assert!(
            w.starts_with("cargo:warning=ptxld: warning: ") && w.contains("violations.ptx:"),
            "{w}"
        );
    }
}
