//! The fatbin container's format, and reading its entries (the writer is
//! `write::fatbin`'s). Byte layout: docs/containers.md, "Byte layout" (verified
//! against NVIDIA's `fatbinary` 13.5 and libnvfatbin 12.9), whose sections are the §N
//! cited here.

use std::fmt;

/// Container magic, little-endian `50 ED 55 BA`.
pub const MAGIC: u32 = 0xBA55_ED50;
/// Bytes of a container's header.
pub(crate) const CONTAINER_HEADER: usize = 16;
/// Bytes of an entry's header before its identifier and options.
pub(crate) const ENTRY_HEADER: usize = 64;

/// Entry kinds.
pub const KIND_PTX: u16 = 1;
/// A cubin (ELF) entry.
pub const KIND_ELF: u16 = 2;

/// Entry flag bits.
pub mod flags {
    /// 64-bit host (`.address_size 64`).
    pub const ADDR64: u64 = 0x1;
    /// Debug information.
    pub const DEBUG: u64 = 0x2;
    /// Host operating systems (exactly one is set).
    pub const HOST_LINUX: u64 = 0x10;
    /// macOS host.
    pub const HOST_MAC: u64 = 0x20;
    /// Windows host.
    pub const HOST_WINDOWS: u64 = 0x40;
    /// Legacy (zlib) compression.
    pub const COMPRESS_LEGACY: u64 = 0x1000;
    /// LZ4 block compression.
    pub const COMPRESS_LZ4: u64 = 0x2000;
    /// ZSTD frame compression.
    pub const COMPRESS_ZSTD: u64 = 0x8000;
    /// Arch-specific target `sm_NNa`.
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    /// Family target `sm_NNf`.
    pub const ARCH_FAMILY: u64 = 0x20_0000;
    /// Mask of the host OS bits.
    pub const HOST_MASK: u64 = HOST_LINUX | HOST_MAC | HOST_WINDOWS;
}

/// An entry read from a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the entry header in the data given to [`read`].
    pub offset: usize,
    /// [`KIND_PTX`], [`KIND_ELF`], or another kind (skipped by readers).
    pub kind: u16,
    /// SM number.
    pub sm: u32,
    /// `a` / `f` from the flags.
    pub suffix: Option<u8>,
    /// PTX `.version` (major, minor) from the header.
    pub version: (u16, u16),
    /// Flags.
    pub flags: u64,
    /// The identifier, if any.
    pub identifier: String,
    /// The decompressed payload; for PTX the text without its NUL and padding.
    pub payload: Vec<u8>,
}

impl Entry {
    /// `sm_80`, `sm_90a`.
    pub fn arch_name(&self) -> String {
        let mut s = format!("sm_{}", self.sm);
        if let Some(c) = self.suffix {
            s.push(c as char);
        }
        s
    }
}

/// Why a container could not be read: what, and at which byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset of the problem in the data given to [`read`].
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte 0x{:x}: {}", self.offset, self.message)
    }
}

fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, FormatError> {
    Err(FormatError {
        offset,
        message: message.into(),
    })
}

struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    fn bytes(&self, at: usize, n: usize, what: &str) -> Result<&[u8], FormatError> {
        match at.checked_add(n) {
            Some(end) if end <= self.data.len() => Ok(&self.data[at..end]),
            _ => err(
                at,
                format!(
                    "{what} ({n} bytes) runs past the end of the data ({} bytes): truncated",
                    self.data.len()
                ),
            ),
        }
    }
    fn u16(&self, at: usize, what: &str) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(
            self.bytes(at, 2, what)?.try_into().unwrap(),
        ))
    }
    fn u32(&self, at: usize, what: &str) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(
            self.bytes(at, 4, what)?.try_into().unwrap(),
        ))
    }
    fn u64(&self, at: usize, what: &str) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(
            self.bytes(at, 8, what)?.try_into().unwrap(),
        ))
    }
}

/// True if `data` starts with the fatbin magic.
pub fn is_fatbin(data: &[u8]) -> bool {
    data.len() >= 4 && u32::from_le_bytes(data[..4].try_into().unwrap()) == MAGIC
}

/// Reads every entry of the containers in `data` (containers may be concatenated,
/// with zero padding between them, as linkers lay out `.nv_fatbin` sections).
pub fn read(data: &[u8]) -> Result<Vec<Entry>, FormatError> {
    let r = Reader { data };
    let mut entries = Vec::new();
    let mut at = 0usize;
    let mut containers = 0;
    while at < data.len() {
        if containers > 0 && data[at..].iter().all(|&b| b == 0) {
            break; // section padding after the last container
        }
        if data[at..].len() >= 8 && data[at..at + 8] == [0; 8] && containers > 0 {
            at += 8;
            continue;
        }
        let magic = r.u32(at, "container header")?;
        if magic != MAGIC {
            return err(
                at,
                format!("bad container magic 0x{magic:08x} (expected 0x{MAGIC:08x})"),
            );
        }
        let header_size = r.u16(at + 6, "container header")? as usize;
        if header_size != CONTAINER_HEADER {
            return err(
                at + 6,
                format!("container header size {header_size}, expected 16"),
            );
        }
        let size = r.u64(at + 8, "container header")?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        let start = at + CONTAINER_HEADER;
        if start.checked_add(size).is_none_or(|e| e > data.len()) {
            return err(
                at + 8,
                format!(
                    "entries size {size} runs past the end of the data ({} bytes): truncated",
                    data.len()
                ),
            );
        }
        let end = start + size;
        let mut e = start;
        while e < end {
            let entry = read_entry(&r, e, end)?;
            let next = e + entry.1;
            entries.push(entry.0);
            e = next;
        }
        at = end;
        containers += 1;
    }
    if containers == 0 {
        return err(0, "no fatbin container");
    }
    Ok(entries)
}

