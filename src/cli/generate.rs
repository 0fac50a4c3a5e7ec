//! `--generate`: the man page and the shell completion scripts, made from the same
//! options table as the parser and `--help` ([`super::table::command`]).

use clap_complete::Shell;

/// The man page (`man`) or the completion script of a shell (`complete-SHELL`).
pub fn generate(what: &str) -> Vec<u8> {
    let mut cmd = super::table::command();
    let mut out = Vec::new();
    let shell = match what {
        "man" => {
            // Writing into a Vec cannot fail.
            let _ = clap_mangen::Man::new(cmd).render(&mut out);
            return out;
        }
        "complete-zsh" => Shell::Zsh,
        "complete-fish" => Shell::Fish,
        "complete-elvish" => Shell::Elvish,
        "complete-powershell" => Shell::PowerShell,
        // "complete-bash": the parser admits no other value.
        _ => Shell::Bash,
    };
    clap_complete::generate(shell, &mut cmd, "ptxld", &mut out);
    out
}
