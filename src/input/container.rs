//! Containers as link inputs: a `.fatbin` file or an ELF object carrying one is
//! replaced by the PTX of its best entry for the link target.

use super::fatbin;

/// The target a container's entry is chosen for.
pub use crate::options::Arch as Target;

/// The PTX chosen from a container.
#[derive(Debug)]
pub struct Extracted {
    /// The PTX text.
    pub text: Vec<u8>,
    /// How to name it in messages: `sm_80` or the entry's identifier and arch.
    pub label: String,
    /// The entry's flags (host OS, 64-bit).
    pub flags: u64,
}

/// Returns `Some(result)` if `data` is a container (fatbin or ELF), `None` for text.
/// With a target, the entry for exactly that target is taken, else the highest
/// plain `sm_NN` entry not above it (an `sm_NNa`/`f` entry only for its own target);
/// without one, the highest entry.
pub fn extract(data: &[u8], target: Option<Target>) -> Option<Result<Extracted, String>> {
    let entries = if fatbin::is_fatbin(data) {
        fatbin::read(data).map_err(|e| format!("corrupt fatbin {e}"))
    } else if is_elf(data) {
        fatbin_section(data).and_then(|(off, bytes)| {
            fatbin::read(bytes).map_err(|e| {
                format!(
                    "corrupt fatbin in the object's device-code section at file byte 0x{:x}: {}",
                    off + e.offset,
                    e.message
                )
            })
        })
    } else {
        return None;
    };
    Some(entries.and_then(|entries| choose(&entries, target)))
}

/// True if `data` looks like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// True if `head` (the first bytes of an input) starts a container: a fatbin or an
/// ELF object carrying one.
pub fn is_container(head: &[u8]) -> bool {
    fatbin::is_fatbin(head) || is_elf(head)
}

/// The bytes of the fatbin section (`.nv_fatbin`, else nvcc `-rdc`'s
/// `__nv_relfatbin`) of an ELF object, with the section's file offset.
pub fn fatbin_section(data: &[u8]) -> Result<(usize, &[u8]), String> {
    use object::{Object as _, ObjectSection as _};
    let file = object::File::parse(data).map_err(|e| format!("not a readable ELF object: {e}"))?;
    for name in [".nv_fatbin", "__nv_relfatbin"] {
        if let Some(section) = file.section_by_name(name) {
            let bytes = section
                .data()
                .map_err(|e| format!("section {name} cannot be read: {e}"))?;
            let offset = section.file_range().map_or(0, |(o, _)| o as usize);
            return Ok((offset, bytes));
        }
    }
    Err("no .nv_fatbin or __nv_relfatbin section: the object carries no device code".into())
}

fn choose(entries: &[fatbin::Entry], target: Option<Target>) -> Result<Extracted, String> {
    // A container whose entries size is 0 is well-formed, and holds nothing to link
    // (found by the `containers` fuzz target).
    let Some(first) = entries.first() else {
        return Err("the fatbin holds no entries: no PTX or cubin to link".to_string());
    };
    // Host platform: every entry must be for the same host, and for Linux, which is
    // what ptxld writes (docs/containers.md §5).
    let host = |e: &fatbin::Entry| e.flags & (fatbin::flags::HOST_MASK | fatbin::flags::ADDR64);
    if let Some(e) = entries.iter().find(|e| host(e) != host(first)) {
        return Err(format!(
            "entries for different host platforms: {} (flags 0x{:x}) and {} (flags 0x{:x})",
            first.arch_name(),
            first.flags,
            e.arch_name(),
            e.flags
        ));
    }
    let os = first.flags & fatbin::flags::HOST_MASK;
    if os != fatbin::flags::HOST_LINUX {
        let name = match os {
            fatbin::flags::HOST_WINDOWS => "Windows",
            fatbin::flags::HOST_MAC => "macOS",
            _ => "an unknown host",
        };
        return Err(format!(
            "built for {name} (entry flags 0x{:x}); ptxld links device code for Linux hosts",
            first.flags
        ));
    }
    let ptx: Vec<&fatbin::Entry> = entries
        .iter()
        .filter(|e| e.kind == fatbin::KIND_PTX)
        .collect();
    if ptx.is_empty() {
        let archs: Vec<String> = entries.iter().map(fatbin::Entry::arch_name).collect();
        return Err(format!(
            "contains no PTX, only cubins ({}); ptxld links PTX",
            archs.join(", ")
        ));
    }
    fn rank(e: &&&fatbin::Entry) -> (u32, bool) {
        (e.sm, e.suffix.is_some())
    }
    let target = target.map(|a| (a.sm(), a.suffix()));
    let chosen = match target {
        None => ptx.iter().max_by_key(rank).copied(),
        Some((sm, suffix)) => ptx
            .iter()
            .find(|e| e.sm == sm && e.suffix == suffix)
            .or_else(|| {
                ptx.iter()
                    .filter(|e| e.sm <= sm && e.suffix.is_none())
                    .max_by_key(rank)
            })
            .copied(),
    };
    let Some(e) = chosen else {
        let archs: Vec<String> = ptx.iter().map(|e| e.arch_name()).collect();
        let (sm, suffix) = target.expect("no choice only with a target");
        let mut want = format!("sm_{sm}");
        if let Some(c) = suffix {
            want.push(c as char);
        }
        return Err(format!(
            "has PTX only for {}, none usable for {want}",
            archs.join(", ")
        ));
    };
    let label = if e.identifier.is_empty() {
        e.arch_name()
    } else {
        format!("{} {}", e.identifier, e.arch_name())
    };
    Ok(Extracted {
        text: e.payload.clone(),
        label,
        flags: e.flags,
    })
}
