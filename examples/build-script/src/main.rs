//! Prints what build.rs linked: the PTX embedded as text, the fatbin embedded as
//! bytes, and the fatbin of the object cargo linked into this program.

/// The merged module, as text.
const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// The fatbin with sm_80 and sm_90 entries.
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_multi.fatbin"));

/// The object's fatbin wrapper (`__fatBinC_Wrapper_t`): what
/// `__cudaRegisterFatBinary` takes.
#[repr(C)]
struct FatbinWrapper {
    magic: u32,
    version: u32,
    data: *const u8,
    unused: *const u8,
}

extern "C" {
    /// Defined in libkernels_obj.a, which build.rs linked and cargo links in.
    static kernels_obj_fatbin_wrapper: FatbinWrapper;
}

/// The fatbin the linked object carries, found through its wrapper; its length is
/// the fatbin header's (header size at byte 6, payload size at byte 8).
fn linked_fatbin() -> &'static [u8] {
    // SAFETY: the object defines the wrapper, and its pointer to a whole fatbin.
    unsafe {
        let wrapper = &*std::ptr::addr_of!(kernels_obj_fatbin_wrapper);
        assert_eq!(wrapper.magic, 0x466243b1, "fatbin wrapper magic");
        assert_eq!(wrapper.version, 1);
        let header = std::slice::from_raw_parts(wrapper.data, 16);
        let header_len = u16::from_le_bytes([header[6], header[7]]) as usize;
        let payload_len = u64::from_le_bytes(header[8..16].try_into().unwrap()) as usize;
        std::slice::from_raw_parts(wrapper.data, header_len + payload_len)
    }
}

fn magic(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[..4].try_into().unwrap())
}

fn main() {
    let target = KERNELS.lines().find(|l| l.starts_with(".target")).unwrap_or("?");
    let kernels: Vec<&str> = KERNELS
        .lines()
        .filter(|l| l.contains(".entry"))
        .collect();
    println!("kernels.ptx: {} bytes, {target}", KERNELS.len());
    for k in kernels {
        println!("  {}", k.trim());
    }
    println!("kernels_multi.fatbin: {} bytes, magic {:#x}", FATBIN.len(), magic(FATBIN));
    let linked = linked_fatbin();
    println!(
        "libkernels_obj.a, linked in: a fatbin of {} bytes, magic {:#x}",
        linked.len(),
        magic(linked)
    );
}

#[cfg(test)]
mod tests {
    /// The same link written as a fatbin by build.rs.
    static FATBIN_SM80: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_obj.fatbin"));

    #[test]
    fn the_object_linked_into_the_crate_carries_the_fatbin() {
        let linked = super::linked_fatbin();
        assert_eq!(super::magic(linked), 0xba55ed50);
        assert!(linked == FATBIN_SM80, "the object's fatbin is the link's");
        let text = String::from_utf8_lossy(linked);
        assert!(text.contains(".visible .entry nv_kernel("));
        assert!(text.contains(".target sm_80"));
    }
}
