//! The typed values a link is configured with: the target architecture, the PTX ISA
//! version and the kind of output. Each parses from and prints as the text users
//! write on the command line (`sm_90a`, `8.0`, `fatbin`).

use std::fmt;
use std::str::FromStr;

/// A GPU architecture of the PTX ISA: `sm_NN`, with an `a` (arch-specific) or `f`
/// (family-specific) suffix.
///
/// ```
/// let arch: ptxld::Arch = "sm_90a".parse().unwrap();
/// assert_eq!(arch.sm(), 90);
/// assert!(arch.is_arch_specific());
/// assert_eq!(arch.to_string(), "sm_90a");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    sm: u32,
    suffix: Option<u8>,
}

impl Arch {
    /// `sm_NN` without a suffix.
    pub fn new(sm: u32) -> Arch {
        Arch { sm, suffix: None }
    }

    /// From the number and the suffix byte (`b'a'`, `b'f'`) as the parser reads them.
    pub(crate) fn from_parts(sm: u32, suffix: Option<u8>) -> Arch {
        Arch { sm, suffix }
    }

    /// Parses `sm_NN`, `sm_NNa` or `sm_NNf` from source text.
    pub(crate) fn parse_bytes(text: &[u8]) -> Option<Arch> {
        let rest = text.strip_prefix(b"sm_")?;
        let (digits, suffix) = match rest.last()? {
            s @ (b'a' | b'f') => (&rest[..rest.len() - 1], Some(*s)),
            _ => (rest, None),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(Arch {
            sm: std::str::from_utf8(digits).ok()?.parse().ok()?,
            suffix,
        })
    }

    /// The number: 90 for `sm_90a`.
    pub fn sm(self) -> u32 {
        self.sm
    }

    /// The suffix byte, `b'a'` or `b'f'`, if any.
    pub(crate) fn suffix(self) -> Option<u8> {
        self.suffix
    }

    /// `sm_NNa`: code that runs only on this architecture.
    pub fn is_arch_specific(self) -> bool {
        self.suffix == Some(b'a')
    }

    /// `sm_NNf`: code that runs on this architecture's family.
    pub fn is_family_specific(self) -> bool {
        self.suffix == Some(b'f')
    }
}

/// Orders target suffixes by how much of one architecture they take: none < `f`
/// (family) < `a` (this exact architecture).
pub(crate) fn suffix_rank(suffix: Option<u8>) -> u8 {
    match suffix {
        None => 0,
        Some(b'f') => 1,
        Some(_) => 2,
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)?;
        match self.suffix {
            Some(s) => write!(f, "{}", s as char),
            None => Ok(()),
        }
    }
}

/// Why a text is not an [`Arch`], a [`PtxVersion`] or an [`OutputKind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    text: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not {}", self.text, self.what)
    }
}

impl std::error::Error for ParseError {}

impl FromStr for Arch {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Arch, ParseError> {
        Arch::parse_bytes(s.as_bytes()).ok_or_else(|| ParseError {
            what: "an architecture (sm_NN, sm_NNa or sm_NNf)",
            text: s.to_string(),
        })
    }
}

/// A PTX ISA version, `major.minor`.
///
/// ```
/// let v: ptxld::PtxVersion = "8.0".parse().unwrap();
/// assert!(v > ptxld::PtxVersion::new(7, 5));
/// assert_eq!(v.to_string(), "8.0");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PtxVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

impl PtxVersion {
    /// `major.minor`.
    pub fn new(major: u32, minor: u32) -> PtxVersion {
        PtxVersion { major, minor }
    }
}

impl fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for PtxVersion {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<PtxVersion, ParseError> {
        let parsed = s
            .split_once('.')
            .and_then(|(a, b)| Some(PtxVersion::new(a.parse().ok()?, b.parse().ok()?)));
        parsed.ok_or_else(|| ParseError {
            what: "a PTX ISA version (X.Y)",
            text: s.to_string(),
        })
    }
}

/// What a link writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// The merged PTX text.
    Ptx,
    /// A fatbin container with one PTX entry per target.
    Fatbin,
    /// An x86-64 ELF host object carrying the fatbin.
    Obj,
    /// A cubin: the output assembled by ptxas for one target.
    Cubin,
}

impl OutputKind {
    /// The default for an output path: `.fatbin` → fatbin, `.o` → obj, `.cubin` →
    /// cubin, else PTX.
    pub fn from_path(path: &std::path::Path) -> OutputKind {
        match path.extension().and_then(|e| e.to_str()) {
            Some("fatbin") => OutputKind::Fatbin,
            Some("o") => OutputKind::Obj,
            Some("cubin") => OutputKind::Cubin,
            _ => OutputKind::Ptx,
        }
    }

