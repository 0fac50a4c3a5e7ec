//! Writing the fatbin container: PTX entries and cubin (ELF, SASS) entries,
//! uncompressed. The format (and the reader the tests check against) is
//! [`crate::input::fatbin`]'s.

use crate::input::fatbin::{flags, CONTAINER_HEADER, ENTRY_HEADER, KIND_ELF, KIND_PTX, MAGIC};

/// What an entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// PTX text (no NUL inside) of this `.version`.
    Ptx {
        /// Its `.version`.
        version: (u32, u32),
    },
    /// A cubin: ptxas's ELF for the entry's architecture.
    Elf,
}

/// One entry to write.
pub struct FatbinEntry<'a> {
    /// The PTX text or the cubin.
    pub bytes: &'a [u8],
    /// Which of the two, with the PTX's version.
    pub payload: Payload,
    /// SM number of its `.target` (the cubin's architecture).
    pub sm: u32,
    /// `a` / `f` suffix of its `.target`.
    pub suffix: Option<u8>,
    /// Its `.address_size`.
    pub address_bits: u32,
    /// `.target ..., debug`.
    pub debug: bool,
    /// Name cuobjdump uses for the entry (`app.ptx` lists as `app.sm_80.ptx`).
    pub identifier: &'a str,
}

fn pad8(v: &mut Vec<u8>) {
    while v.len() % 8 != 0 {
        v.push(0);
    }
}

/// The flags of an entry ptxld writes: Linux host, 64-bit unless the module is
/// 32-bit, debug, and the target's suffix.
pub fn entry_flags(e: &FatbinEntry) -> u64 {
    let mut f = flags::HOST_LINUX;
    if e.address_bits == 64 {
        f |= flags::ADDR64;
    }
    if e.debug {
        f |= flags::DEBUG;
    }
    match e.suffix {
        Some(b'a') => f |= flags::ARCH_SPECIFIC,
        Some(b'f') => f |= flags::ARCH_FAMILY,
        _ => {}
    }
    f
}

/// The ELF ABI version byte of a cubin (`e_ident[EI_ABIVERSION]`), which a cubin
/// entry's header carries where a PTX entry has its minor version.
fn elf_abi_version(cubin: &[u8]) -> u16 {
    cubin.get(8).copied().unwrap_or(0) as u16
}

