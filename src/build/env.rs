//! The environment a build script's link reads, as the `cc` crate reads it: a
//! variable of ptxld's own is looked up under its target-specific names first, and
//! cargo is told to rerun the script when any name looked at changes. Cargo's own
//! variables (`OUT_DIR`, `TARGET`) are read without that line: cargo sets them and
//! reruns on their change anyway, so the line would be noise.

/// Reads the environment for one [`super::Build`], printing the
/// `cargo:rerun-if-env-changed` lines when `cargo_metadata` is on.
pub(super) struct Env {
    pub(super) cargo_metadata: bool,
}

impl Env {
    /// The value of ptxld's variable `base` (`PTXLD_FLAGS`), looked up like the `cc`
    /// crate's `CFLAGS`: `BASE_<target>`, `BASE_<target with _ for ->`,
    /// `TARGET_BASE`, then `BASE`; the first one set wins. Every name looked at is
    /// printed as `cargo:rerun-if-env-changed`, so that setting a more specific one
    /// later reruns the script too.
    pub(super) fn ptxld_var(&self, base: &str) -> Option<String> {
        names(base, cargo_var("TARGET").as_deref())
            .iter()
            .find_map(|name| {
                self.watch(name);
                std::env::var(name).ok()
            })
    }

    /// Tells cargo to rerun the script when `name` changes (a variable read here, or
    /// one the driver reads: ptxas's `PTXAS`, `CUDA_HOME`).
    pub(super) fn watch(&self, name: &str) {
        if self.cargo_metadata {
            println!("cargo:rerun-if-env-changed={name}");
        }
    }
}

/// A variable cargo sets for build scripts, read without a rerun line.
pub(super) fn cargo_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The names `base` is looked up under, most specific first, for the cargo target
/// `target` (`x86_64-unknown-linux-gnu`).
fn names(base: &str, target: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(t) = target {
        names.push(format!("{base}_{t}"));
        let underscored = t.replace('-', "_");
        if underscored != t {
            names.push(format!("{base}_{underscored}"));
        }
        names.push(format!("TARGET_{base}"));
    }
    names.push(base.to_string());
    names
}

/// Splits a `PTXLD_FLAGS` value into options, at whitespace (as `cc` splits `CFLAGS`).
pub(super) fn split_flags(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split_ascii_whitespace().map(String::from)
}

/// Splits a `PTXLD_ARCH` value (`sm_80,sm_90`) into targets.
pub(super) fn split_archs(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_specific_names_come_first() {
        assert_eq!(
            names("PTXLD_FLAGS", Some("x86_64-unknown-linux-gnu")),
            [
                "PTXLD_FLAGS_x86_64-unknown-linux-gnu",
                "PTXLD_FLAGS_x86_64_unknown_linux_gnu",
                "TARGET_PTXLD_FLAGS",
                "PTXLD_FLAGS",
            ]
        );
        assert_eq!(names("PTXLD_ARCH", None), ["PTXLD_ARCH"]);
    }

    #[test]
    fn lists_split_at_separators() {
        assert_eq!(
            split_archs(" sm_80, sm_90 ,").collect::<Vec<_>>(),
            ["sm_80", "sm_90"]
        );
        assert_eq!(
            split_flags("--verify  -Xptxas=-O3\t--strip-debug").collect::<Vec<_>>(),
            ["--verify", "-Xptxas=-O3", "--strip-debug"]
        );
    }
}
