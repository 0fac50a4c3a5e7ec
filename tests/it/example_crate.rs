//! The example crate in examples/build-script links PTX in its build.rs with
//! `ptxld::Build` and embeds the results; it must build and run from a clean target.

use std::process::Command;

#[test]
fn build_script_example_builds_and_embeds_the_link() {
    let root = env!("CARGO_MANIFEST_DIR");
    let target = std::path::Path::new(root).join("target/example-crate");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["run", "--quiet", "--manifest-path"])
        .arg(format!("{root}/examples/build-script/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("PTXLD_ARCH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(".target sm_80"), "{stdout}");
    assert!(stdout.contains(".visible .entry nv_kernel("), "{stdout}");
    assert!(stdout.contains("magic 0xba55ed50"), "{stdout}");
    // --gc-sections dropped libdevice's unused functions from kernels.ptx.
    let ptx = std::fs::read_dir(target.join("debug/build"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("out/kernels.ptx"))
        .find(|p| p.exists())
        .expect("kernels.ptx in OUT_DIR");
    let text = std::fs::read_to_string(ptx).unwrap();
    assert!(text.len() < 20_000, "{} bytes", text.len());
    assert!(!text.contains("__nv_sinf"));
    // What the build script told cargo.
    let output = std::fs::read_dir(target.join("debug/build"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("output"))
        .filter(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find(|t| t.contains("cargo:rerun-if-env-changed=PTXLD_ARCH"))
        .expect("build script output");
    for want in [
        "cargo:rerun-if-env-changed=OUT_DIR",
        "cargo:rerun-if-env-changed=PTXLD_ARCH",
        "fixtures/ptx/libdevice/libdevice.sm70.ptx",
    ] {
        assert!(output.contains(want), "{want} missing:\n{output}");
    }
}
