//! The output pipeline: the merged module as a rope written to the output file,
//! containers around it, atomic output files, and modules written back by splicing.

mod assemble;
pub mod elf;
pub mod emit;
pub mod fatbin;
pub mod output;
pub mod rope;
mod temporary;

/// What `-o` receives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The merged PTX text.
    Ptx,
    /// A fatbin container with one PTX entry per target.
    Fatbin,
    /// An x86-64 ELF host object carrying the fatbin.
    Obj,
}

impl Emit {
    /// Parses `ptx`, `fatbin`, `obj`.
    pub fn parse(s: &str) -> Option<Emit> {
        Some(match s {
            "ptx" => Emit::Ptx,
            "fatbin" => Emit::Fatbin,
            "obj" | "o" => Emit::Obj,
            _ => return None,
        })
    }

    /// The default for an output path: `.fatbin` → fatbin, `.o` → obj, else PTX.
    pub fn from_path(path: &std::path::Path) -> Emit {
        match path.extension().and_then(|e| e.to_str()) {
            Some("fatbin") => Emit::Fatbin,
            Some("o") => Emit::Obj,
            _ => Emit::Ptx,
        }
    }
}
