//! ELF host objects carrying a fatbin (x86-64 Linux), written with `object::write`
//! (finding the fatbin in an object nvcc or ptxld wrote is
//! [`crate::input::container`]'s).
//!
//! Shape (docs/containers.md §10, the one nvcc and LLVM's offload wrapper use):
//! `.nv_fatbin` (PROGBITS, A, align 8) holds the container; `.nvFatBinSegment`
//! (PROGBITS, WA, align 8) holds the 24-byte `__fatBinC_Wrapper_t` {magic
//! 0x466243B1, version 1, pointer to the container, 0} with an `R_X86_64_64`
//! relocation at offset 8; `.note.GNU-stack` marks the stack non-executable.

use object::write::{Object, Relocation, Symbol, SymbolSection};
use object::{
    elf, Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags,
    RelocationKind, SectionFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

/// Magic of the wrapper struct (`__fatBinC_Wrapper_t`).
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;

/// Names of the two global symbols an object gets for base name `base`.
pub fn symbol_names(base: &str) -> (String, String) {
    (
        format!("{base}_fatbin_data"),
        format!("{base}_fatbin_wrapper"),
    )
}

/// Writes an x86-64 ELF relocatable object holding `fatbin` and its wrapper, with
/// global symbols `<base>_fatbin_data` (the container) and `<base>_fatbin_wrapper`.
pub fn write_host_object(fatbin: &[u8], base: &str) -> Result<Vec<u8>, object::write::Error> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let data = obj.add_section(
        Vec::new(),
        b".nv_fatbin".to_vec(),
        SectionKind::ReadOnlyData,
    );
    let data_off = obj.append_section_data(data, fatbin, 8);
    let seg = obj.add_section(Vec::new(), b".nvFatBinSegment".to_vec(), SectionKind::Data);
    let mut wrapper = Vec::with_capacity(24);
    wrapper.extend_from_slice(&WRAPPER_MAGIC.to_le_bytes());
    wrapper.extend_from_slice(&1u32.to_le_bytes());
    wrapper.extend_from_slice(&[0u8; 16]);
    let seg_off = obj.append_section_data(seg, &wrapper, 8);
    let note = obj.add_section(
        Vec::new(),
        b".note.GNU-stack".to_vec(),
        SectionKind::Elf(elf::SHT_PROGBITS),
    );
    obj.section_mut(note).flags = SectionFlags::Elf { sh_flags: 0 };

    let (data_name, wrapper_name) = symbol_names(base);
    obj.add_symbol(Symbol {
        name: data_name.into_bytes(),
        value: data_off,
        size: fatbin.len() as u64,
        kind: SymbolKind::Data,
        scope: SymbolScope::Dynamic,
        weak: false,
        section: SymbolSection::Section(data),
        flags: SymbolFlags::None,
    });
    obj.add_symbol(Symbol {
        name: wrapper_name.into_bytes(),
        value: seg_off,
        size: 24,
        kind: SymbolKind::Data,
        scope: SymbolScope::Dynamic,
        weak: false,
        section: SymbolSection::Section(seg),
        flags: SymbolFlags::None,
    });
    let target = obj.section_symbol(data);
    obj.add_relocation(
        seg,
        Relocation {
            offset: seg_off + 8,
            symbol: target,
            addend: data_off as i64,
            flags: RelocationFlags::Generic {
                kind: RelocationKind::Absolute,
                encoding: RelocationEncoding::Generic,
                size: 64,
            },
        },
    )?;
    obj.write()
}
