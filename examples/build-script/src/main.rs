//! Prints what build.rs linked and embedded.

/// The merged module, as text.
const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// The fatbin with sm_80 and sm_90 entries.
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels_multi.fatbin"));

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
    let magic = u32::from_le_bytes(FATBIN[..4].try_into().unwrap());
    println!("kernels_multi.fatbin: {} bytes, magic {magic:#x}", FATBIN.len());
}
