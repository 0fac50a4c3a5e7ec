//! `just bench`: front-end and link throughput, reported as a ratio to `cat` of the
//! same files measured in the same run (never asserted; tests do not time anything).
//!
//! Corpora:
//! * libdevice: the ~845 KB llc-14 build of libdevice (fixtures/ptx/libdevice);
//! * generated: 200 copies of libdevice with every non-local symbol renamed per copy
//!   (written by ptxld's own splicing writer), about 170 MB, in target/bench-corpus.
//!   Linking them exercises resolution of ~70,000 global names and the renaming of
//!   every colliding module-local symbol (`__internal_*`, `__cudart_*` in each copy);
//! * cross-referencing sets x1/x2/x4 (target/bench-cross-*, see `cross_corpus`);
//! * one huge module of 0.5 and 2 GB (tests/it/support/huge_module.rs), generated in
//!   target/bench-huge and removed after.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptxld::internal::input::Bytes;
use ptxld::internal::ir::{Linkage, Module};
use ptxld::internal::parse::parse_module;
use ptxld::internal::source::{FileId, SourceFile};
use ptxld::internal::write::emit::write_module;

#[path = "../tests/it/support/huge_module.rs"]
mod huge_module;

const RUNS: usize = 7;
const COPIES: usize = 200;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn libdevice() -> PathBuf {
    let dir = root().join("fixtures/ptx/libdevice");
    std::fs::read_dir(&dir)
        .expect("fixtures/ptx/libdevice is missing")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "ptx"))
        .expect("no libdevice fixture")
}

