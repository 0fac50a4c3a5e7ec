//! Static archives (`ar`, GNU and BSD formats) of PTX modules or containers, read with
//! `object::read::archive`. GCC's nvptx tools put several PTX modules into one member,
//! separated by NUL bytes (nvptx-none-ld concatenates that way); each becomes its own
//! module, named `lib.a(member)` or `lib.a(member#2)`.
//!
//! A thin archive (`ar rcsT`, magic `!<thin>\n`) holds no member's bytes, only each
//! member's path, relative to the archive's directory unless absolute (GNU ar
//! writes the path as given to it, relative to where the archive is). The driver
//! reads each member from that path ([`thin_members`]). A member that GNU ar took
//! from a normal archive is recorded as that archive's path and the offset of the
//! member's header in it (`/N:OFFSET`), which `object` does not parse, so thin
//! archives are read here. (GNU ar flattens a thin archive added to a thin archive
//! into its members, so no thin archive names another one.)

use std::path::PathBuf;

use object::read::archive::{ArchiveFile, ArchiveOffset};

use super::container::is_container;

/// The magic of a thin archive.
const THIN_MAGIC: &[u8] = b"!<thin>\n";

/// True if `data` is an `ar` archive.
pub fn is_archive(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\n") || is_thin(data)
}

/// True if `data` is a thin archive (its members are files of their own).
pub fn is_thin(data: &[u8]) -> bool {
    data.starts_with(THIN_MAGIC)
}

/// One module (or container) inside an archive.
pub struct Member {
    /// `member` or `member#2` for the second module of a NUL-separated member.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The members of archive `data`, in archive order. A thin archive is an error:
/// its members are files, which only the archive's path can locate.
pub fn members(data: &[u8]) -> Result<Vec<Member>, String> {
    if is_thin(data) {
        return Err(
            "a thin archive holds only the paths of its members, which an archive \
                    given as bytes cannot locate; pass the archive's path"
                .to_string(),
        );
    }
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not a readable archive: {e}"))?;
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| format!("corrupt archive member: {e}"))?;
        let name = String::from_utf8_lossy(m.name()).into_owned();
        let bytes = m
            .data(data)
            .map_err(|e| format!("member {name} cannot be read: {e}"))?;
        split_member(name, bytes, &mut out);
    }
    Ok(out)
}

/// Appends the modules of member `name` whose bytes are `bytes` to `out`: a
/// container whole, PTX text split at NUL bytes (blank parts dropped).
pub fn split_member(name: String, bytes: &[u8], out: &mut Vec<Member>) {
    if is_container(bytes) {
        out.push(Member {
            name,
            bytes: bytes.to_vec(),
        });
        return;
    }
    let modules: Vec<&[u8]> = bytes
        .split(|&b| b == 0)
        .filter(|t| t.iter().any(|b| !b.is_ascii_whitespace()))
        .collect();
    let several = modules.len() > 1;
    for (k, text) in modules.into_iter().enumerate() {
        out.push(Member {
            name: if several {
                format!("{name}#{}", k + 1)
            } else {
                name.clone()
            },
            bytes: text.to_vec(),
        });
    }
}

/// A member of a thin archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThinMember {
    /// The path the archive records: of the member's file or, with `nested`, of
    /// the normal archive that holds the member; relative to the thin archive's
    /// directory unless absolute.
    pub path: PathBuf,
    /// For a member of a normal archive: the offset of its header there.
    pub nested: Option<u64>,
}