    /// The file extension of this kind: `ptx`, `fatbin`, `o`, `cubin`.
    pub fn extension(self) -> &'static str {
        match self {
            OutputKind::Ptx => "ptx",
            OutputKind::Fatbin => "fatbin",
            OutputKind::Obj => "o",
            OutputKind::Cubin => "cubin",
        }
    }
}

impl FromStr for OutputKind {
    type Err = ParseError;
    /// `ptx`, `fatbin`, `obj` (or `o`), `cubin`.
    fn from_str(s: &str) -> Result<OutputKind, ParseError> {
        Ok(match s {
            "ptx" => OutputKind::Ptx,
            "fatbin" => OutputKind::Fatbin,
            "obj" | "o" => OutputKind::Obj,
            "cubin" => OutputKind::Cubin,
            _ => {
                return Err(ParseError {
                    what: "an output kind (ptx, fatbin, obj or cubin)",
                    text: s.to_string(),
                })
            }
        })
    }
}

impl fmt::Display for OutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputKind::Ptx => "ptx",
            OutputKind::Fatbin => "fatbin",
            OutputKind::Obj => "obj",
            OutputKind::Cubin => "cubin",
        })
    }
}

/// One code of a fatbin (`--gpu-code`, nvcc's `-gencode code=`): machine code for a
/// real architecture (`sm_90`: ptxas's cubin of the link for `.target sm_90`), or PTX
/// for a virtual one (`compute_90`: the link's text for `.target sm_90`, which the
/// driver compiles for the GPU it runs on).
///
/// ```
/// let code: ptxld::GpuCode = "compute_90a".parse().unwrap();
/// assert_eq!(code.arch.to_string(), "sm_90a");
/// assert!(!code.sass);
/// assert_eq!(code.to_string(), "compute_90a");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuCode {
    /// The `.target` the link writes for it.
    pub arch: Arch,
    /// Machine code (`sm_NN`) rather than PTX (`compute_NN`).
    pub sass: bool,
}

impl FromStr for GpuCode {
    type Err = ParseError;
    /// `sm_NN` or `compute_NN`, each with an optional `a` or `f`.
    fn from_str(s: &str) -> Result<GpuCode, ParseError> {
        let (sass, arch) = match s.strip_prefix("compute_") {
            Some(rest) => (false, format!("sm_{rest}")),
            None => (true, s.to_string()),
        };
        match arch.parse::<Arch>() {
            Ok(arch) => Ok(GpuCode { arch, sass }),
            Err(_) => Err(ParseError {
                what: "a GPU code (sm_NN for machine code, compute_NN for PTX)",
                text: s.to_string(),
            }),
        }
    }
}

impl fmt::Display for GpuCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sass {
            write!(f, "{}", self.arch)
        } else {
            let arch = self.arch.to_string();
            write!(f, "compute_{}", &arch[3..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_round_trip_and_refuse_what_is_not_one() {
        for text in ["sm_20", "sm_80", "sm_90a", "sm_100f", "sm_120a"] {
            let arch: Arch = text.parse().unwrap();
            assert_eq!(arch.to_string(), text);
        }
        for bad in ["", "sm_", "sm_a", "compute_80", "sm_80x", "sm_8 0", "SM_80"] {
            assert!(bad.parse::<Arch>().is_err(), "{bad:?}");
        }
        assert!("sm_100f".parse::<Arch>().unwrap().is_family_specific());
    }

    #[test]
    fn versions_and_output_kinds_parse_as_written_on_the_command_line() {
        assert_eq!("8.6".parse(), Ok(PtxVersion::new(8, 6)));
        assert!("8".parse::<PtxVersion>().is_err());
        assert!("8.x".parse::<PtxVersion>().is_err());
        assert_eq!("obj".parse(), Ok(OutputKind::Obj));
        assert_eq!("o".parse(), Ok(OutputKind::Obj));
        assert_eq!("cubin".parse(), Ok(OutputKind::Cubin));
        assert!("elf".parse::<OutputKind>().is_err());
        assert_eq!(
            OutputKind::from_path(std::path::Path::new("k.cubin")),
            OutputKind::Cubin
        );
        for (text, arch, sass) in [
            ("sm_80", "sm_80", true),
            ("compute_90a", "sm_90a", false),
            ("compute_100f", "sm_100f", false),
        ] {
            let code: GpuCode = text.parse().unwrap();
            assert_eq!((code.arch.to_string().as_str(), code.sass), (arch, sass));
            assert_eq!(code.to_string(), text);
        }
        for bad in ["", "compute_", "compute_8x", "sm80", "gfx90a"] {
            assert!(bad.parse::<GpuCode>().is_err(), "{bad:?}");
        }
        assert_eq!(
            OutputKind::from_path(std::path::Path::new("a.fatbin")),
            OutputKind::Fatbin
        );
    }
}
