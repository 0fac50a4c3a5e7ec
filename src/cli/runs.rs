//! Inputs in a row, handed to the options table's parser as one word each.
//!
//! A build system's link line names thousands of inputs one after the other, and
//! clap stores each positional value on its own (a raw copy, a parsed copy, its
//! index): on a 2,310-input line that was most of a millisecond of a link's serial
//! start (docs/performance.md). Most of those words need no parser to be
//! understood: every option of the table takes at most one value, so a word that
//! does not begin with `-` and follows another such word (itself an input, or the
//! one value of the option before it) can only be an input. [`fold`] replaces each
//! run of such words by one marker word that clap takes as one input, in the run's
//! place; [`Runs::unfold`] gives the run back where the marker comes out. Every word
//! whose meaning depends on what comes before it (the first word after an option,
//! anything beginning with `-`, the `check` subcommand) still goes through clap.

use std::ffi::{OsStr, OsString};

/// A marker begins with a NUL byte, which no word of a real command line (a C
/// string) can hold, followed by the run's number.
const MARK: char = '\0';

/// The runs taken out of a command line by [`fold`], in order.
#[derive(Debug, Default)]
pub(super) struct Runs(Vec<Vec<OsString>>);

impl Runs {
    /// The words of the run `word` marks, or `None` for a word of the command line
    /// itself. Each run is given out once.
    pub(super) fn take(&mut self, word: &OsStr) -> Option<Vec<OsString>> {
        let k: usize = word.to_str()?.strip_prefix(MARK)?.parse().ok()?;
        self.0.get_mut(k).map(std::mem::take)
    }

    /// How many words the runs hold.
    pub(super) fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    /// `args` with each marker replaced by its run: the command line as given.
    pub(super) fn unfold(mut self, args: Vec<OsString>) -> Vec<OsString> {
        let mut out = Vec::with_capacity(args.len() + self.len());
        for a in args {
            match self.take(&a) {
                Some(run) => out.extend(run),
                None => out.push(a),
            }
        }
        out
    }
}

/// Whether `a` is a word that takes no value: not an option (nor `-`, standard
/// input, which may also be an option's value, as in `-o -`).
fn plain(a: &OsStr) -> bool {
    !a.as_encoded_bytes().starts_with(b"-")
}

/// `args` (normalized) with every run of two or more inputs after the first plain
/// word of a row replaced by a marker, and the runs. Nothing is folded in a command
/// line that names the `check` subcommand (a plain word that changes what follows)
/// or after `--` (whose words clap keeps as they are).
pub(super) fn fold(args: Vec<OsString>) -> (Vec<OsString>, Runs) {
    if args.iter().any(|a| a == "check") {
        return (args, Runs::default());
    }
    let mut out = Vec::with_capacity(args.len().min(64));
    let mut runs = Vec::new();
    let mut run: Vec<OsString> = Vec::new();
    let mut previous_plain = false;
    let mut args = args.into_iter();
    let end_run =
        |run: &mut Vec<OsString>, out: &mut Vec<OsString>, runs: &mut Vec<_>| match run.len() {
            0 => {}
            1 => out.append(run),
            _ => {
                out.push(OsString::from(format!("{MARK}{}", runs.len())));
                runs.push(std::mem::take(run));
            }
        };
    for a in args.by_ref() {
        if a == "--" {
            end_run(&mut run, &mut out, &mut runs);
            out.push(a);
            break;
        }
        let is_plain = plain(&a);
        if is_plain && previous_plain {
            run.push(a);
        } else {
            end_run(&mut run, &mut out, &mut runs);
            out.push(a);
        }
        previous_plain = is_plain;
    }
    end_run(&mut run, &mut out, &mut runs);
    out.extend(args);
    (out, Runs(runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn a_run_after_a_plain_word_becomes_one_marker() {
        let (out, runs) = fold(words("-o out.ptx a b c -l m d e --gc-sections f"));
        assert_eq!(
            out,
            vec![
                OsString::from("-o"),
                "out.ptx".into(),
                "\u{0}0".into(),
                "-l".into(),
                "m".into(),
                "\u{0}1".into(),
                "--gc-sections".into(),
                "f".into(),
            ]
        );
        assert_eq!(runs.0, vec![words("a b c"), words("d e")]);
        assert_eq!(
            runs.unfold(out),
            words("-o out.ptx a b c -l m d e --gc-sections f")
        );
    }

    #[test]
    fn a_single_input_after_a_plain_word_stays_a_word() {
        let (out, runs) = fold(words("a b -v c"));
        assert_eq!(out, words("a b -v c"));
        assert!(runs.0.is_empty());
    }

    #[test]
    fn check_dash_and_the_words_after_double_dash_are_left_alone() {
        let line = words("check a b c");
        assert_eq!(fold(line.clone()).0, line);
        let (out, _) = fold(words("a b c -- d e -f"));
        assert_eq!(out, words("a \u{0}0 -- d e -f"));
        let (out, _) = fold(words("-o - - x y"));
        assert_eq!(out, words("-o - - x y"));
    }

    #[test]
    fn a_marker_is_taken_once_and_other_words_are_not_markers() {
        let (out, mut runs) = fold(words("a b c"));
        assert_eq!(runs.take(&out[1]), Some(words("b c")));
        assert_eq!(runs.take(&out[1]), Some(Vec::new()));
        assert_eq!(runs.take(OsStr::new("b")), None);
        assert_eq!(runs.take(OsStr::new("\u{0}9")), None);
    }
}