/// The members of thin archive `data`, in archive order.
pub fn thin_members(data: &[u8]) -> Result<Vec<ThinMember>, String> {
    const HEADER: usize = 60;
    let mut at = THIN_MAGIC.len();
    let mut names: &[u8] = &[];
    let mut out = Vec::new();
    while at < data.len() {
        let header = data
            .get(at..at + HEADER)
            .ok_or_else(|| format!("member header at offset {at} is cut short"))?;
        if &header[58..] != b"`\n" {
            return Err(format!("member header at offset {at} is corrupt"));
        }
        let size = decimal(&header[48..58])
            .ok_or_else(|| format!("member header at offset {at} has no valid size"))?;
        at += HEADER;
        let field = &header[..16];
        let special =
            field.starts_with(b"/ ") || field.starts_with(b"//") || field.starts_with(b"/SYM64/");
        if special {
            // The symbol index and the name table are the only contents of a thin
            // archive, padded to an even length.
            let end = usize::try_from(size)
                .ok()
                .and_then(|s| at.checked_add(s))
                .filter(|&end| end <= data.len())
                .ok_or_else(|| format!("member at offset {} runs past the end", at - HEADER))?;
            if field.starts_with(b"//") {
                names = &data[at..end];
            }
            at = end + (end & 1);
            continue;
        }
        let (name, nested) = if field[0] == b'/' && field[1].is_ascii_digit() {
            let (offset, nested) = extended_ref(&field[1..])
                .ok_or_else(|| format!("member header at offset {} has a bad name", at - HEADER))?;
            let name = usize::try_from(offset)
                .ok()
                .and_then(|o| names.get(o..))
                .and_then(|rest| {
                    let end = rest.windows(2).position(|w| w == b"/\n")?;
                    Some(&rest[..end])
                })
                .ok_or_else(|| {
                    format!(
                        "member header at offset {} names no entry of the name table",
                        at - HEADER
                    )
                })?;
            (name, nested)
        } else {
            // A short name, ended by `/`.
            let end = field
                .iter()
                .position(|&b| b == b'/' || b == b' ')
                .unwrap_or(16);
            (&field[..end], None)
        };
        if name.is_empty() {
            return Err(format!("member at offset {} has no name", at - HEADER));
        }
        out.push(ThinMember {
            path: crate::path_bytes::from_bytes(name).into(),
            nested,
        });
    }
    Ok(out)
}

/// The digits of an extended name reference (`N` or `N:OFFSET`, then spaces): the
/// name's offset in the name table and the nested member's header offset.
fn extended_ref(field: &[u8]) -> Option<(u64, Option<u64>)> {
    let field = field.split(|&b| b == b' ').next()?;
    match field.iter().position(|&b| b == b':') {
        None => Some((decimal(field)?, None)),
        Some(colon) => Some((
            decimal(&field[..colon])?,
            Some(decimal(&field[colon + 1..])?),
        )),
    }
}

/// A decimal number padded with spaces on the right; `None` if there is none or
/// it overflows.
fn decimal(field: &[u8]) -> Option<u64> {
    let digits = field.split(|&b| b == b' ').next()?;
    if digits.is_empty() || field[digits.len()..].iter().any(|&b| b != b' ') {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// The member whose header is at `offset` of normal archive `data` (named by a thin
/// archive's `/N:OFFSET` entry): its name and bytes.
pub fn member_at(data: &[u8], offset: u64) -> Result<(String, &[u8]), String> {
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not a readable archive: {e}"))?;
    let m = archive
        .member(ArchiveOffset(offset))
        .map_err(|e| format!("no member at offset {offset}: {e}"))?;
    let name = String::from_utf8_lossy(m.name()).into_owned();
    let bytes = m
        .data(data)
        .map_err(|e| format!("member {name} cannot be read: {e}"))?;
    Ok((name, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thin archive as GNU ar writes it: the symbol index, the name table, a
    /// member named there, one named in its header, one of a normal archive.
    #[test]
    fn thin_archives_name_their_members() {
        let header = |name: &str, size: usize| {
            format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644)
        };
        let names = "sub/long-name.ptx/\nlibnormal.a/\n";
        let mut data = String::from("!<thin>\n");
        data += &header("/", 4);
        data += "\0\0\0\0";
        data += &header("//", names.len());
        data += names;
        data += &header("/0", 120);
        data += &header("k.ptx/", 90);
        data += &header("/19:80", 300);
        assert!(is_archive(data.as_bytes()) && is_thin(data.as_bytes()));
        let got = thin_members(data.as_bytes()).unwrap();
        let want = [
            ("sub/long-name.ptx", None),
            ("k.ptx", None),
            ("libnormal.a", Some(80)),
        ];
        assert_eq!(got.len(), want.len());
        for (m, (path, nested)) in got.iter().zip(want) {
            assert_eq!((m.path.to_str().unwrap(), m.nested), (path, nested));
        }
        assert!(members(data.as_bytes()).is_err());
        // Cut anywhere: an error or fewer members, never a panic.
        for cut in 0..data.len() {
            let _ = thin_members(&data.as_bytes()[..cut]);
        }
        assert!(thin_members(format!("!<thin>\n{}", header("/99", 1)).as_bytes()).is_err());
    }
}
