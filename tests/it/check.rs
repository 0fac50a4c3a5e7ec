//! `ptxld check` and the ABI warnings, exact text.

use crate::support::*;
use std::process::Output;

fn case(name: &str) -> std::path::PathBuf {
    root().join("fixtures/link").join(name)
}

#[test]
fn check_reports_where_nvjitlink_decides_differently() {
    let o = ptxld()
        .current_dir(case("weak-first-wins-mixed-target"))
        .args(["check", "1-sm70.ptx", "2-sm80.ptx"])
        .run();
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        "note: nvJitLink: keeps the weak wf from the highest .target (sm_80), ptxld the first \
         in link order (sm_70)\n>>> nvJitLink keeps 2-sm80.ptx:9:30\n>>> ptxld keeps 1-sm70.ptx:9:30\n\
         note: needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code \
         needs PTX ISA 3.1 and .target sm_20 or higher\n\
         >>> PTX ISA 3.1 because of `.weak` at 1-sm70.ptx:7:1\n\
         >>> .target sm_20 because of `st.param.b32` at 1-sm70.ptx:13:2\n\
         0 error(s), 0 warning(s), 2 note(s)\n"
    );
    let o = ptxld()
        .current_dir(case("proto-f32-vs-b32-gcc-llvm"))
        .args(["check", "1-llvm-b32.ptx", "2-gcc-f32.ptx"])
        .run();
    assert_eq!(
        stdout(&o),
        "note: nvJitLink: prints \"Prototype doesn't match\" for lerp1 (.fN against .bN of the \
         same size); ptxld links it by PTX type compatibility\n>>> defined at 2-gcc-f32.ptx:6:41\n\
         >>> declared at 1-llvm-b32.ptx:6:32\n\
         note: needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code \
         needs PTX ISA 2.3 and .target sm_20 or higher\n\
         >>> .target sm_20 because of `st.param.b32` at 1-llvm-b32.ptx:17:3\n\
         0 error(s), 0 warning(s), 2 note(s)\n"
    );
    let o = ptxld()
        .current_dir(case("err-undef-func-called-unreachable"))
        .args(["check", "1-unreached.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "error: undefined symbol: ext_f\n>>> referenced by 1-unreached.ptx:16:14\n\
         note: nvJitLink: accepts this (undefined symbol: ext_f) because no kernel reaches the \
         callers; ptxld reports it (link with --gc-sections to drop them)\n\
         >>> declared at 1-unreached.ptx:6:32\n\
         note: needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code \
         needs PTX ISA 2.3 and .target sm_20 or higher\n\
         >>> .target sm_20 because of `st.param.b32` at 1-unreached.ptx:15:3\n\
         1 error(s), 0 warning(s), 2 note(s)\n"
    );
    let o = ptxld()
        .current_dir(case("common-max-align"))
        .args(["check", "--format", "json", "1-align4.ptx", "2-align16.ptx"])
        .run();
    assert!(stdout(&o).ends_with("}\n") && stdout(&o).lines().count() == 1);
    assert_eq!(
        json(&o),
        serde_json::json!({
            "version": 1,
            "ok": true,
            "diagnostics": [{
                "severity": "note",
                "code": "nvjitlink-differs",
                "message": "nvJitLink: keeps the first declaration's alignment for cg (4), \
                            ptxld the largest (16)",
                "location": null,
                "notes": [
                    {"message": "declared at",
                     "location": {"file": "1-align4.ptx", "line": 6, "column": 30}},
                    {"message": "declared at",
                     "location": {"file": "2-align16.ptx", "line": 6, "column": 31}},
                ],
                "help": null,
            }, {
                "severity": "note",
                "code": "needs",
                "message": "needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); \
                            its code needs PTX ISA 5.0 and any .target",
                "location": null,
                "notes": [
                    {"message": "PTX ISA 5.0 because of `.common` at",
                     "location": {"file": "1-align4.ptx", "line": 6, "column": 1}},
                ],
                "help": null,
            }],
        })
    );
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// Link errors and errors before the link (unreadable or unparsable inputs) come with
/// their codes and real locations.
#[test]
fn check_json_gives_codes_and_locations() {
    let o = ptxld()
        .current_dir(case("err-duplicate-strong-func"))
        .args(["check", "--format", "json", "1-a.ptx", "2-b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["ok"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(
        (&d["severity"], &d["code"]),
        (&"error".into(), &"duplicate-symbol".into())
    );
    assert_eq!(d["message"], "duplicate symbol: dup_f");
    assert_eq!(d["notes"][1]["location"]["file"], "2-b.ptx");
    let dir = root().join("fixtures/ptx/nvvm-invalid");
    let o = ptxld()
        .current_dir(&dir)
        .args(["check", "--format", "json", "nv_alias_fwd.ptx"])
        .run();
    let d = &json(&o)["diagnostics"][0];
    assert_eq!(d["code"], "syntax");
    assert_eq!(
        d["location"],
        serde_json::json!({"file": "nv_alias_fwd.ptx", "line": 23, "column": 1})
    );
    assert_eq!(
        d["help"],
        "instructions are only allowed inside a `.func` or `.entry` body"
    );
    let o = ptxld()
        .current_dir(&dir)
        .args(["check", "--format", "json", "missing.ptx"])
        .run();
    let d = &json(&o)["diagnostics"][0];
    assert_eq!(
        (&d["code"], &d["location"]),
        (&"io".into(), &serde_json::Value::Null)
    );
}

#[test]
fn check_applies_a_ptx_version_cap() {
    // Below an input's .version, where its code allows.
    let o = ptxld()
        .current_dir(case("version-max"))
        .args(["check", "--ptx-version", "7.0", "1-v60.ptx", "2-v88.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Not below what an instruction needs.
    let o = ptxld()
        .current_dir(case("err-ptx-version-below-use"))
        .args(["check", "--ptx-version", "7.0", "1-v74.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).starts_with(
            "error: version: `ld.global.L2::128B.u32` needs PTX ISA 7.4, newer than \
             --ptx-version 7.0\n>>> 1-v74.ptx:11:2\n"
        ),
        "{}",
        stdout(&o)
    );
}

/// A module that uses what its own header does not have is refused where the link
/// looks at what its modules use (ptxas refuses such a module on its own).
#[test]
fn check_refuses_a_module_newer_than_its_header() {
    let dir = scratch("newer-than-header");
    let text = std::fs::read_to_string(case("err-ptx-version-below-use").join("1-v74.ptx"))
        .unwrap()
        .replace(".version 7.4", ".version 7.0");
    std::fs::write(dir.join("v70.ptx"), text).unwrap();
    let o = ptxld().current_dir(&dir).args(["check", "v70.ptx"]).run();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).starts_with(
            "error: `ld.global.L2::128B.u32` needs PTX ISA 7.4, but v70.ptx declares .version \
             7.0\n>>> v70.ptx:11:2\n"
        ),
        "{}",
        stdout(&o)
    );
    let o = ptxld()
        .current_dir(&dir)
        .args(["--ptx-version=min", "-o", "out.ptx", "v70.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(!dir.join("out.ptx").exists());
}

#[test]
fn abi_violations_are_warnings_with_locations() {
    let dir = root().join("fixtures/abi");
    let o = ptxld()
        .current_dir(&dir)
        .args(["check", "violations.ptx"])
        .run();
    let text = stdout(&o);
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("warning: ABI"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: ABI: PTX ISA 1.4 predates the ABI (2.0): its calls cannot link with ABI code",
            "warning: ABI: system call malloc does not have the guide's prototype for 64-bit \
             addresses: return value 1: parameters of different size",
            "warning: ABI: return value 1 of narrow is narrower than 32 bits; widen it to .u32/.s32",
            "warning: ABI: parameter 1 of narrow is .f16, which cannot be passed or returned",
            "warning: ABI: parameter 2 of narrow is an aggregate that is not `.align N .b8 \
             name[size]` with N in 1..128",
            "warning: ABI: parameter 3 of narrow is an aggregate that is not `.align N .b8 \
             name[size]` with N in 1..128",
            "warning: ABI: pointer parameter of kernel k is not .u64 (.address_size 64)",
        ]
    );
    assert!(text.contains(">>> violations.ptx:2:10\n"), "{text}");
    // In a link they are warnings; --fatal-warnings makes them errors.
    let out = scratch("abi").join("out.ptx");
    let o = ptxld()
        .current_dir(&dir)
        .args([
            "--fatal-warnings",
            "-o",
            out.to_str().unwrap(),
            "violations.ptx",
        ])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warnings are errors"));
    // Real producers' output has no ABI findings.
    for f in valid_fixtures() {
        let o = ptxld().args(["check", f.to_str().unwrap()]).run();
        assert!(
            !stdout(&o).contains("ABI"),
            "{}: {}",
            f.display(),
            stdout(&o)
        );
    }
}

/// `ptxld check` types operands as ptxas does (docs/linking.md, "Operand types"); a
/// link does not. Each slip is reported at its line and column, as ptxas reports it.
#[test]
fn check_reports_operands_ptxas_refuses() {
    let dir = root().join("fixtures/check");
    let o = ptxld()
        .current_dir(&dir)
        .args(["check", "operand-types.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = format!("{}{}", stdout(&o), stderr(&o));
    let expected = [
        "error: operand 3 of `mul.f32` is an integer, which is not a .f32 number (write it as 1.0 or 0f3F800000)\n>>> operand-types.ptx:27:21\n",
        "error: `%r4` is not declared: `%r<4>` declares %r0 to %r3\n>>> operand-types.ptx:30:11\n>>> declared at operand-types.ptx:17:13\n",
        "error: `ld.const.f32` addresses `scale_add_param_1`, a .param variable, in .const\n>>> operand-types.ptx:31:22\n>>> declared at operand-types.ptx:14:14\n",
        "3 error(s), 0 warning(s), 1 note(s)",
    ];
    for e in expected {
        assert!(text.contains(e), "missing:\n{e}\nin:\n{text}");
    }
    let scratch = scratch("check-operand-types");
    let o = ptxld()
        .current_dir(&dir)
        .args(["operand-types.ptx", "-o"])
        .arg(scratch.join("out.ptx"))
        .run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // ptxas refuses the same three lines.
    let Some(ptxas) = ptxas() else {
        return;
    };
    let out = std::process::Command::new(ptxas)
        .current_dir(&dir)
        .args(["-arch=sm_80", "-c", "-o", "/dev/null", "operand-types.ptx"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    for line in ["line 27;", "line 30;", "line 31;"] {
        assert!(err.contains(line), "{err}");
    }
}
