//! Links PTX from three producers plus libdevice at build time, three ways: a PTX
//! module to embed as text, a fatbin with two targets, and an object that cargo links
//! into the crate.
use ptxld::OutputKind;

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let inputs = [
        format!("{root}/fixtures/ptx/llvm/cu_lib.ptx"),
        format!("{root}/fixtures/ptx/nvvm/nv_common.ptx"),
        format!("{root}/fixtures/link/real-libdevice-three-producers/g_nvlib.ptx"),
    ];
    let libdevice = format!("{root}/fixtures/ptx/libdevice/libdevice.sm70.ptx");
    if std::env::var_os("CARGO_FEATURE_BROKEN_LINK").is_some() {
        // What a failed link looks like: the build stops at this line, with every
        // input's errors (one input is missing, two have syntax errors).
        ptxld::Build::new()
            .files(&inputs)
            .file(format!("{root}/fixtures/ptx/missing.ptx"))
            .file(format!("{root}/fixtures/broken/address-brackets.ptx"))
            .file(format!("{root}/fixtures/broken/call-shape.ptx"))
            .compile("broken");
        return;
    }
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    // One PTX module; libdevice is linked whole and dead-code removal keeps only what
    // the kernels reach. `flag` passes an option the builder has no method for: the
    // link map.
    ptxld::Build::new()
        .files(&inputs)
        .file(&libdevice)
        .gc(true)
        .flag(&format!("-Map={out_dir}/kernels.map"))
        .compile("kernels");
    // A fatbin with one entry per target.
    ptxld::Build::new()
        .files(&inputs)
        .file(&libdevice)
        .arch("sm_80")
        .arch("sm_90")
        .emit(OutputKind::Fatbin)
        .compile("kernels_multi");
    // An ELF object carrying the sm_80 fatbin, archived as libkernels_obj.a, which
    // cargo links into this crate: src/main.rs reaches it through the symbol
    // `kernels_obj_fatbin_wrapper`. The same link as a fatbin, for the test to
    // compare with.
    for emit in [OutputKind::Obj, OutputKind::Fatbin] {
        ptxld::Build::new()
            .files(&inputs)
            .file(&libdevice)
            .arch("sm_80")
            .gc(true)
            .emit(emit)
            .compile("kernels_obj");
    }
}