fn read_entry(r: &Reader, e: usize, end: usize) -> Result<(Entry, usize), FormatError> {
    let what = "entry header";
    r.bytes(e, ENTRY_HEADER, what)?;
    if e + ENTRY_HEADER > end {
        return err(e, "entry header runs past the end of its container");
    }
    let kind = r.u16(e, what)?;
    let header_size = r.u32(e + 4, what)? as usize;
    let payload_size = usize::try_from(r.u64(e + 8, what)?).unwrap_or(usize::MAX);
    let compressed_size = r.u32(e + 0x10, what)? as usize;
    let minor = r.u16(e + 0x18, what)?;
    let major = r.u16(e + 0x1a, what)?;
    let sm = r.u32(e + 0x1c, what)?;
    let ident_off = r.u32(e + 0x20, what)? as usize;
    let ident_len = r.u32(e + 0x24, what)? as usize;
    let flags = r.u64(e + 0x28, what)?;
    let uncompressed_size = usize::try_from(r.u64(e + 0x38, what)?).unwrap_or(usize::MAX);
    if header_size < ENTRY_HEADER || header_size % 8 != 0 {
        return err(e + 4, format!("entry header size {header_size} is invalid"));
    }
    // NVIDIA's writers pad payloads to 8 bytes, but cuobjdump accepts an unpadded
    // one, and so does ptxld: only the bounds matter.
    let payload_at = e + header_size;
    if payload_at.checked_add(payload_size).is_none_or(|p| p > end) {
        return err(
            e + 8,
            format!("payload of {payload_size} bytes runs past the end of the container"),
        );
    }
    if sm == 0 {
        return err(e + 0x1c, "entry architecture is 0");
    }
    let identifier = if ident_off != 0 {
        if ident_off + ident_len > header_size {
            return err(e + 0x20, "identifier lies outside the entry header");
        }
        String::from_utf8_lossy(r.bytes(e + ident_off, ident_len, "identifier")?).into_owned()
    } else {
        String::new()
    };
    let raw = r.bytes(payload_at, payload_size, "payload")?;
    let compression = flags & (flags::COMPRESS_LZ4 | flags::COMPRESS_ZSTD | flags::COMPRESS_LEGACY);
    let mut payload = match compression {
        0 => raw.to_vec(),
        flags::COMPRESS_ZSTD => {
            let stream = raw.get(..compressed_size).unwrap_or(raw);
            decode_zstd(stream, uncompressed_size).map_err(|m| FormatError {
                offset: payload_at,
                message: m,
            })?
        }
        flags::COMPRESS_LZ4 => {
            let stream = raw.get(..compressed_size).unwrap_or(raw);
            // LZ4 expands at most 255-fold: a larger claim is corrupt, and must not
            // become an allocation of that size.
            if uncompressed_size > stream.len().saturating_mul(255).saturating_add(64) {
                return err(
                    e + 0x38,
                    format!(
                        "uncompressed size {uncompressed_size} is impossible for a {}-byte LZ4 \
                         payload",
                        stream.len()
                    ),
                );
            }
            lz4_flex::block::decompress(stream, uncompressed_size).map_err(|e| FormatError {
                offset: payload_at,
                message: format!("corrupt LZ4 payload: {e}"),
            })?
        }
        _ => {
            return err(
                e + 0x28,
                format!("unsupported compression (flags 0x{flags:x}); recompress without it"),
            )
        }
    };
    if kind == KIND_PTX {
        match payload.iter().position(|&b| b == 0) {
            Some(n) => payload.truncate(n),
            None if compression != 0 => {}
            None => return err(payload_at, "PTX payload has no terminating NUL"),
        }
    }
    let suffix = if flags & flags::ARCH_SPECIFIC != 0 {
        Some(b'a')
    } else if flags & flags::ARCH_FAMILY != 0 {
        Some(b'f')
    } else {
        None
    };
    Ok((
        Entry {
            offset: e,
            kind,
            sm,
            suffix,
            version: (major, minor),
            flags,
            identifier,
            payload,
        },
        header_size + payload_size,
    ))
}

fn decode_zstd(stream: &[u8], expected: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut dec =
        ruzstd::StreamingDecoder::new(stream).map_err(|e| format!("corrupt ZSTD payload: {e}"))?;
    // `expected` comes from the file: reserve at most 64 MiB up front.
    let mut out = Vec::with_capacity(expected.min(64 << 20));
    dec.read_to_end(&mut out)
        .map_err(|e| format!("corrupt ZSTD payload: {e}"))?;
    Ok(out)
}