/// Writes the generated corpus once (reused by later runs if complete).
fn generated_corpus(src: &Path) -> Vec<PathBuf> {
    let dir = root().join("target/bench-corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(src).unwrap();
    let f = SourceFile::new("libdevice".into(), None, Bytes::Owned(bytes));
    let parsed = parse_module(FileId(0), f.bytes());
    assert!(parsed.diagnostics.is_empty());
    let m = parsed.module;
    (0..COPIES)
        .map(|i| {
            let path = dir.join(format!("m{i:03}.ptx"));
            if !path.exists() {
                let names: Vec<Option<Vec<u8>>> = m
                    .symbols
                    .iter()
                    .map(|s| {
                        (s.linkage != Linkage::Local).then(|| {
                            let mut n = f.slice(s.name).to_vec();
                            n.extend_from_slice(format!("_m{i}").as_bytes());
                            n
                        })
                    })
                    .collect();
                write_renamed(&m, &f, &names, &path);
            }
            path
        })
        .collect()
}

/// Median wall time of a shell command line (after one warm-up run).
fn time_shell(cmd: &str) -> Duration {
    let run = || {
        let t = Instant::now();
        let status = Command::new("sh").args(["-c", cmd]).status().unwrap();
        assert!(status.success(), "{cmd} failed");
        t.elapsed()
    };
    run();
    median((0..RUNS).map(|_| run()).collect())
}

/// The largest real-producer link set (LLVM, GCC, NVRTC, NVVM, libdevice: 21 modules)
/// replicated `replicas` times: every exported name is specialised per replica
/// (`name_rK`, consistently in definitions and imports), while weak and common names
/// and the system calls stay shared, so the link resolves cross-module imports,
/// weak duplicates across replicas, common merges, and thousands of colliding
/// module-local names. Written under target/ (git-ignored), reused when present.
fn cross_corpus(replicas: usize) -> Vec<PathBuf> {
    let set = root().join("fixtures/link/real-all-producers");
    let case = std::fs::read_to_string(set.join("case.txt")).unwrap();
    let inputs: Vec<PathBuf> = case
        .lines()
        .find_map(|l| l.strip_prefix("inputs:"))
        .unwrap()
        .split_whitespace()
        .map(|p| set.join(p))
        .collect();
    let files: Vec<SourceFile> = inputs
        .iter()
        .map(|p| SourceFile::new(String::new(), None, Bytes::Owned(std::fs::read(p).unwrap())))
        .collect();
    let modules: Vec<_> = files
        .iter()
        .map(|f| {
            let p = parse_module(FileId(0), f.bytes());
            assert!(p.diagnostics.iter().all(|d| !d.is_error()));
            p.module
        })
        .collect();
    // Names that stay shared: weak or common anywhere, or never defined (system calls).
    let mut defined = std::collections::HashSet::new();
    let mut keep = std::collections::HashSet::new();
    for (m, f) in modules.iter().zip(&files) {
        for s in &m.symbols {
            let name = f.slice(s.name).to_vec();
            if matches!(s.linkage, Linkage::Weak | Linkage::Common) {
                keep.insert(name.clone());
            }
            if s.is_defined() {
                defined.insert(name);
            }
        }
    }
    let dir = root().join(format!("target/bench-cross-{replicas}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = Vec::new();
    for k in 0..replicas {
        for (i, (m, f)) in modules.iter().zip(&files).enumerate() {
            let path = dir.join(format!("r{k:04}-{i:02}.ptx"));
            if !path.exists() {
                let names: Vec<Option<Vec<u8>>> = m
                    .symbols
                    .iter()
                    .map(|s| {
                        let name = f.slice(s.name);
                        let shared = keep.contains(name) || !defined.contains(name);
                        (s.linkage != Linkage::Local && !shared).then(|| {
                            let mut n = name.to_vec();
                            n.extend_from_slice(format!("_r{k}").as_bytes());
                            n
                        })
                    })
                    .collect();
                write_renamed(m, f, &names, &path);
            }
            out.push(path);
        }
    }
    out
}

/// Removes a previous output and flushes dirty pages before a timed run, so neither
/// `cat` nor ptxld pays for replacing the last run's file or for its writeback.
fn fresh(out: &Path) {
    let _ = std::fs::remove_file(out);
    let _ = Command::new("sync").status();
}

/// One run of the shell command `cat_cmd` writing `out` afresh.
fn run_cat(cat_cmd: &str, out: &Path) -> Duration {
    fresh(out);
    let t = Instant::now();
    assert!(Command::new("sh")
        .args(["-c", cat_cmd])
        .status()
        .unwrap()
        .success());
    t.elapsed()
}

/// Min and median of `n` runs of the shell command `cat_cmd` writing `out` afresh.
fn time_cat(n: usize, cat_cmd: &str, out: &Path) -> (Duration, Duration) {
    min_median(n, &|| run_cat(cat_cmd, out))
}

/// Min and median of `n` runs (after a warm-up run).
fn min_median(n: usize, run: &dyn Fn() -> Duration) -> (Duration, Duration) {
    let times = &interleaved(n, &[run], &[]).sorted[0];
    (min(times), median_of(times))
}

/// The fastest of sorted times.
fn min(sorted: &[Duration]) -> Duration {
    sorted[0]
}

/// The median of sorted times (the upper one of an even count).
fn median_of(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() / 2]
}

/// Sorted times in whole milliseconds, for the results file: a median can hide
/// two clusters (a host that backs a run's new memory slowly, docs/performance.md).
fn ms_list(sorted: &[Duration]) -> String {
    let ms: Vec<String> = sorted
        .iter()
        .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
        .collect();
    ms.join(" ")
}

/// The times of `n` runs of each command, taken in rounds (one run of each per round,
/// after a warm-up round), so that a machine whose speed drifts over seconds (another
/// tenant of the host) slows every command of a comparison alike.
/// The commands of each range in `turns` take turns at its positions, one step per
/// round: a run depends on the one before it (at x4, the build that ran right after
/// this one was up to twice as slow as it, in two runs with a fixed order).
fn interleaved(
    n: usize,
    runs: &[&dyn Fn() -> Duration],
    turns: &[std::ops::Range<usize>],
) -> Timed {
    for run in runs {
        run();
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); runs.len()];
    for round in 0..n {
        let mut order: Vec<usize> = (0..runs.len()).collect();
        for range in turns {
            order[range.clone()].rotate_left(round % range.len());
        }
        for k in order {
            times[k].push(runs[k]());
        }
    }
    let rounds = times.clone();
    for v in &mut times {
        v.sort();
    }
    Timed {
        sorted: times,
        rounds,
    }
}

/// What [`interleaved`] measured: each command's times sorted, and in the order of
/// the rounds.
struct Timed {
    sorted: Vec<Vec<Duration>>,
    rounds: Vec<Vec<Duration>>,
}

/// The median over the rounds of `a`'s time over `b`'s in the same round: a ratio of
/// two runs a few hundred milliseconds apart, which a drift of the machine's speed
/// over the rounds moves less than it moves a ratio of medians.
fn paired_ratio(a: &[Duration], b: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

fn report_cross(log: &mut String) {
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let scales = [(1, 110), (2, 220), (4, 440)];
    // Each command and scale writes a file of its own, which its next run replaces,
    // as a rebuild replaces its output. With one output file for all scales, the x4
    // link replaced the 210 MB x2 output and needed 210 MB more new page cache than
    // that freed; on a VM whose host takes back free memory within seconds, page
    // cache from taken-back memory cost ten times as much (docs/performance.md), and
    // x4 links took 500 to 1,100 ms by chance.
    let out = |scale: usize, threads: Option<&str>| {
        let j = threads.map_or(String::new(), |j| format!("-j{j}"));
        root().join(format!("target/bench-cross-linked-x{scale}{j}.ptx"))
    };
    let cat_out = |scale: usize| root().join(format!("target/bench-cat-x{scale}.ptx"));
    let sets: Vec<Vec<PathBuf>> = scales.iter().map(|&(_, r)| cross_corpus(r)).collect();
    // A glob, not a list: one shell argument is limited to 128 KiB.
    let cat_cmds: Vec<String> = sets
        .iter()
        .zip(&scales)
        .map(|(files, &(scale, _))| {
            format!(
                "cat {}/*.ptx > {}",
                files[0].parent().unwrap().display(),
                cat_out(scale).display()
            )
        })
        .collect();
    // Other builds of ptxld timed in the same rounds, each over the same stretch of
    // time as this one: a baseline (`just bench-against REV` builds one), by whose
    // medians a change is judged, and this source built without its statement check
    // (`just bench` builds it), by whose medians the check's cost is read.
    let others: Vec<Other> = [
        ("PTXLD_BENCH_BASELINE", Other::BASELINE),
        ("PTXLD_BENCH_UNCHECKED", Other::UNCHECKED),
    ]
    .into_iter()
    .filter_map(|(var, kind)| {
        let program = PathBuf::from(std::env::var_os(var)?);
        Some(Other { kind, program })
    })
    .collect();
    let link_args =
        |program: &Path, out: PathBuf, files: &[PathBuf], threads: Option<&str>, extra: &[&str]| {
            let mut c = Command::new(program);
            if let Some(j) = threads {
                c.args(["-j", j]);
            }
            c.args(extra);
            c.arg("-o").arg(&out).args(files).stdout(Stdio::null());
            fresh(&out);
            let t = Instant::now();
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            t.elapsed()
        };
    let link_with = |program: &Path, out: PathBuf, files: &[PathBuf], threads: Option<&str>| {
        link_args(program, out, files, threads, &[])
    };
    let link = |scale: usize, files: &[PathBuf], threads: Option<&str>| {
        link_with(Path::new(ptxld), out(scale, threads), files, threads)
    };
    let other_out =
        |kind: &str, scale: usize| root().join(format!("target/bench-cross-{kind}-x{scale}.ptx"));
    // Every command of every scale in each round (`cat` and ptxld of each set, and
    // ptxld on one thread for x1): the scaling ratios compare medians taken over the
    // same stretch of time, so a machine whose speed drifts (another tenant of the
    // host; page reporting of a VM) slows x1 and x4 alike. Seven rounds: medians of
    // five still moved by 10-20% from run to run on a busy 2-core machine.
    let runs = 7;
    let cats: Vec<_> = (0..scales.len())
        .map(|i| {
            let (cmd, out) = (&cat_cmds[i], cat_out(scales[i].0));
            move || run_cat(cmd, &out)
        })
        .collect();
    let alls: Vec<_> = sets
        .iter()
        .zip(&scales)
        .map(|(f, &(scale, _))| move || link(scale, f, None))
        .collect();
    let one = || link(1, &sets[0], Some("1"));
    // The x1 link at the lowest version its code needs: what finding that costs (it
    // lexes every body again; docs/performance.md).
    let lowest_out = root().join("target/bench-cross-lowest-x1.ptx");
    let lowest = || {
        let out = lowest_out.clone();
        link_args(
            Path::new(ptxld),
            out,
            &sets[0],
            None,
            &["--ptx-version=min"],
        )
    };
    // Per scale, each other build's link.
    let other_links: Vec<Vec<_>> = sets
        .iter()
        .zip(&scales)
        .map(|(f, &(scale, _))| {
            others
                .iter()
                .map(|other| {
                    move || link_with(&other.program, other_out(other.kind.0, scale), f, None)
                })
                .collect()
        })
        .collect();
    // Per scale: `cat`, then this build and the others in turns. Each link then
    // comes after a command that wrote as much as it does, so no build runs in the
    // wake of a larger write-back than another (the baseline once came after a
    // smaller set's link, this build after `cat` of its own set).
    let per_scale = 2 + others.len();
    let mut commands: Vec<&dyn Fn() -> Duration> = Vec::new();
    for i in 0..scales.len() {
        commands.push(&cats[i]);
        commands.push(&alls[i]);
        for other in &other_links[i] {
            commands.push(other);
        }
    }
    commands.push(&one);
    commands.push(&lowest);
    // This build and the others take turns after each scale's `cat`.
    let turns: Vec<_> = (0..scales.len())
        .map(|i| per_scale * i + 1..per_scale * (i + 1))
        .collect();
    let Timed {
        sorted: timed,
        rounds,
    } = interleaved(runs, &commands, &turns);
    let (ones_at, lows_at) = (per_scale * scales.len(), per_scale * scales.len() + 1);
    let mut out_log = |line: String| {
        println!("{line}");
        log.push_str(&line);
        log.push('\n');
    };
    let mut targets = Targets::default();
    let mut base = None;
    for (i, (&(scale, _), files)) in scales.iter().zip(&sets).enumerate() {
        let bytes = total_size(files);
        let (cats, links) = (&timed[per_scale * i], &timed[per_scale * i + 1]);
        let (cat_med, med) = (median_of(cats), median_of(links));
        let all_out = out(scale, None);
        fresh(&all_out);
        let stats = Command::new(ptxld)
            .arg("--stats")
            .arg("-o")
            .arg(&all_out)
            .args(files)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .unwrap_or_default();
        let rss = stats
            .lines()
            .find_map(|l| l.strip_prefix("ptxld: stats: peak resident memory "))
            .unwrap_or_default()
            .to_string();
        let rss_ratio = rss
            .trim_end_matches(" MB")
            .parse::<f64>()
            .unwrap_or(f64::INFINITY)
            * 1e6
            / bytes as f64;
        targets.rss = targets.rss.max(rss_ratio);
        out_log(format!(
            "cross-referencing set x{scale}: {} modules, {:.1} MB; cat > new file min {:.0} / median {:.0} ms; \
             ptxld -o min {:.0} / median {:.0} ms = {:.2}x cat (median); peak RSS {rss} = {:.2}x input",
            files.len(),
            bytes as f64 / 1e6,
            min(cats).as_secs_f64() * 1e3,
            cat_med.as_secs_f64() * 1e3,
            min(links).as_secs_f64() * 1e3,
            med.as_secs_f64() * 1e3,
            med.as_secs_f64() / cat_med.as_secs_f64(),
            rss_ratio,
        ));
        out_log(format!(
            "  every run (ms): cat {} | ptxld {}",
            ms_list(cats),
            ms_list(links)
        ));
        for (k, other) in others.iter().enumerate() {
            let times = &timed[per_scale * i + 2 + k];
            let medians = med.as_secs_f64() / median_of(times).as_secs_f64();
            let ratio = paired_ratio(&rounds[per_scale * i + 1], &rounds[per_scale * i + 2 + k]);
            out_log(format!(
                "  {} {}: median {:.0} ms; this build {ratio:.3}x {} (median of the rounds' \
                 ratios; of the medians {medians:.3}x; every run: {})",
                other.kind.1,
                other.program.display(),
                median_of(times).as_secs_f64() * 1e3,
                other.kind.2,
                ms_list(times)
            ));
            if other.kind == Other::UNCHECKED {
                // What the check costs, as a share of this build's link; both builds
                // did the same work only if they wrote the same bytes.
                let share = 1.0 - 1.0 / ratio;
                let same = std::fs::read(other_out(other.kind.0, scale)).unwrap()
                    == std::fs::read(out(scale, None)).unwrap();
                assert!(
                    same,
                    "the build without the statement check wrote another output"
                );
                out_log(format!(
                    "  the statement check costs {:.1}% of the link (outputs byte-identical)",
                    share * 1e2
                ));
                targets.check = Some(targets.check.map_or(share, |c: f64| c.max(share)));
            }
        }
        match base {
            None => {
                base = Some(med);
                targets.to_cat = med.as_secs_f64() / cat_med.as_secs_f64();
                // Where the time goes (one --stats run), and the same bytes whatever
                // the thread count.
                for l in stats.lines().filter(|l| l.ends_with(" ms")) {
                    out_log(format!(
                        "  phase: {}",
                        l.trim_start_matches("ptxld: stats: ")
                    ));
                }
                let all = std::fs::read(&all_out).unwrap();
                link(scale, files, Some("1"));
                targets.identical = std::fs::read(out(scale, Some("1"))).unwrap() == all;
                out_log(format!(
                    "  output with 1 thread and with all threads: {}",
                    if targets.identical {
                        "byte-identical"
                    } else {
                        "DIFFERENT"
                    }
                ));
                let ones = &timed[ones_at];
                let one = median_of(ones);
                targets.threads = one.as_secs_f64() / med.as_secs_f64();
                out_log(format!(
                    "  threads: 1 thread median {:.0} ms, all threads {:.0} ms = {:.2}x faster",
                    one.as_secs_f64() * 1e3,
                    med.as_secs_f64() * 1e3,
                    targets.threads
                ));
                out_log(format!("  every run on 1 thread (ms): {}", ms_list(ones)));
                let (lines, serial) =
                    report_scaling(Path::new(ptxld), files, &out(scale, Some("stats")), cat_med);
                lines.into_iter().for_each(&mut out_log);
                targets.serial = serial;
                let lows = &timed[lows_at];
                out_log(format!(
                    "  --ptx-version=min (finds what the modules use): median {:.0} ms = {:.2}x the \
                     plain link (every run: {})",
                    median_of(lows).as_secs_f64() * 1e3,
                    median_of(lows).as_secs_f64() / med.as_secs_f64(),
                    ms_list(lows)
                ));
            }
            Some(b) => {
                let ratio = med.as_secs_f64() / b.as_secs_f64();
                if scale == 4 {
                    targets.x4 = ratio;
                }
                out_log(format!(
                    "  scaling: x{scale} input costs {ratio:.2}x the time of x1"
                ));
            }
        }
    }
    for line in targets.lines() {
        out_log(line);
    }
}

/// A `--stats` link: the process's wall time and each phase's (name, wall ms, CPU
/// ms), in order.
type StatsRun = (f64, Vec<(String, f64, f64)>);

/// One `--stats` link of `files` on `threads` threads.
fn stats_run(ptxld: &Path, files: &[PathBuf], out: &Path, threads: usize) -> StatsRun {
    fresh(out);
    let t = Instant::now();
    let o = Command::new(ptxld)
        .args(["--stats", "-j", &threads.to_string(), "-o"])
        .arg(out)
        .args(files)
        .output()
        .unwrap();
    let wall = t.elapsed().as_secs_f64() * 1e3;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ms = |s: &str| {
        s.trim()
            .trim_end_matches(" ms")
            .trim()
            .parse::<f64>()
            .unwrap()
    };
    let phases = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| {
            // "ptxld: stats: NAME   cpu  X ms, wall  Y ms"
            let rest = l.strip_prefix("ptxld: stats: ")?;
            let (name, times) = rest.split_once(" cpu ")?;
            let (cpu, wall) = times.split_once(", wall ")?;
            Some((name.trim().to_string(), ms(wall), ms(cpu)))
        })
        .collect();
    (wall, phases)
}

/// Where the x1 link's time goes at 1, 2 and all threads (medians of nine
/// `--stats` runs at each count, taken in rounds), with each phase's speedup and
/// its serial time at two threads: a phase of wall time W and CPU time C on n
/// threads kept one thread busy for (nW - C) / (n - 1) and all n for the rest (time
/// outside the phases, the process's start and end, counts as serial; both are
/// medians of the runs' own figures). From the
/// serial time S and the parallel work P (CPU time outside S) at two threads,
/// Amdahl's law projects the link on 16 threads: S + P / 16. Each round also runs
/// `true` with the same arguments: what starting and ending any process given
/// these thousands of arguments costs, which S includes and the link cannot
/// shorten. Returns the lines and the link's own serial time (S less that).
fn report_scaling(
    ptxld: &Path,
    files: &[PathBuf],
    out: &Path,
    cat: Duration,
) -> (Vec<String>, f64) {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts = vec![1, 2];
    if all > 2 {
        counts.push(all);
    }
    let rounds = 9;
    let mut runs: Vec<Vec<StatsRun>> = vec![Vec::new(); counts.len()];
    let mut starts = Vec::new();
    stats_run(ptxld, files, out, 2);
    for _ in 0..rounds {
        for (k, &n) in counts.iter().enumerate() {
            runs[k].push(stats_run(ptxld, files, out, n));
        }
        let t = Instant::now();
        assert!(Command::new("true")
            .args(files)
            .output()
            .unwrap()
            .status
            .success());
        starts.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let names: Vec<String> = runs[0][0].1.iter().map(|p| p.0.clone()).collect();
    // Per thread count: each phase's median wall and CPU, then the process's wall.
    let medians: Vec<(Vec<(f64, f64)>, f64)> = runs
        .iter()
        .map(|rs| {
            let phases = (0..names.len())
                .map(|i| {
                    (
                        median(rs.iter().map(|r| r.1[i].1).collect()),
                        median(rs.iter().map(|r| r.1[i].2).collect()),
                    )
                })
                .collect();
            (phases, median(rs.iter().map(|r| r.0).collect()))
        })
        .collect();
    // The serial time of phase `i` at two threads: the median over the runs of
    // each run's 2W - C (not clamped run by run, which would count every run's
    // noise above zero and none below), kept between 0 and the median wall time.
    let two_runs = &runs[1];
    let serial_of = |i: usize, wall: f64| {
        median(two_runs.iter().map(|r| 2.0 * r.1[i].1 - r.1[i].2).collect()).clamp(0.0, wall)
    };
    let header: Vec<String> = counts.iter().map(|n| format!("{n:>9} thr")).collect();
    let mut lines = vec![
        format!(
            "  thread scaling, x1 (medians of {rounds} --stats runs at each count, wall ms; speedup, serial ms and parallel work in CPU ms at 2 threads):"
        ),
        format!(
            "    {:<28}{} {:>9} {:>9} {:>9}",
            "phase",
            header.join(""),
            "speedup",
            "serial",
            "parallel"
        ),
    ];
    let (two, two_wall) = &medians[1];
    let (mut serial_ms, mut parallel_work) = (0.0, 0.0);
    for (i, name) in names.iter().enumerate() {
        let cols: Vec<String> = medians
            .iter()
            .map(|m| format!("{:>13.1}", m.0[i].0))
            .collect();
        let (w, _) = two[i];
        let s = serial_of(i, w);
        let parallel = 2.0 * (w - s);
        serial_ms += s;
        parallel_work += parallel;
        lines.push(format!(
            "    {name:<28}{} {:>8.2}x {s:>9.1} {parallel:>9.1}",
            cols.join(""),
            medians[0].0[i].0 / w
        ));
    }
    // Outside the phases, run by run (a median of the process's wall times less
    // the sum of the phases' medians would take its noise from different runs).
    let outside = median(
        two_runs
            .iter()
            .map(|r| r.0 - r.1.iter().map(|p| p.1).sum::<f64>())
            .collect(),
    )
    .max(0.0);
    serial_ms += outside;
    let cols: Vec<String> = medians.iter().map(|m| format!("{:>13.1}", m.1)).collect();
    lines.push(format!(
        "    {:<28}{} {:>8.2}x {outside:>9.1} (outside the phases)",
        "whole link (process)",
        cols.join(""),
        medians[0].1 / two_wall
    ));
    let cat_ms = cat.as_secs_f64() * 1e3;
    let projected = serial_ms + parallel_work / 16.0;
    let start = median(starts);
    let own = serial_ms - start;
    lines.push(format!(
        "  serial remainder at 2 threads: {serial_ms:.1} ms, of which {start:.1} ms starting and \
         ending a process with these {} arguments (`true`, same rounds): the link's own {own:.1} ms; \
         parallel work {parallel_work:.0} ms",
        files.len()
    ));
    lines.push(format!(
        "  Amdahl projection for 16 threads: {serial_ms:.1} + {parallel_work:.0} / 16 = {projected:.0} ms = \
         {:.1}x faster than 1 thread, {:.2}x cat (median {cat_ms:.0} ms)",
        medians[0].1 / projected,
        projected / cat_ms
    ));
    if all > 2 {
        let (_, all_wall) = medians[counts.len() - 1];
        lines.push(format!(
            "  measured on {all} threads: {all_wall:.0} ms = {:.1}x faster than 1 thread, {:.2}x cat",
            medians[0].1 / all_wall,
            all_wall / cat_ms
        ));
    }
    (lines, own)
}

/// Another build of ptxld timed in the cross sets' rounds.
struct Other {
    kind: (&'static str, &'static str, &'static str),
    program: PathBuf,
}

impl Other {
    /// (output file's name, label, what a ratio is against)
    const BASELINE: (&'static str, &'static str, &'static str) =
        ("baseline", "baseline", "the baseline");
    const UNCHECKED: (&'static str, &'static str, &'static str) = (
        "unchecked",
        "without the statement check",
        "the build without it",
    );
}

/// Issue 7's targets, issue 34's for the statement check and issue 38's for the
/// serial remainder, as measured by one run of [`report_cross`].
#[derive(Default)]
struct Targets {
    /// x1 link over `cat` of the same files (medians).
    to_cat: f64,
    /// The largest share of a link (x1, x2, x4) that the statement check costs, where
    /// a build without it was timed (medians).
    check: Option<f64>,
    /// Largest peak RSS over input size, of all scales.
    rss: f64,
    /// x4 over x1 (medians).
    x4: f64,
    /// One thread over all threads, x1 (medians).
    threads: f64,
    /// The output at one thread and at all threads.
    identical: bool,
    /// The link's own serial time at two threads, x1, in milliseconds.
    serial: f64,
}

impl Targets {
    /// One line per target: the figure, the limit, and whether it was met.
    fn lines(&self) -> Vec<String> {
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        vec![
            "targets:".to_string(),
            format!(
                "  x1 link {:.2}x cat (at most 2.5x): {}",
                self.to_cat,
                verdict(self.to_cat <= 2.5)
            ),
            format!(
                "  peak RSS at most {:.2}x the input (at most 1.5x): {}",
                self.rss,
                verdict(self.rss <= 1.5)
            ),
            format!(
                "  x4 input {:.2}x the time of x1 (at most 4.2x): {}",
                self.x4,
                verdict(self.x4 <= 4.2)
            ),
            format!(
                "  all threads ({}) {:.2}x faster than 1 (at least 1.6x on 2 cores): {}",
                std::thread::available_parallelism().map_or(0, |n| n.get()),
                self.threads,
                verdict(self.threads >= 1.6)
            ),
            format!(
                "  output byte-identical at 1 and all threads: {}",
                verdict(self.identical)
            ),
            format!(
                "  the link's own serial remainder at 2 threads, x1: {:.1} ms (at most 10 ms): {}",
                self.serial,
                verdict(self.serial <= 10.0)
            ),
            match self.check {
                Some(share) => format!(
                    "  the statement check at most {:.1}% of a link, largest of x1, x2, x4 (at most 10%): {}",
                    share * 1e2,
                    verdict(share <= 0.10)
                ),
                None => "  the statement check's cost: not measured (no build without it: \
                         PTXLD_BENCH_UNCHECKED; `just bench` builds one)"
                    .to_string(),
            },
        ]
    }
}

/// One huge generated module (tests/it/support/huge_module.rs) at 0.5 and 2 GB: time
/// against `cat` and the time ratio of the two sizes (4.0 is linear), peak RSS.
/// The files are removed afterwards (2.5 GB of disk).
fn report_huge(log: &mut String) {
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let dir = root().join("target/bench-huge");
    std::fs::create_dir_all(&dir).unwrap();
    let ext = dir.join("ext.ptx");
    huge_module::write_ext(&ext);
    let out = dir.join("out.ptx");
    let mut base: Option<(u64, Duration)> = None;
    for gb in [0.5, 2.0] {
        let input = dir.join(format!("huge-{gb}.ptx"));
        let bytes = huge_module::generate(&input, (gb * 1e9) as u64);
        let cat_cmd = format!(
            "cat {} {} > {}",
            ext.display(),
            input.display(),
            out.display()
        );
        let (_, cat) = time_cat(3, &cat_cmd, &out);
        let link = || {
            fresh(&out);
            let t = Instant::now();
            let o = Command::new(ptxld)
                .args(["--stats", "-o"])
                .args([&out, &ext, &input])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            (t.elapsed(), String::from_utf8_lossy(&o.stderr).into_owned())
        };
        let (_, med) = min_median(3, &|| link().0);
        let stats = link().1;
        let rss = stats
            .lines()
            .find_map(|l| l.strip_prefix("ptxld: stats: peak resident memory "))
            .unwrap_or_default()
            .to_string();
        let mut line = format!(
            "one huge module, {:.2} GB: cat median {:.0} ms; ptxld median {:.0} ms = {:.2}x cat; peak RSS {rss}",
            bytes as f64 / 1e9,
            cat.as_secs_f64() * 1e3,
            med.as_secs_f64() * 1e3,
            med.as_secs_f64() / cat.as_secs_f64(),
        );
        if let Some((b_bytes, b_time)) = base {
            line.push_str(&format!(
                "; {:.2}x the input of the {:.1} GB module costs {:.2}x its time",
                bytes as f64 / b_bytes as f64,
                b_bytes as f64 / 1e9,
                med.as_secs_f64() / b_time.as_secs_f64()
            ));
        }
        println!("{line}");
        log.push_str(&line);
        log.push('\n');
        for l in stats.lines().filter(|l| l.ends_with(" ms")) {
            let l = format!("  phase: {}", l.trim_start_matches("ptxld: stats: "));
            println!("{l}");
            log.push_str(&l);
            log.push('\n');
        }
        base.get_or_insert((bytes, med));
        let _ = std::fs::remove_file(&input);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `m` with symbol `i` renamed to `names[i]` (where given) to `path`, through a
/// temporary file so an interrupted generation never leaves a partial corpus file.
fn write_renamed(m: &Module, f: &SourceFile, names: &[Option<Vec<u8>>], path: &Path) {
    let mut text = Vec::new();
    write_module(
        m,
        f.bytes(),
        |id| names[id.0 as usize].as_deref(),
        &mut text,
    );
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    median_of(&v)
}

fn time_cmd(program: &str, args: &[&str], files: &[PathBuf]) -> Duration {
    let run = || {
        let t = Instant::now();
        let status = Command::new(program)
            .args(args)
            .args(files)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{program} failed");
        t.elapsed()
    };
    run(); // warm the page cache
    median((0..RUNS).map(|_| run()).collect())
}

fn total_size(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn mb(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn report_link(name: &str, files: &[PathBuf]) {
    let bytes = total_size(files);
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let out = root().join("target/bench-linked.ptx");
    let out = out.to_str().unwrap();
    // The floor of a link is reading the inputs and writing the output once: `cat`
    // of the inputs into a file in the same directory.
    let cat_out = root().join("target/bench-cat.ptx");
    let cat = time_shell(&format!(
        "cat {} > {}",
        files
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
            .join(" "),
        cat_out.display()
    ));
    let ours = time_cmd(ptxld, &["-o", out], files);
    let ours1 = time_cmd(ptxld, &["-j", "1", "-o", out], files);
    let out_len = std::fs::metadata(out).unwrap().len();
    println!(
        "{name}: link {} files, {:.1} MB in, {:.1} MB out\n  cat > file             {:>8.2} ms\n  \
         ptxld -o               {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time\n  \
         ptxld -j 1 -o          {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time",
        files.len(),
        bytes as f64 / 1e6,
        out_len as f64 / 1e6,
        cat.as_secs_f64() * 1e3,
        ours.as_secs_f64() * 1e3,
        mb(bytes, ours),
        ours.as_secs_f64() / cat.as_secs_f64(),
        ours1.as_secs_f64() * 1e3,
        mb(bytes, ours1),
        ours1.as_secs_f64() / cat.as_secs_f64(),
    );
}

/// A few kernels calling libdevice, linked with all of libdevice, with and without
/// `--gc-sections`: output size and ptxas time on each output.
fn report_gc() {
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let r = root();
    let inputs: Vec<PathBuf> = [
        "fixtures/ptx/llvm/cu_lib.ptx",
        "fixtures/ptx/nvvm/nv_common.ptx",
        "fixtures/link/real-libdevice-three-producers/g_nvlib.ptx",
        "fixtures/ptx/libdevice/libdevice.sm70.ptx",
    ]
    .iter()
    .map(|p| r.join(p))
    .collect();
    let full = r.join("target/bench-full.ptx");
    let gc = r.join("target/bench-gc.ptx");
    let t_full = time_cmd(ptxld, &["-o", full.to_str().unwrap()], &inputs);
    let t_gc = time_cmd(
        ptxld,
        &["--gc-sections", "-o", gc.to_str().unwrap()],
        &inputs,
    );
    let (sf, sg) = (
        std::fs::metadata(&full).unwrap().len(),
        std::fs::metadata(&gc).unwrap().len(),
    );
    println!(
        "kernels + libdevice: link {:.2} ms, {} bytes; with --gc-sections {:.2} ms, {} bytes \
         ({:.0}x smaller)",
        t_full.as_secs_f64() * 1e3,
        sf,
        t_gc.as_secs_f64() * 1e3,
        sg,
        sf as f64 / sg as f64
    );
    let ptxas = std::env::var_os("PTXAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| r.join(".tools/nv/nvidia/cuda_nvcc/bin/ptxas"));
    if !ptxas.exists() {
        println!("  ptxas not found ({}): no assembly times", ptxas.display());
        return;
    }
    let pt = ptxas.to_str().unwrap();
    let a_full = time_cmd(
        pt,
        &["-arch=sm_80", "-o", "/dev/null"],
        std::slice::from_ref(&full),
    );
    let a_gc = time_cmd(
        pt,
        &["-arch=sm_80", "-o", "/dev/null"],
        std::slice::from_ref(&gc),
    );
    println!(
        "  ptxas -arch=sm_80 (whole program): {:.1} ms without, {:.1} ms with --gc-sections \
         ({:.1}x faster)",
        a_full.as_secs_f64() * 1e3,
        a_gc.as_secs_f64() * 1e3,
        a_full.as_secs_f64() / a_gc.as_secs_f64()
    );
}

fn report(name: &str, files: &[PathBuf]) {
    let bytes = total_size(files);
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let cat = time_cmd("cat", &[], files);
    let ours = time_cmd(ptxld, &["--syntax-only"], files);
    let ours1 = time_cmd(ptxld, &["--syntax-only", "-j", "1"], files);
    println!(
        "{name}: {} files, {:.1} MB\n  cat                    {:>8.2} ms {:>8.0} MB/s\n  \
         ptxld --syntax-only    {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time\n  \
         ptxld --syntax-only -j1{:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time",
        files.len(),
        bytes as f64 / 1e6,
        cat.as_secs_f64() * 1e3,
        mb(bytes, cat),
        ours.as_secs_f64() * 1e3,
        mb(bytes, ours),
        ours.as_secs_f64() / cat.as_secs_f64(),
        ours1.as_secs_f64() * 1e3,
        mb(bytes, ours1),
        ours1.as_secs_f64() / cat.as_secs_f64(),
    );
}

/// In-process parse of libdevice, without process start-up: the parser's own speed.
fn in_process(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let parse = || {
        let t = Instant::now();
        let p = parse_module(FileId(0), &bytes);
        assert!(p.diagnostics.is_empty());
        std::hint::black_box(p);
        t.elapsed()
    };
    parse();
    let d = median((0..21).map(|_| parse()).collect());
    let copy = || {
        let t = Instant::now();
        std::hint::black_box(bytes.clone());
        t.elapsed()
    };
    let c = median((0..21).map(|_| copy()).collect());
    println!(
        "libdevice in-process: parse {:.2} ms = {:.0} MB/s (memcpy of the same bytes: {:.3} ms)",
        d.as_secs_f64() * 1e3,
        mb(bytes.len() as u64, d),
        c.as_secs_f64() * 1e3
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary
    // without it, and a benchmark is not a test: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark skipped: run it with `just bench` (cargo bench)");
        return;
    }
    // `cargo bench --bench parse -- cross`: only the cross-referencing sets (issue
    // 7's targets), for a quicker look than the whole benchmark.
    if std::env::args().any(|a| a == "cross") {
        let mut log = String::new();
        report_cross(&mut log);
        let results = root().join("target/bench-results-cross.txt");
        std::fs::write(&results, log).unwrap();
        println!("(results also in {})", results.display());
        return;
    }
    let ld = libdevice();
    in_process(&ld);
    report("libdevice", std::slice::from_ref(&ld));
    let corpus = generated_corpus(&ld);
    report("generated (200 renamed libdevice copies)", &corpus);
    report_link("generated (200 renamed libdevice copies)", &corpus);
    report_gc();
    let mut log = String::new();
    report_cross(&mut log);
    report_huge(&mut log);
    let results = root().join("target/bench-results.txt");
    std::fs::write(&results, log).unwrap();
    println!("(cross-referencing results also in {})", results.display());
}
