//! From the command line to what to do: response files expanded, GNU ld spellings
//! normalized, the options table's parser run ([`super::table`]), options that do not
//! apply to the mode refused by name, and a [`Job`] built with the order-sensitive
//! items (inputs, `-l`, `--whole-archive`, groups) in command-line order.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::internal::driver::{InputSpec, Job};
use crate::OutputKind;

use super::rsp;
use super::runs::{self, Runs};
use super::table::{self as cli, spelling, Modes, ALONE, CHECK, INPUTS, LINK, OPTIONS, PARSE};

/// What the command does.
#[derive(Debug)]
pub enum Mode {
    /// Link into `job.output`.
    Link(Box<Job>),
    /// `ptxld check`: report, as JSON if `json`.
    Check {
        /// The link to check.
        job: Box<Job>,
        /// `--json`: the report as JSON.
        json: bool,
    },
    /// `--syntax-only`.
    SyntaxOnly(Vec<PathBuf>),
    /// `--print-symbols`.
    PrintSymbols(Vec<PathBuf>),
}

/// A command line understood.
#[derive(Debug)]
pub struct Options {
    /// What to do.
    pub mode: Mode,
    /// `-j`, bounded by the work there is ([`thread_count`]).
    pub threads: Option<usize>,
    /// `--error-limit`.
    pub error_limit: usize,
    /// Link in a child and exit when its result is known (`--no-fork` turns it off).
    pub fork: bool,
    /// Warnings about the command line itself (`-z` keywords).
    pub warnings: Vec<String>,
    /// How many inputs and libraries the command line names.
    pub inputs: usize,
}

/// What the command line asks for.
pub enum Parsed {
    /// Run.
    Run(Box<Options>),
    /// Print this on standard output and exit 0 (`--help`, `--version`, `--generate`).
    Print(Vec<u8>),
}

/// A usage error: its message, without the `ptxld: error: ` the command prints first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// A usage [`Error`] from `format!` arguments.
macro_rules! usage {
    ($($arg:tt)*) => {
        Error(format!($($arg)*))
    };
}

/// Understands `args` (without the program name).
pub fn parse(args: Vec<OsString>) -> Result<Parsed, Error> {
    let (args, rsp_files) = rsp::expand(args).map_err(Error)?;
    let (matches, runs) = match clap_matches(args)? {
        Ok(m) => m,
        Err(print) => return Ok(Parsed::Print(print)),
    };
    let (m, mode, mode_name) = mode_of(&matches);
    refuse_foreign_options(m, mode, mode_name)?;
    if mode == ALONE {
        if given(m, INPUTS) {
            return Err(usage!("--generate takes no inputs"));
        }
        let what: &String = m.get_one("generate").expect("given");
        return Ok(Parsed::Print(super::generate::generate(what)));
    }
    if given(m, "syntax-only") && given(m, "print-symbols") {
        return Err(usage!(
            "--syntax-only and --print-symbols are two modes; give one"
        ));
    }
    let mut job = Job::new("");
    job.extra_deps = rsp_files;
    job.inputs = ordered_inputs(m, runs);
    let last_number = |id| m.get_many::<usize>(id).and_then(|mut v| v.next_back());
    if let Some(n) = last_number("error-limit") {
        job.error_limit = *n;
    }
    let inputs = job
        .inputs
        .iter()
        .filter(|i| matches!(i, InputSpec::File(_) | InputSpec::Lib(_)))
        .count();
    if inputs == 0 {
        return Err(usage!("no input files (see ptxld --help)"));
    }
    let threads = last_number("threads").map(|&n| thread_count(n, inputs));
    let error_limit = job.error_limit;
    let mode = run_mode(m, mode, mode_name, job)?;
    let warnings = m
        .get_many::<String>("z")
        .into_iter()
        .flatten()
        .map(|k| format!("unknown -z value: {k}"))
        .collect();
    Ok(Parsed::Run(Box::new(Options {
        fork: matches!(mode, Mode::Link(_)) && !given(m, "no-fork"),
        mode,
        threads,
        error_limit,
        warnings,
        inputs,
    })))
}

