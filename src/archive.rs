//! Static archives (`ar`, GNU and BSD formats) of PTX modules or containers, read with
//! `object::read::archive`. GCC's nvptx tools put several PTX modules into one member,
//! separated by NUL bytes (nvptx-none-ld concatenates that way); each becomes its own
//! module, named `lib.a(member)` or `lib.a(member#2)`.

use object::read::archive::ArchiveFile;

use crate::container::{elf, fatbin};

/// True if `data` is an `ar` archive.
pub fn is_archive(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n")
}

/// One module (or container) inside an archive.
pub struct Member {
    /// `member` or `member#2` for the second module of a NUL-separated member.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The members of archive `data`, in archive order.
pub fn members(data: &[u8]) -> Result<Vec<Member>, String> {
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not a readable archive: {e}"))?;
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| format!("corrupt archive member: {e}"))?;
        let name = String::from_utf8_lossy(m.name()).into_owned();
        let bytes = m
            .data(data)
            .map_err(|e| format!("member {name} cannot be read: {e}"))?;
        if fatbin::is_fatbin(bytes) || elf::is_elf(bytes) {
            out.push(Member {
                name,
                bytes: bytes.to_vec(),
            });
            continue;
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
    Ok(out)
}
