//! Links PTX from three producers plus libdevice at build time.
use ptxld::OutputKind;

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let inputs = [
        format!("{root}/fixtures/ptx/llvm/cu_lib.ptx"),
        format!("{root}/fixtures/ptx/nvvm/nv_common.ptx"),
        format!("{root}/fixtures/link/real-libdevice-three-producers/g_nvlib.ptx"),
    ];
    // One PTX module; libdevice is linked whole and --gc-sections keeps only what the
    // kernels reach.
    ptxld::Build::new()
        .files(&inputs)
        .file(format!("{root}/fixtures/ptx/libdevice/libdevice.sm70.ptx"))
        .gc(true)
        .compile("kernels");
    // A fatbin with one entry per target.
    ptxld::Build::new()
        .files(&inputs)
        .file(format!("{root}/fixtures/ptx/libdevice/libdevice.sm70.ptx"))
        .arch("sm_80")
        .arch("sm_90")
        .emit(OutputKind::Fatbin)
        .compile("kernels_multi");
}