/// The link `options` describe, for an embedder that adds the inputs itself (the C
/// API, the Python package): the command line's link options, spelled as on the
/// command line (`--arch=sm_80`, `-O3`, `--gc-sections`), without inputs, `-o` or a
/// mode. The output kind is `--emit`'s (default PTX).
pub fn link_job(options: &[String]) -> Result<Job, Error> {
    let args: Vec<OsString> = options.iter().map(OsString::from).collect();
    // clap's tips and usage line are about a command line (`use '-- --x'`, `try
    // '--help'`), which an embedder does not have.
    let without_tips = |e: Error| {
        let lines: Vec<&str> =
            e.0.lines()
                .take_while(|l| !l.starts_with("Usage:"))
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("tip:"))
                .collect();
        usage!("{}", lines.join("\n"))
    };
    let (matches, _) = match clap_matches(args).map_err(without_tips)? {
        Ok(m) => m,
        Err(_) => return Err(usage!("--help and --version are for the command line")),
    };
    let (m, mode, mode_name) = mode_of(&matches);
    if mode != LINK {
        return Err(usage!(
            "{mode_name} is for the command line: give link options"
        ));
    }
    refuse_foreign_options(m, LINK, mode_name)?;
    let inputs = [
        INPUTS,
        "library",
        "whole-archive",
        "no-whole-archive",
        "start-group",
        "end-group",
    ];
    if inputs.iter().any(|id| given(m, id)) || given(m, "output") {
        return Err(usage!(
            "inputs, -l, archive options (--whole-archive, groups) and -o are not options \
             here: add the inputs, and take the output, through the API"
        ));
    }
    let mut job = Job::new("");
    link_options(m, &mut job);
    if job.emit.is_none() {
        job.emit = Some(OutputKind::Ptx);
    }
    Ok(job)
}

/// Runs the options table's parser over the normalized arguments: the matches and
/// the runs of inputs folded out of them ([`runs`]), or what to print instead
/// (`--help`, `--version`).
fn clap_matches(args: Vec<OsString>) -> Result<Result<(ArgMatches, Runs), Vec<u8>>, Error> {
    let (args, runs) = runs::fold(cli::normalize(args));
    let parse = |args: &[OsString]| {
        let program = OsString::from("ptxld");
        cli::command().try_get_matches_from(std::iter::once(&program).chain(args))
    };
    let e = match parse(&args) {
        Ok(m) => return Ok(Ok((m, runs))),
        // Parsed again as given: a message never shows a marker (and should
        // folding ever change a line's meaning, the line as given decides).
        Err(_) => match parse(&runs.unfold(args)) {
            Ok(m) => return Ok(Ok((m, Runs::default()))),
            Err(e) => e,
        },
    };
    use clap::error::ErrorKind::*;
    match e.kind() {
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand => {
            Ok(Err(e.render().to_string().into_bytes()))
        }
        _ => {
            let text = e.render().to_string();
            let text = text.trim_end();
            Err(usage!("{}", text.strip_prefix("error: ").unwrap_or(text)))
        }
    }
}

/// The matches of the mode the command line chose, the mode, and its name in
/// messages.
fn mode_of(matches: &ArgMatches) -> (&ArgMatches, Modes, &'static str) {
    match matches.subcommand() {
        Some(("check", sub)) => (sub, CHECK, "ptxld check"),
        _ => {
            let m = matches;
            if given(m, "generate") {
                (m, ALONE, "--generate")
            } else if given(m, "print-symbols") {
                (m, PARSE, "--print-symbols")
            } else if given(m, "syntax-only") {
                (m, PARSE, "--syntax-only")
            } else {
                (m, LINK, "a link")
            }
        }
    }
}

/// Refuses, by name, an option given to a mode it does not apply to.
fn refuse_foreign_options(m: &ArgMatches, mode: Modes, mode_name: &str) -> Result<(), Error> {
    for o in OPTIONS {
        if given(m, o.id) && o.modes & mode == 0 {
            let only = match o.modes {
                CHECK => " (it applies only to ptxld check)",
                PARSE => " (it is a mode of its own)",
                _ => "",
            };
            return Err(usage!(
                "{} does not apply to {mode_name}{only}; see ptxld --help",
                spelling(o)
            ));
        }
    }
    Ok(())
}

