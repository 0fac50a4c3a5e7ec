//! src/isa/typing.tsv, the experiments behind `ptxld check`'s operand typing
//! (docs/linking.md, "Operand types"): ptxas 12.9 assembles every `accept` statement
//! and refuses every `refuse` and `missed` one with the message recorded. (That
//! `ptxld check` reports exactly the `refuse` ones is a unit test of
//! `src/isa/typing.rs`, which needs no ptxas.)

use std::path::Path;
use std::process::Command;

use crate::support::*;

const EXPERIMENTS: &str = include_str!("../../src/isa/typing.tsv");
const PREAMBLE: &str = include_str!("../../src/isa/preamble.ptx");

/// One line: verdict, statement, ptxas's first message (`-`: none to compare).
struct Experiment<'a> {
    line: usize,
    verdict: &'a str,
    statement: &'a str,
    message: &'a str,
}

fn experiments() -> Vec<Experiment<'static>> {
    EXPERIMENTS
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(n, l)| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert!(
                cols.len() == 3 && ["accept", "refuse", "missed"].contains(&cols[0]),
                "typing.tsv:{}: expected verdict, statement, message: {l}",
                n + 1
            );
            Experiment {
                line: n + 1,
                verdict: cols[0],
                statement: cols[1],
                message: cols[2],
            }
        })
        .collect()
}

/// `None` when ptxas did as the experiment says, else what went wrong.
fn run(ptxas: &Path, dir: &Path, n: usize, e: &Experiment) -> Option<String> {
    let text = PREAMBLE
        .replace("VERSION", "8.0")
        .replace("TARGET", "sm_80")
        .replace("MODULE_SCOPE", "")
        .replace("EXAMPLE", e.statement);
    let file = dir.join(format!("t{n}.ptx"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_80", "-c", "-o", "/dev/null"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .find_map(|l| l.split_once("error   : ").map(|(_, m)| m.trim()))
        .unwrap_or("-");
    let ok = match e.verdict {
        "accept" => out.status.success(),
        _ => !out.status.success() && (e.message == "-" || first == e.message),
    };
    (!ok).then(|| {
        format!(
            "typing.tsv:{} `{}`: expected {} ({}); ptxas: {}",
            e.line,
            e.statement,
            e.verdict,
            e.message,
            err.trim()
        )
    })
}

#[test]
fn every_typing_experiment_holds_with_ptxas() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let all = experiments();
    let dir = scratch("operand_typing");
    let threads = 4 * std::thread::available_parallelism().map_or(2, usize::from);
    let failures: Vec<String> = in_parallel(&all, threads, |n, e| run(&ptxas, &dir, n, e))
        .into_iter()
        .flatten()
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} experiments failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