/// Writes one container holding `entries`, uncompressed, in their order.
pub fn write(entries: &[FatbinEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let mut tail = Vec::new();
        if !e.identifier.is_empty() {
            tail.extend_from_slice(e.identifier.as_bytes());
            tail.push(0);
            pad8(&mut tail);
        }
        let ident_len = tail.len();
        let mut payload = e.bytes.to_vec();
        let (kind, desc_off, minor, major) = match e.payload {
            Payload::Ptx { version } => {
                debug_assert!(!e.bytes.contains(&0), "PTX text must not contain NUL");
                // Options descriptor, pointing just past itself, then an empty
                // options string.
                let desc_off = (ENTRY_HEADER + ident_len) as u32;
                tail.extend_from_slice(&(desc_off + 8).to_le_bytes());
                tail.extend_from_slice(&0u32.to_le_bytes());
                tail.extend_from_slice(&[0u8; 8]);
                payload.push(0);
                (KIND_PTX, desc_off, version.1 as u16, version.0 as u16)
            }
            // No options: a cubin is assembled already.
            Payload::Elf => (KIND_ELF, 0, elf_abi_version(e.bytes), 1),
        };
        pad8(&mut payload);
        let header_size = (ENTRY_HEADER + tail.len()) as u32;
        let mut h = Vec::with_capacity(ENTRY_HEADER);
        h.extend_from_slice(&kind.to_le_bytes());
        h.extend_from_slice(&0x0101u16.to_le_bytes());
        h.extend_from_slice(&header_size.to_le_bytes());
        h.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // compressed size
        h.extend_from_slice(&desc_off.to_le_bytes());
        h.extend_from_slice(&minor.to_le_bytes());
        h.extend_from_slice(&major.to_le_bytes());
        h.extend_from_slice(&e.sm.to_le_bytes());
        let (ident_off, ident_n) = if e.identifier.is_empty() {
            (0u32, 0u32)
        } else {
            (ENTRY_HEADER as u32, e.identifier.len() as u32)
        };
        h.extend_from_slice(&ident_off.to_le_bytes());
        h.extend_from_slice(&ident_n.to_le_bytes());
        h.extend_from_slice(&entry_flags(e).to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes()); // reserved
        h.extend_from_slice(&0u64.to_le_bytes()); // uncompressed size
        debug_assert_eq!(h.len(), ENTRY_HEADER);
        body.extend_from_slice(&h);
        body.extend_from_slice(&tail);
        body.extend_from_slice(&payload);
    }
    let mut out = Vec::with_capacity(CONTAINER_HEADER + body.len());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&(CONTAINER_HEADER as u16).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fatbin::read;

    fn entry(text: &[u8], ident: &str) -> Vec<u8> {
        write(&[FatbinEntry {
            bytes: text,
            payload: Payload::Ptx { version: (6, 4) },
            sm: 75,
            suffix: None,
            address_bits: 64,
            debug: false,
            identifier: ident,
        }])
    }

    /// The annotated example of docs/containers.md §8, byte for byte.
    #[test]
    fn matches_the_documented_example() {
        let text = vec![b'x'; 73];
        let out = entry(&text, "len1.ptx");
        assert_eq!(out.len(), 0x10 + 0xb0);
        assert_eq!(&out[..0x10], &hex("50ed55ba01001000b000000000000000"));
        assert_eq!(&out[0x10..0x20], &hex("0100010160000000 5000000000000000"));
        assert_eq!(&out[0x20..0x30], &hex("0000000050000000040006004b000000"));
        assert_eq!(&out[0x30..0x40], &hex("40000000080000001100000000000000"));
        assert_eq!(&out[0x50..0x60], b"len1.ptx\0\0\0\0\0\0\0\0");
        assert_eq!(&out[0x60..0x70], &hex("58000000000000000000000000000000"));
        assert_eq!(&out[0x70..0x70 + 73], &text[..]);
        assert!(out[0x70 + 73..].iter().all(|&b| b == 0));
    }

    fn hex(s: impl AsRef<str>) -> Vec<u8> {
        let s: String = s.as_ref().chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn round_trip_and_padding() {
        for n in [0usize, 1, 7, 8, 9, 80] {
            let text = vec![b'a'; n];
            let out = entry(&text, if n % 2 == 0 { "" } else { "k.ptx" });
            assert_eq!(out.len() % 8, 0);
            let es = read(&out).unwrap();
            assert_eq!(es.len(), 1);
            assert_eq!(es[0].payload, text);
            assert_eq!(es[0].sm, 75);
            assert_eq!(es[0].flags, 0x11);
        }
    }

    /// Found by fuzzing: a huge `uncompressed_size` must not become an allocation.
    #[test]
    fn absurd_uncompressed_sizes_are_refused() {
        let mut c = entry(b".version 7.0", "");
        // LZ4 flag with a claimed size of 2^48 bytes.
        c[16 + 0x28..16 + 0x30].copy_from_slice(&(0x11u64 | flags::COMPRESS_LZ4).to_le_bytes());
        c[16 + 0x38..16 + 0x40].copy_from_slice(&(1u64 << 48).to_le_bytes());
        assert!(read(&c).unwrap_err().message.contains("impossible"));
        c[16 + 0x28..16 + 0x30].copy_from_slice(&(0x11u64 | flags::COMPRESS_ZSTD).to_le_bytes());
        assert!(read(&c).is_err());
    }

    /// A cubin entry: no options descriptor, the ELF ABI version where a PTX entry has
    /// its minor version, the bytes padded without a NUL (the layout NVIDIA's
    /// `fatbinary` writes, docs/containers.md).
    #[test]
    fn elf_entries() {
        let mut cubin = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41, 8];
        cubin.resize(21, 0xab);
        let out = write(&[FatbinEntry {
            bytes: &cubin,
            payload: Payload::Elf,
            sm: 90,
            suffix: Some(b'a'),
            address_bits: 64,
            debug: false,
            identifier: "k.cubin",
        }]);
        let e = &out[CONTAINER_HEADER..];
        assert_eq!(u16::from_le_bytes([e[0], e[1]]), KIND_ELF);
        assert_eq!(u32::from_le_bytes(e[4..8].try_into().unwrap()), 0x48);
        assert_eq!(u64::from_le_bytes(e[8..16].try_into().unwrap()), 24);
        assert_eq!(u32::from_le_bytes(e[0x14..0x18].try_into().unwrap()), 0);
        assert_eq!(&e[0x18..0x1c], &[8, 0, 1, 0]);
        let es = read(&out).unwrap();
        assert_eq!(es.len(), 1);
        assert_eq!(es[0].kind, KIND_ELF);
        assert_eq!(&es[0].payload[..cubin.len()], &cubin[..]);
        assert_eq!((es[0].sm, es[0].suffix), (90, Some(b'a')));
        assert_eq!(es[0].flags, 0x11 | flags::ARCH_SPECIFIC);
    }

    #[test]
    fn corruption_is_located() {
        let good = entry(b".version 7.0", "x.ptx");
        let mut bad = good.clone();
        bad[0] = 0;
        assert_eq!(read(&bad).unwrap_err().offset, 0);
        assert!(read(&good[..good.len() - 8]).is_err());
        let mut huge = good.clone();
        huge[8] = 0xff;
        assert_eq!(read(&huge).unwrap_err().offset, 8);
        let mut nonul = good.clone();
        let n = nonul.len();
        for b in &mut nonul[n - 8..] {
            *b = b'x';
        }
        assert!(read(&nonul).unwrap_err().message.contains("NUL"));
    }
}