/// What to run in `mode`, with the job the command line describes.
fn run_mode(m: &ArgMatches, mode: Modes, mode_name: &str, mut job: Job) -> Result<Mode, Error> {
    Ok(match mode {
        PARSE => {
            if job.inputs.iter().any(|i| !matches!(i, InputSpec::File(_))) {
                return Err(usage!(
                    "{mode_name} takes files, not library options (-l, groups, \
                     --whole-archive)"
                ));
            }
            if given(m, "print-symbols") {
                Mode::PrintSymbols(job.input_files())
            } else {
                Mode::SyntaxOnly(job.input_files())
            }
        }
        CHECK => {
            link_options(m, &mut job);
            if job.archs.len() > 1 {
                return Err(usage!("ptxld check takes one --arch"));
            }
            let json = m.get_one::<String>("format").is_some_and(|f| f == "json");
            Mode::Check {
                job: Box::new(job),
                json,
            }
        }
        _ => {
            link_options(m, &mut job);
            match m.get_one::<PathBuf>("output") {
                Some(o) => job.output = o.clone(),
                None => {
                    return Err(usage!(
                        "no output file: use -o FILE (or -o - for standard output); see \
                         ptxld --help"
                    ))
                }
            }
            Mode::Link(Box::new(job))
        }
    })
}

/// True if option `id` was given on the command line (not a default).
fn given(m: &ArgMatches, id: &str) -> bool {
    m.value_source(id) == Some(ValueSource::CommandLine)
}

