//! ptxas's messages, one a line:
//!
//! ```text
//! ptxas t0-sm_80.ptx, line 26; error   : Arguments mismatch for instruction 'add'
//! ptxas t0-sm_60.ptx, line 10; warning : Instruction 'vote' without '.sync' is deprecated ...
//! ptxas fatal   : Ptx assembly aborted due to errors
//! ```
//!
//! Lines are counted as ptxas counts them: only `\n` ends one (a lone `\r` does not).

use crate::diag::Severity;

/// What one line of ptxas's output says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Message<'a> {
    /// `error` and `fatal` are errors, `warning` warnings; `info` and lines in no
    /// known shape are notes (shown, never failing the link).
    pub severity: Severity,
    /// The 1-based line of the PTX file the message is about, if it names one.
    pub line: Option<u64>,
    /// ptxas's text after `error   : `, or the whole line if it has no known shape.
    pub text: &'a str,
}

/// ptxas's last message after errors, which repeats that there were some.
pub(crate) const ABORTED: &str = "Ptx assembly aborted due to errors";

/// Every message of `output`, in order; blank lines are skipped.
pub(crate) fn parse(output: &str) -> Vec<Message<'_>> {
    output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(message)
        .collect()
}

fn message(line: &str) -> Message<'_> {
    let other = Message {
        severity: Severity::Note,
        line: None,
        text: line,
    };
    let Some(rest) = line.strip_prefix("ptxas ") else {
        return other;
    };
    let (at, rest) = match located(rest) {
        Some((n, tail)) => (Some(n), tail),
        None => (None, rest),
    };
    let Some((kind, text)) = rest.split_once(':') else {
        return other;
    };
    let severity = match kind.trim_end() {
        "error" | "fatal" => Severity::Error,
        "warning" => Severity::Warning,
        "info" => Severity::Note,
        _ => return other,
    };
    Message {
        severity,
        line: at,
        text: text.trim(),
    }
}

/// `FILE, line N; REST` as `(N, REST)`. The file is ptxld's temporary, whose name
/// has neither `;` nor `, line `.
fn located(rest: &str) -> Option<(u64, &str)> {
    let (head, tail) = rest.split_once("; ")?;
    let (_, n) = head.rsplit_once(", line ")?;
    Some((n.parse().ok()?, tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_warnings_fatal_lines_and_others() {
        let out = "ptxas /tmp/ptxld-verify-x/0-sm_80.ptx, line 26; error   : Arguments mismatch \
                   for instruction 'add'\n\
                   ptxas w.ptx, line 10; warning : Instruction 'vote' without '.sync': \
                   deprecated\r\n\
                   \n\
                   ptxas info    : 0 bytes gmem\n\
                   ptxas fatal   : Unresolved extern function 'f'; see above\n\
                   Segmentation fault\n\
                   ptxas what    : odd\n\
                   ptxas fatal   : Ptx assembly aborted due to errors";
        let m = |severity, line, text| Message {
            severity,
            line,
            text,
        };
        assert_eq!(
            parse(out),
            [
                m(
                    Severity::Error,
                    Some(26),
                    "Arguments mismatch for instruction 'add'"
                ),
                m(
                    Severity::Warning,
                    Some(10),
                    "Instruction 'vote' without '.sync': deprecated"
                ),
                m(Severity::Note, None, "0 bytes gmem"),
                m(
                    Severity::Error,
                    None,
                    "Unresolved extern function 'f'; see above"
                ),
                m(Severity::Note, None, "Segmentation fault"),
                m(Severity::Note, None, "ptxas what    : odd"),
                m(Severity::Error, None, ABORTED),
            ]
        );
    }
}
