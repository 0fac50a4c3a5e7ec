//! The options table: every option of the command line, once. The parser, `--help`,
//! the shell completions and the man page are all made from it ([`command`]), so
//! they cannot drift apart; `tests/cli.rs` checks that every entry parses and is in
//! `--help`.
//!
//! Spellings follow GNU ld and lld: `--name VALUE` and `--name=VALUE` for options
//! that take a value (and only for those), `-xVALUE` and `-x VALUE` for short ones,
//! and every long option with a single dash too (`-Map=FILE`, `-gc-sections`),
//! except those beginning with `o`, which GNU ld reads as `-o` ([`normalize`]), but
//! for nvJitLink's `-optimize-unused-variables`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, ValueParser};
use clap::{Arg, ArgAction, Command};

/// The modes an option applies to (bits).
pub type Modes = u8;
/// Linking (`-o FILE INPUTS`).
pub const LINK: Modes = 1;
/// `ptxld check`.
pub const CHECK: Modes = 2;
/// `--syntax-only` and `--print-symbols`.
pub const PARSE: Modes = 4;
/// Options that make sense on their own (`--generate`).
pub const ALONE: Modes = 8;

/// What an option's value is.
#[derive(Clone, Copy)]
pub enum Value {
    /// A flag: no value; `--flag=value` is an error.
    None,
    /// A file or directory name (any bytes).
    Path(&'static str),
    /// A symbol or other text.
    Text(&'static str),
    /// A count (0 allowed).
    Count(&'static str),
    /// A count of at least 1.
    Positive(&'static str),
    /// One of the PTX ISA's architectures (`sm_80`, `sm_90a`, `sm_100f`).
    Target,
    /// A PTX ISA version `MAJOR.MINOR`.
    Version,
    /// A C identifier.
    Identifier(&'static str),
    /// One of a fixed list.
    OneOf(&'static str, &'static [&'static str]),
    /// Options for another program, which may begin with `-` (`-Xptxas -O3`).
    Passed(&'static str),
    /// GPU codes, comma-separated: `sm_NN` (machine code) or `compute_NN` (PTX).
    GpuCodes,
}

/// One option of the table.
pub struct Opt {
    /// Its id in the parsed matches.
    pub id: &'static str,
    /// The long name, without dashes (empty if there is none).
    pub long: &'static str,
    /// The short name.
    pub short: Option<char>,
    /// Further long names.
    pub aliases: &'static [&'static str],
    /// What it takes.
    pub value: Value,
    /// May be given more than once (each value kept); a flag given twice is fine.
    pub repeat: bool,
    /// Where it applies.
    pub modes: Modes,
    /// The section of `--help` it is listed in.
    pub heading: &'static str,
    /// One line for `-h`; `--help` and the man page add [`Opt::more`].
    pub help: &'static str,
    /// More detail for `--help` and the man page.
    pub more: &'static str,
}

const OUTPUT: &str = "Output";
const LIBRARIES: &str = "Libraries (GNU ld rules)";
const DEAD_CODE: &str = "Dead code";
const EXPLAIN: &str = "Explaining a link";
const BUILD: &str = "Build systems and diagnostics";
const MODES: &str = "Other modes";

const fn opt(id: &'static str, long: &'static str, heading: &'static str) -> Opt {
    Opt {
        id,
        long,
        short: None,
        aliases: &[],
        value: Value::None,
        repeat: false,
        modes: LINK,
        heading,
        help: "",
        more: "",
    }
}

/// Every option. The order is the order of `--help`.
pub const OPTIONS: &[Opt] = &[
    Opt {
        short: Some('o'),
        value: Value::Path("FILE"),
        help: "Write the result to FILE, atomically (- is standard output)",
        more: "An existing FILE is replaced in one step (a temporary file in the same \
               directory, then a rename); a device or FIFO is written in place. FILE may \
               not be, or link to, a file the link reads.",
        ..opt("output", "output", OUTPUT)
    },
    Opt {
        value: Value::OneOf("KIND", &["ptx", "fatbin", "obj", "cubin"]),
        help: "Write KIND: ptx, fatbin, obj or cubin (default: by the extension of -o)",
        more: "By default .fatbin writes a fatbin, .o an x86-64 ELF object carrying one \
               (with __cudaRegisterFatBinary's wrapper symbol), .cubin the machine code \
               ptxas assembles from the output for its one target, anything else PTX.",
        ..opt("emit", "emit", OUTPUT)
    },
    Opt {
        value: Value::Target,
        repeat: true,
        modes: LINK | CHECK,
        help: "Target of the output (default: the highest input target)",
        more: "Any architecture of the PTX ISA: sm_NN, sm_NNa (arch-specific) or sm_NNf \
               (family-specific). Below an input's .target where nothing the link uses \
               needs more (an error names what does). Repeat it \
               with --emit fatbin or obj for one entry per target.",
        ..opt("arch", "arch", OUTPUT)
    },
    Opt {
        value: Value::GpuCodes,
        repeat: true,
        help: "Fatbin entries, in order: machine code for sm_NN, PTX for compute_NN",
        more: "nvcc's -gencode code=: --gpu-code sm_80,sm_90,compute_90 links for sm_80 and \
               sm_90 and writes ptxas's cubins of both and the sm_90 PTX (for the driver to \
               compile on newer GPUs). The codes name the targets, so --arch is left out; \
               with --emit fatbin or obj.",
        ..opt("gpu-code", "gpu-code", OUTPUT)
    },
    Opt {
        value: Value::Version,
        modes: LINK | CHECK,
        help: "PTX ISA version of the output, or min (default: the highest input version)",
        more: "Below an input's .version where everything the link uses is in that version \
               (an error names each instruction that is not); min: the lowest such version.",
        ..opt("ptx-version", "ptx-version", OUTPUT)
    },
    Opt {
        short: Some('S'),
        modes: LINK | CHECK,
        help: "Drop DWARF sections, .file and .loc (by default the inputs' DWARF is merged)",
        ..opt("strip-debug", "strip-debug", OUTPUT)
    },
    Opt {
        value: Value::Identifier("NAME"),
        help: "Symbols of an obj output: NAME_fatbin_data, NAME_fatbin_wrapper",
        more: "The default NAME is ptxld.",
        ..opt("symbol", "symbol", OUTPUT)
    },
    Opt {
        short: Some('L'),
        value: Value::Path("DIR"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Add DIR to the library search path",
        ..opt("library-path", "library-path", LIBRARIES)
    },
    Opt {
        short: Some('l'),
        value: Value::Path("NAME"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Link libNAME.a from the search path; -l:FILE links FILE",
        more: "An archive member is loaded only if it defines a symbol still undefined at \
               that point of the command line.",
        ..opt("library", "library", LIBRARIES)
    },
    Opt {
        repeat: true,
        modes: LINK | CHECK,
        help: "Load every member of the archives that follow",
        ..opt("whole-archive", "whole-archive", LIBRARIES)
    },
    Opt {
        repeat: true,
        modes: LINK | CHECK,
        help: "Back to loading archive members on demand",
        ..opt("no-whole-archive", "no-whole-archive", LIBRARIES)
    },
    Opt {
        repeat: true,
        modes: LINK | CHECK,
        help: "Start a group of archives (also -( )",
        more: "The archives up to --end-group are scanned again until no more members are \
               loaded (mutual dependencies).",
        ..opt("start-group", "start-group", LIBRARIES)
    },
    Opt {
        repeat: true,
        modes: LINK | CHECK,
        help: "End a group of archives (also -) )",
        ..opt("end-group", "end-group", LIBRARIES)
    },
    Opt {
        short: Some('u'),
        value: Value::Text("SYM"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Start with SYM undefined (pulls in its definition from an archive)",
        ..opt("undefined", "undefined", LIBRARIES)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Remove functions and variables that no kernel, --export or -u symbol reaches",
        more: "References are calls, address-taking, initializers, .calltargets and \
               .alias. Undefined symbols that only removed code uses are then no error.",
        ..opt("gc-sections", "gc-sections", DEAD_CODE)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Keep everything (the default)",
        ..opt("no-gc-sections", "no-gc-sections", DEAD_CODE)
    },
    Opt {
        value: Value::Text("SYM"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Keep SYM and what it reaches with --gc-sections",
        ..opt("export", "export", DEAD_CODE)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Keep every .visible symbol with --gc-sections",
        ..opt("export-all", "export-all", DEAD_CODE)
    },
    Opt {
        short: Some('r'),
        help: "Partial link: one PTX module that keeps unresolved imports .extern, to link again",
        more: "What the inputs define is linked as usual (weak and common definitions stay \
               weak and common, for the final link to decide); an import nothing defines \
               stays an .extern declaration instead of an error. Linking partial links gives \
               what one link of all their inputs gives. Dead-code removal belongs to the final \
               link.",
        ..opt("relocatable", "relocatable", OUTPUT)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Fold identical strong definitions of one symbol into one instead of a duplicate",
        more: "Two .visible definitions whose texts are the same byte for byte, and so are \
               the module-local symbols they use (the same template instantiated by two \
               NVRTC programs, one library linked twice): the first is kept, with a note \
               naming both. Definitions that differ stay a duplicate-symbol error, which \
               then shows where they differ.",
        ..opt("fold-identical", "fold-identical", OUTPUT)
    },
    Opt {
        value: Value::Text("KERNEL"),
        repeat: true,
        help: "Keep only the kernels named (nvJitLink's -kernels-used), with what they reach",
        more: "The other kernels, and what only they reach, are removed; every variable stays \
               (as nvJitLink keeps them) unless --variables-used or \
               --optimize-unused-variables says otherwise. Repeat it for each kernel.",
        ..opt("kernels-used", "kernels-used", DEAD_CODE)
    },
    Opt {
        value: Value::Text("VAR"),
        repeat: true,
        help: "The variables the host uses (nvJitLink's -variables-used); others stay only \
               where kept code reaches them",
        ..opt("variables-used", "variables-used", DEAD_CODE)
    },
    Opt {
        help: "Remove the variables no kept code reaches (nvJitLink's -optimize-unused-variables)",
        ..opt(
            "optimize-unused-variables",
            "optimize-unused-variables",
            DEAD_CODE,
        )
    },
    Opt {
        help: "List what --gc-sections removed",
        ..opt("print-gc-sections", "print-gc-sections", DEAD_CODE)
    },
    Opt {
        value: Value::Text("SYM"),
        repeat: true,
        help: "With --gc-sections: the chain of references that keeps SYM",
        ..opt("why-live", "why-live", DEAD_CODE)
    },
    Opt {
        value: Value::Path("FILE"),
        help: "Write the link map to FILE",
        more: "Every output symbol, its origin and kind, which weak definition won, which \
               commons merged, which locals were renamed.",
        ..opt("Map", "Map", EXPLAIN)
    },
    Opt {
        short: Some('M'),
        help: "Print the link map on standard output",
        ..opt("print-map", "print-map", EXPLAIN)
    },
    Opt {
        short: Some('y'),
        value: Value::Text("SYM"),
        repeat: true,
        help: "Report every definition, declaration and reference of SYM",
        ..opt("trace-symbol", "trace-symbol", EXPLAIN)
    },
    Opt {
        value: Value::Path("FILE"),
        help: "Write a Make-syntax depfile naming the output and every file read",
        more: "Inputs, archives, thin-archive members and response files, escaped as \
               GCC's -MD escapes them, with a phony target for each (as lld writes).",
        ..opt("dependency-file", "dependency-file", BUILD)
    },
    Opt {
        short: Some('v'),
        help: "Report which archive member was loaded for which symbol",
        ..opt("verbose", "verbose", BUILD)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Treat warnings as errors",
        ..opt("fatal-warnings", "fatal-warnings", BUILD)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Assemble each target's output with ptxas before writing it; its errors fail the \
               link, at the input lines they are about",
        more: "Whole-program ptxas (-arch of each target) runs on the output in a private \
               temporary folder; nothing is written when it finds errors. ptxas is $PTXAS, \
               else $CUDA_HOME/bin/ptxas, else $CUDA_PATH/bin/ptxas, else the one in PATH.",
        ..opt("verify", "verify", BUILD)
    },
    Opt {
        value: Value::Passed("OPTIONS"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Give ptxas OPTIONS, comma-separated (-Xptxas -O3,-lineinfo)",
        more: "Wherever the link runs ptxas: --emit cubin, --gpu-code sm_NN and --verify. \
               nvcc's spelling; ptxas's own options, unchecked.",
        ..opt("Xptxas", "Xptxas", BUILD)
    },
    Opt {
        value: Value::Positive("N"),
        modes: LINK,
        help: "Assemble machine code as N parts in parallel, linked by nvJitLink",
        more: "The kernels are shared out among N modules (each with copies of the \
               functions it calls, and the program's variables defined in one part and \
               declared in the others), ptxas assembles them at once, and nvJitLink links \
               the cubins into one. For --emit cubin and --gpu-code sm_NN; needs nvJitLink \
               (NVJITLINK, CUDA_HOME or the loader's path). See docs/machine-code.md.",
        ..opt("split-kernels", "split-kernels", BUILD)
    },
    Opt {
        value: Value::Positive("N"),
        modes: LINK | CHECK,
        help: "Give ptxas --maxrregcount N: at most N registers per thread",
        ..opt("maxrregcount", "maxrregcount", BUILD)
    },
    Opt {
        short: Some('O'),
        value: Value::OneOf("N", &["0", "1", "2", "3"]),
        modes: LINK | CHECK,
        help: "Give ptxas -ON, its optimization level (nvJitLink's -O)",
        ..opt("ptxas-opt-level", "ptxas-opt-level", BUILD)
    },
    Opt {
        modes: LINK | CHECK,
        help: "Give ptxas -lineinfo: line information in the machine code (nvcc's -lineinfo)",
        ..opt("lineinfo", "lineinfo", BUILD)
    },
    Opt {
        help: "Report the wall and CPU time of each phase and the peak memory",
        ..opt("stats", "stats", BUILD)
    },
    Opt {
        value: Value::Count("N"),
        modes: LINK | CHECK | PARSE,
        help: "Stop after N errors (default 20, 0 = no limit)",
        ..opt("error-limit", "error-limit", BUILD)
    },
    Opt {
        short: Some('j'),
        value: Value::Positive("N"),
        modes: LINK | CHECK | PARSE,
        help: "Use N threads (default: all cores); the result does not depend on N",
        more: "Never more threads than the larger of the number of inputs and of cores.",
        ..opt("threads", "threads", BUILD)
    },
    Opt {
        help: "Link in this process (by default a child links and this one exits as soon \
               as the output is complete, leaving the teardown to the child)",
        ..opt("no-fork", "no-fork", BUILD)
    },
    Opt {
        short: Some('z'),
        value: Value::Text("KEYWORD"),
        repeat: true,
        modes: LINK | CHECK,
        help: "Accepted for GNU ld compatibility; no keyword means anything for PTX (warned)",
        ..opt("z", "", BUILD)
    },
    Opt {
        value: Value::OneOf("FORMAT", &["text", "json"]),
        modes: CHECK,
        help: "With check: report as text or json",
        ..opt("format", "format", MODES)
    },
    Opt {
        modes: PARSE,
        help: "Only parse every input and report all errors (exit 0 when every file parses)",
        ..opt("syntax-only", "syntax-only", MODES)
    },
    Opt {
        modes: PARSE,
        help: "Parse, then list each module's header, symbols and references on stdout",
        ..opt("print-symbols", "print-symbols", MODES)
    },
    Opt {
        value: Value::OneOf(
            "WHAT",
            &[
                "man",
                "complete-bash",
                "complete-zsh",
                "complete-fish",
                "complete-elvish",
                "complete-powershell",
            ],
        ),
        modes: ALONE,
        help: "Print the man page or a shell's completion script, made from this table",
        ..opt("generate", "generate", MODES)
    },
];

/// The id of the positional inputs.
pub const INPUTS: &str = "inputs";

/// How an option is written in messages: `-o/--output`, `--emit`, `-z`.
pub fn spelling(o: &Opt) -> String {
    match (o.short, o.long) {
        (Some(c), "") => format!("-{c}"),
        (Some(c), long) => format!("-{c}/--{long}"),
        (None, long) => format!("--{long}"),
    }
}

fn parser(v: Value) -> Option<ValueParser> {
    Some(match v {
        Value::None => return None,
        Value::Path(_) => clap::value_parser!(PathBuf),
        Value::Text(_) => ValueParser::string(),
        Value::Count(_) => clap::value_parser!(usize).into(),
        Value::Positive(_) => ValueParser::new(|s: &str| -> Result<usize, String> {
            match s.parse::<usize>() {
                Ok(0) => Err("needs a number of at least 1".into()),
                Ok(n) => Ok(n),
                Err(e) => Err(e.to_string()),
            }
        }),
        Value::Target => {
            PossibleValuesParser::new(crate::internal::link::header::known_targets()).into()
        }
        Value::Version => ValueParser::new(|s: &str| -> Result<String, String> {
            if s == "min" {
                return Ok(s.to_string());
            }
            s.parse::<crate::PtxVersion>()
                .map(|_| s.to_string())
                .map_err(|_| "needs MAJOR.MINOR, such as 8.0, or min".into())
        }),
        Value::Identifier(_) => ValueParser::new(|s: &str| -> Result<String, String> {
            let ok = !s.is_empty()
                && !s.starts_with(|c: char| c.is_ascii_digit())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ok {
                Ok(s.to_string())
            } else {
                Err("needs a C identifier".into())
            }
        }),
        Value::OneOf(_, values) => PossibleValuesParser::new(values.iter().copied()).into(),
        Value::Passed(_) => ValueParser::string(),
        Value::GpuCodes => ValueParser::new(|s: &str| -> Result<String, String> {
            for code in s.split(',') {
                code.parse::<crate::GpuCode>().map_err(|e| e.to_string())?;
            }
            Ok(s.to_string())
        }),
    })
}

fn value_name(v: Value) -> &'static str {
    match v {
        Value::None => "",
        Value::Path(n)
        | Value::Text(n)
        | Value::Count(n)
        | Value::Positive(n)
        | Value::Identifier(n)
        | Value::OneOf(n, _)
        | Value::Passed(n) => n,
        Value::GpuCodes => "CODES",
        Value::Target => "TARGET",
        Value::Version => "X.Y",
    }
}

/// The clap argument of `o`; `shown` says whether the mode being built lists it.
fn arg(o: &Opt, shown: bool) -> Arg {
    let mut a = Arg::new(o.id).help(o.help).help_heading(o.heading);
    if !o.more.is_empty() {
        a = a.long_help(format!("{}. {}", o.help, o.more));
    }
    if !o.long.is_empty() {
        a = a.long(o.long);
    }
    if let Some(c) = o.short {
        a = a.short(c);
    }
    if !o.aliases.is_empty() {
        a = a.visible_aliases(o.aliases);
    }
    a = match parser(o.value) {
        None => {
            // Each occurrence stored, so that its place on the command line is known
            // (`indices_of`), and no value accepted (`--gc-sections=no` is an error).
            a.num_args(0)
                .default_missing_value("on")
                .action(ArgAction::Append)
        }
        Some(p) => {
            let a = a
                .num_args(1)
                .value_name(value_name(o.value))
                .value_parser(p)
                .allow_hyphen_values(matches!(o.value, Value::Passed(_)));
            if o.repeat {
                a.action(ArgAction::Append)
            } else {
                a.action(ArgAction::Set)
            }
        }
    };
    if matches!(o.value, Value::Target) {
        a = a.hide_possible_values(true);
    }
    a.hide(!shown)
}

/// The options of a mode's parser: every option of the table, so that one that does
/// not apply is parsed and then refused by name ([`crate::args`]); listed in help only
/// where it applies.
fn with_options(mut cmd: Command, modes: Modes) -> Command {
    // An option given twice keeps its last value (`-o a -o b` writes b), as in GNU ld.
    cmd = cmd.args_override_self(true);
    for o in OPTIONS {
        cmd = cmd.arg(arg(o, o.modes & modes != 0));
    }
    cmd.arg(
        Arg::new(INPUTS)
            .value_name("INPUTS")
            .help("PTX files, fatbins, ELF objects carrying one, ar archives of these; - is standard input")
            .num_args(0..)
            .action(ArgAction::Append)
            .value_parser(clap::value_parser!(PathBuf)),
    )
}

const ABOUT: &str = "Links PTX modules written by LLVM/clang, GCC (nvptx), NVRTC or NVVM into one \
module that ptxas and the CUDA driver accept as a whole program.";

const AFTER: &str = "\
Symbol rules (NVIDIA's): .extern imports; .visible beats .weak; among .weak definitions the \
FIRST in link order wins; .common and uninitialized .weak variables merge into the largest; \
module-local names never clash (the first keeps its name, later ones become NAME$mN).

@FILE reads more arguments from FILE (GNU quoting, nestable). Every long option may also be \
written with one dash (-Map=FILE), except those beginning with 'o'. An input named - is read \
from standard input. Exit status: 0 on success, 1 on any error, 128+N when ended by signal N.";

/// The whole command line: the link mode, with `check` as a subcommand.
pub fn command() -> Command {
    let check = with_options(
        Command::new("check")
            .about(
                "Link without writing anything and report every problem: errors, operands ptxas \
                 would refuse, ABI warnings (PTX interoperability guide), and notes where nvJitLink \
                 would decide differently",
            )
            .override_usage("ptxld check [OPTIONS] INPUTS..."),
        CHECK,
    );
    with_options(
        Command::new("ptxld")
            .version(env!("CARGO_PKG_VERSION"))
            .about(ABOUT)
            .override_usage(
                "ptxld [OPTIONS] -o OUTPUT INPUTS...\n       ptxld check [OPTIONS] INPUTS...\n       \
                 ptxld --syntax-only|--print-symbols [OPTIONS] INPUTS...",
            )
            .after_help(AFTER)
            .max_term_width(100)
            .args_conflicts_with_subcommands(true)
            .disable_help_subcommand(true)
            .subcommand(check),
        LINK | PARSE | ALONE,
    )
}

/// GNU ld's spellings that clap does not know, rewritten to clap's: a long option
/// with one dash (`-Map=F` → `--Map=F`, `-gc-sections` → `--gc-sections`; not for
/// names beginning with `o`, which are `-o` with a value, as in GNU ld), and `-(`,
/// `-)` for the groups. Everything after `--` is left alone.
pub fn normalize(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for a in args {
        if rest {
            out.push(a);
            continue;
        }
        let bytes = a.as_encoded_bytes();
        if bytes == b"--" {
            rest = true;
        } else if bytes == b"-(" {
            out.push("--start-group".into());
            continue;
        } else if bytes == b"-)" {
            out.push("--end-group".into());
            continue;
        } else if bytes.len() > 2
            && bytes[0] == b'-'
            && bytes[1] != b'-'
            && (bytes[1] != b'o' || bytes == b"-optimize-unused-variables")
        {
            let name_end = bytes.iter().position(|&b| b == b'=').unwrap_or(bytes.len());
            let name = &bytes[1..name_end];
            let long = OPTIONS.iter().any(|o| {
                o.long.as_bytes() == name || o.aliases.iter().any(|l| l.as_bytes() == name)
            });
            if long {
                let mut s = OsString::from("-");
                s.push(&a);
                out.push(s);
                continue;
            }
        }
        out.push(a);
    }
    out
}
