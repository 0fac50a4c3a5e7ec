//! A test that cannot run (a tool is missing) says so where `cargo test` shows it,
//! and in CI it fails instead of skipping.

use std::process::Command;

/// Skips when asked to: the subject of the test below.
#[test]
fn probe() {
    if std::env::var_os("PTXLD_SKIP_PROBE").is_some() {
        crate::support::skip("probe", "asked to by PTXLD_SKIP_PROBE");
    }
}

/// This test binary run again, as `cargo test` runs it (output captured), for the
/// probe alone (its full name: the module path, then the function).
fn run_probe(ci: bool) -> std::process::Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "skips::probe", "--test-threads=1"])
        .env("PTXLD_SKIP_PROBE", "1")
        .env_remove("CI");
    if ci {
        cmd.env("CI", "true");
    }
    cmd.output().unwrap()
}

#[test]
fn skips_are_shown_despite_the_capture_and_fail_in_ci() {
    let o = run_probe(false);
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains("*** SKIPPED probe: asked to by PTXLD_SKIP_PROBE ***"),
        "{shown}"
    );
    let o = run_probe(true);
    assert!(!o.status.success(), "a skip passed in CI");
}