/// The inputs, `-l` libraries, `--[no-]whole-archive` and group brackets, in
/// command-line order; an input that marks a run of `runs` is the run's inputs.
fn ordered_inputs(m: &ArgMatches, mut runs: Runs) -> Vec<InputSpec> {
    let mut items: Vec<(usize, InputSpec)> =
        Vec::with_capacity(m.get_raw(INPUTS).map_or(0, |v| v.len()) + runs.len());
    let positions = |id: &str| -> Vec<usize> {
        if given(m, id) {
            m.indices_of(id).map(|i| i.collect()).unwrap_or_default()
        } else {
            Vec::new()
        }
    };
    let values = |id: &str| -> Vec<PathBuf> {
        m.get_many::<PathBuf>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    for (i, p) in positions(INPUTS).into_iter().zip(values(INPUTS)) {
        match runs.take(p.as_os_str()) {
            // The sort below is stable: a run's inputs stay in order at its place.
            Some(run) => items.extend(run.into_iter().map(|f| (i, InputSpec::File(f.into())))),
            None => items.push((i, InputSpec::File(p))),
        }
    }
    for (i, p) in positions("library").into_iter().zip(values("library")) {
        items.push((i, InputSpec::Lib(p.into_os_string())));
    }
    for (id, spec) in [
        ("whole-archive", InputSpec::WholeArchive(true)),
        ("no-whole-archive", InputSpec::WholeArchive(false)),
        ("start-group", InputSpec::Group(true)),
        ("end-group", InputSpec::Group(false)),
    ] {
        for i in positions(id) {
            items.push((i, spec.clone()));
        }
    }
    items.sort_by_key(|(i, _)| *i);
    items.into_iter().map(|(_, s)| s).collect()
}

/// The options of a link or check, from the table's matches.
fn link_options(m: &ArgMatches, job: &mut Job) {
    let strings = |id: &str| -> Vec<String> {
        m.get_many::<String>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let last = |id: &str| {
        m.get_many::<String>(id)
            .and_then(|mut v| v.next_back().cloned())
    };
    let flag = |id: &str| given(m, id);
    job.lib_dirs = m
        .get_many::<PathBuf>("library-path")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    job.undefined = strings("undefined");
    // The options table's value parsers accept only what these parse.
    job.archs = strings("arch")
        .iter()
        .filter_map(|a| a.parse().ok())
        .collect();
    let ptx_version = last("ptx-version");
    job.ptx_version_min = ptx_version.as_deref() == Some("min");
    job.ptx_version = ptx_version.and_then(|v| v.parse().ok());
    job.emit = last("emit").and_then(|e| e.parse().ok());
    if let Some(s) = last("symbol") {
        job.symbol = s;
    }
    job.depfile = m.get_one::<PathBuf>("dependency-file").cloned();
    job.map_file = m.get_one::<PathBuf>("Map").cloned();
    job.verbose = flag("verbose");
    // The later of --gc-sections and --no-gc-sections wins, as in GNU ld.
    let place = |id: &str| {
        if given(m, id) {
            m.indices_of(id).and_then(|i| i.max())
        } else {
            None
        }
    };
    job.gc_sections = place("gc-sections") > place("no-gc-sections");
    job.exports = strings("export");
    job.export_all = flag("export-all");
    job.print_gc_sections = flag("print-gc-sections");
    job.kernels_used = strings("kernels-used");
    job.variables_used = strings("variables-used");
    job.optimize_unused_variables = flag("optimize-unused-variables");
    job.fold_identical = flag("fold-identical");
    job.relocatable = flag("relocatable");
    job.print_map = flag("print-map");
    job.trace = strings("trace-symbol");
    job.why_live = strings("why-live");
    job.fatal_warnings = flag("fatal-warnings");
    job.strip_debug = flag("strip-debug");
    job.stats = flag("stats");
    job.verify = flag("verify");
    job.gpu_code = strings("gpu-code")
        .iter()
        .flat_map(|list| list.split(','))
        .filter_map(|code| code.parse().ok())
        .collect();
    job.ptxas_options = strings("Xptxas")
        .iter()
        .flat_map(|list| list.split(','))
        .filter(|o| !o.is_empty())
        .map(str::to_string)
        .collect();
    job.split_kernels = m.get_one::<usize>("split-kernels").copied();
    if let Some(n) = m.get_one::<usize>("maxrregcount") {
        job.ptxas_options
            .extend(["--maxrregcount".to_string(), n.to_string()]);
    }
    if let Some(level) = last("ptxas-opt-level") {
        job.ptxas_options.push(format!("-O{level}"));
    }
    if flag("lineinfo") {
        job.ptxas_options.push("-lineinfo".to_string());
    }
}

/// The threads to use for `requested`: never more than there is work for, that is
/// the larger of the number of inputs (parsed in parallel) and of cores (one large
/// input is walked in parallel too). `-j 10000` for one small input would otherwise
/// start 10,000 threads.
pub fn thread_count(requested: usize, inputs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    requested.min(inputs.max(cores)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options of an embedder (the C API): a link's, spelled as on the command
    /// line, without inputs, `-o` or a mode.
    #[test]
    fn link_options_alone_make_a_job() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let job = link_job(&words(&["--arch", "sm_80", "-O3", "--gc-sections"])).unwrap();
        assert_eq!(job.archs.len(), 1);
        assert!(job.gc_sections);
        assert_eq!(job.ptxas_options, ["-O3"]);
        assert_eq!(job.emit, Some(OutputKind::Ptx));
        let job = link_job(&words(&["--emit=fatbin"])).unwrap();
        assert_eq!(job.emit, Some(OutputKind::Fatbin));
        for (bad, says) in [
            (&["a.ptx"][..], "are not options here"),
            (&["-o", "x.ptx"][..], "are not options here"),
            (&["-lm"][..], "are not options here"),
            (&["--whole-archive"][..], "are not options here"),
            (&["--start-group"][..], "are not options here"),
            (
                &["--no-such-option"][..],
                "unexpected argument '--no-such-option' found",
            ),
            (
                &["--syntax-only"][..],
                "--syntax-only is for the command line",
            ),
            (
                &["--help"][..],
                "--help and --version are for the command line",
            ),
        ] {
            let e = link_job(&words(bad)).unwrap_err();
            assert!(e.0.contains(says), "{bad:?}: {e}");
            for noise in ["tip:", "--help'", "Usage:", "ptxld check", "\n\n"] {
                assert!(!e.0.contains(noise), "{e}");
            }
        }
    }
    use super::super::table::{Modes, Value};

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// What a command line parses to, as text (for comparing two parses).
    fn parsed(args: &[&str]) -> Result<String, String> {
        match parse(os(args)).map_err(|e| format!("{e:#}"))? {
            Parsed::Run(o) => Ok(format!("{o:?}")),
            Parsed::Print(text) => Ok(String::from_utf8_lossy(&text).into_owned()),
        }
    }

    /// A command line of `mode` with `extra` options.
    fn line(mode: Modes, extra: &[String]) -> Vec<String> {
        let mut args: Vec<String> = match mode {
            CHECK => vec!["check".into()],
            PARSE
                if !extra
                    .iter()
                    .any(|a| a.contains("symbols") || a.contains("syntax")) =>
            {
                vec!["--syntax-only".into()]
            }
            ALONE if !extra.iter().any(|a| a.contains("generate")) => {
                vec!["--generate".into(), "man".into()]
            }
            _ => Vec::new(),
        };
        args.extend(extra.iter().cloned());
        if mode == LINK
            && !extra
                .iter()
                .any(|a| a.starts_with("-o") || a.contains("output"))
        {
            args.extend(["-o".into(), "out.ptx".into()]);
        }
        if mode != ALONE {
            args.push("in.ptx".into());
        }
        args
    }

    fn sample(v: Value) -> Option<&'static str> {
        Some(match v {
            Value::None => return None,
            Value::Path(_) => "some/file",
            Value::Text(_) | Value::Identifier(_) => "name_1",
            Value::Count(_) => "3",
            Value::Positive(_) => "1",
            Value::Target => "sm_90a",
            Value::Version => "8.0",
            Value::OneOf(_, values) => values[values.len() - 1],
            Value::Passed(_) => "-O3",
            Value::GpuCodes => "sm_80,compute_80",
        })
    }

    /// Every spelling of `o` that GNU ld and lld accept, with `value`.
    fn spellings(o: &super::super::table::Opt, value: Option<&str>) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let v = |s: String| match value {
            Some(v) => vec![s, v.to_string()],
            None => vec![s],
        };
        if !o.long.is_empty() {
            out.push(v(format!("--{}", o.long)));
            if let Some(val) = value {
                out.push(vec![format!("--{}={val}", o.long)]);
            }
            if !o.long.starts_with('o') && o.long.len() > 1 {
                out.push(v(format!("-{}", o.long)));
                if let Some(val) = value {
                    out.push(vec![format!("-{}={val}", o.long)]);
                }
            }
        }
        if let Some(c) = o.short {
            out.push(v(format!("-{c}")));
            if let Some(val) = value {
                out.push(vec![format!("-{c}{val}")]);
            }
        }
        out
    }

    /// Every option of the table parses in every spelling, in each mode it applies
    /// to, changes what the command does, and is refused by name elsewhere; a flag
    /// refuses a value.
    #[test]
    fn every_option_parses_in_every_spelling_and_only_where_it_applies() {
        for o in OPTIONS {
            let value = sample(o.value);
            for mode in [LINK, CHECK, PARSE, ALONE] {
                for spelled in spellings(o, value) {
                    let args = line(mode, &spelled);
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let got = parsed(&args);
                    if o.modes & mode == 0 {
                        let err = got.expect_err(&format!("{args:?} should be refused"));
                        assert!(
                            err.contains("does not apply") || err.contains("--syntax-only"),
                            "{args:?}: {err}"
                        );
                        continue;
                    }
                    let got = got.unwrap_or_else(|e| panic!("{args:?}: {e}"));
                    // A mode's own flag is compared with a link.
                    let modal = ["syntax-only", "print-symbols"].contains(&o.id);
                    let base = line(if modal { LINK } else { mode }, &[]);
                    let base: Vec<&str> = base.iter().map(String::as_str).collect();
                    if o.id != "no-gc-sections" && mode != ALONE {
                        assert_ne!(Ok(got), parsed(&base), "{args:?} changes nothing");
                    }
                }
                if value.is_none() && !o.long.is_empty() && o.modes & mode != 0 {
                    let args = line(mode, &[format!("--{}=no", o.long)]);
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    assert!(parsed(&args).is_err(), "{args:?} accepted a value");
                }
            }
        }
    }

    /// `--help` lists every option of the table, long and short names.
    #[test]
    fn help_lists_every_option() {
        let help = match parse(os(&["--help"])).unwrap() {
            Parsed::Print(text) => String::from_utf8(text).unwrap(),
            Parsed::Run(_) => panic!("--help ran"),
        };
        let check_help = match parse(os(&["check", "--help"])).unwrap() {
            Parsed::Print(text) => String::from_utf8(text).unwrap(),
            Parsed::Run(_) => panic!("check --help ran"),
        };
        for o in OPTIONS {
            let help = if o.modes == CHECK { &check_help } else { &help };
            if !o.long.is_empty() {
                assert!(help.contains(&format!("--{}", o.long)), "--{}", o.long);
            }
            if let Some(c) = o.short {
                assert!(help.contains(&format!("-{c}")), "-{c}");
            }
            assert!(help.contains(o.help.split_whitespace().next().unwrap()));
        }
    }

    /// Options that only keep their last value or change mode order nothing; the
    /// order-sensitive ones keep their places among the inputs.
    #[test]
    fn inputs_libraries_and_groups_keep_their_order() {
        let Parsed::Run(o) = parse(os(&[
            "a.ptx",
            "--whole-archive",
            "-lx",
            "-(",
            "b.ptx",
            "-l",
            ":c.a",
            "-)",
            "--no-whole-archive",
            "-o",
            "out",
            "--",
            "-d.ptx",
        ]))
        .unwrap() else {
            panic!("did not run")
        };
        let Mode::Link(job) = o.mode else {
            panic!("not a link")
        };
        let want = [
            InputSpec::File("a.ptx".into()),
            InputSpec::WholeArchive(true),
            InputSpec::Lib("x".into()),
            InputSpec::Group(true),
            InputSpec::File("b.ptx".into()),
            InputSpec::Lib(":c.a".into()),
            InputSpec::Group(false),
            InputSpec::WholeArchive(false),
            InputSpec::File("-d.ptx".into()),
        ];
        assert_eq!(job.inputs, want);
    }

    /// `--gpu-code` and `-Xptxas` take comma-separated lists (nvcc's spelling), and
    /// ptxas's options may begin with `-`.
    #[test]
    fn machine_code_options() {
        let args = [
            "-o",
            "a.fatbin",
            "--gpu-code",
            "sm_80,compute_90",
            "-gpu-code=sm_90a",
            "-Xptxas",
            "-O3,-lineinfo",
            "-Xptxas=-v",
            "--maxrregcount",
            "32",
            "-O3",
            "-lineinfo",
            "i",
        ];
        let Parsed::Run(o) = parse(os(&args)).unwrap() else {
            panic!("did not run")
        };
        let Mode::Link(job) = o.mode else {
            panic!("not a link")
        };
        let codes: Vec<String> = job.gpu_code.iter().map(|c| c.to_string()).collect();
        assert_eq!(codes, ["sm_80", "compute_90", "sm_90a"]);
        assert_eq!(
            job.ptxas_options,
            [
                "-O3",
                "-lineinfo",
                "-v",
                "--maxrregcount",
                "32",
                "-O3",
                "-lineinfo"
            ]
        );
        assert!(parse(os(&["-o", "a", "--gpu-code", "sm_80,gfx90", "i"])).is_err());
    }

    /// nvJitLink's spellings of its options, `-optimize-unused-variables` too (GNU ld
    /// would read `-o ptimize-unused-variables`).
    #[test]
    fn nvjitlink_spellings() {
        let args = [
            "-kernels-used=k1",
            "-kernels-used=k2",
            "-variables-used=v",
            "-optimize-unused-variables",
            "-o",
            "out.ptx",
            "i",
        ];
        let Parsed::Run(o) = parse(os(&args)).unwrap() else {
            panic!("did not run")
        };
        let Mode::Link(job) = o.mode else {
            panic!("not a link")
        };
        assert_eq!(job.kernels_used, ["k1", "k2"]);
        assert_eq!(job.variables_used, ["v"]);
        assert!(job.optimize_unused_variables);
        assert_eq!(job.output, std::path::Path::new("out.ptx"));
    }

    /// The later of `--gc-sections` and `--no-gc-sections` wins, as in GNU ld, and
    /// an option given twice keeps its last value.
    #[test]
    fn the_last_option_wins() {
        let Parsed::Run(o) =
            parse(os(&["-o", "a", "-o", "b", "--emit=ptx", "--emit=obj", "i"])).unwrap()
        else {
            panic!("did not run")
        };
        let Mode::Link(job) = o.mode else {
            panic!("not a link")
        };
        assert_eq!(job.output, std::path::Path::new("b"));
        assert_eq!(job.emit, Some(OutputKind::Obj));
        let gc = |args: &[&str]| match parse(os(args)).unwrap() {
            Parsed::Run(o) => match o.mode {
                Mode::Link(job) => job.gc_sections,
                _ => panic!("not a link"),
            },
            Parsed::Print(_) => panic!("printed"),
        };
        assert!(gc(&["--no-gc-sections", "--gc-sections", "-o", "o", "i"]));
        assert!(!gc(&["--gc-sections", "--no-gc-sections", "-o", "o", "i"]));
        assert!(!gc(&["-o", "o", "i"]));
    }

    /// Runs of inputs folded into one word each ([`runs`]) give the inputs, in
    /// order among `-l`, archive options and groups, that the whole line gives.
    #[test]
    fn folded_runs_give_the_inputs_of_the_line_as_given() {
        let lines: [&[&str]; 4] = [
            &["-o", "out.ptx", "a", "b", "c", "-lm", "d", "e", "f"],
            &[
                "a",
                "b",
                "c",
                "--whole-archive",
                "x.a",
                "y.a",
                "z.a",
                "--no-whole-archive",
                "-o",
                "o",
            ],
            &[
                "-(", "p", "q", "r", "-)", "-L", "dir", "s", "t", "-o-", "-", "u", "v",
            ],
            &[
                "--gc-sections",
                "a",
                "b",
                "c",
                "-j",
                "2",
                "d",
                "e",
                "-Xptxas",
                "-O3",
                "f",
                "g",
            ],
        ];
        for line in lines {
            let (m, runs) = clap_matches(os(line)).unwrap().unwrap();
            assert!(runs.len() >= 2, "{line:?}: nothing folded");
            let folded = ordered_inputs(&m, runs);
            let args = std::iter::once(OsString::from("ptxld")).chain(cli::normalize(os(line)));
            let whole = cli::command().try_get_matches_from(args).unwrap();
            assert_eq!(folded, ordered_inputs(&whole, Runs::default()), "{line:?}");
            assert!(folded.len() >= 5, "{line:?}");
        }
        // A refused line is reported as given: no marker in the message.
        let e = parsed(&["-o", "o", "a", "b", "c", "--no-such-option", "d", "e"]).unwrap_err();
        assert!(e.contains("'--no-such-option'") && !e.contains('\0'), "{e}");
        let e = parsed(&["--generate", "man", "a", "b", "c"]).unwrap_err();
        assert!(e.contains("takes no inputs"), "{e}");
    }

    /// What folding rests on: no option of the table takes more than one value, so
    /// a plain word after another plain word is an input.
    #[test]
    fn no_option_takes_more_than_one_value() {
        let cmd = cli::command();
        let check = cmd.find_subcommand("check").expect("check").clone();
        for c in [&cmd, &check] {
            for a in c.get_arguments().filter(|a| !a.is_positional()) {
                let most = a.get_num_args().map_or(1, |r| r.max_values());
                assert!(most <= 1, "--{:?} takes {most} values", a.get_long());
            }
        }
    }

    #[test]
    fn threads_never_exceed_the_work() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(thread_count(10_000, 1), cores);
        assert_eq!(thread_count(10_000, 50_000), 10_000);
        assert_eq!(thread_count(1, 50_000), 1);
    }
}
