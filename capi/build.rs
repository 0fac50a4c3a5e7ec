//! Writes the C header of the API, `ptxld.h`, into OUT_DIR with cbindgen; the test
//! `header_is_current` compares it with the checked-in `include/ptxld.h`.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let out = std::env::var("OUT_DIR").expect("cargo sets it");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml"))
        .expect("capi/cbindgen.toml is valid");
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen understands capi/src/lib.rs")
        .write_to_file(format!("{out}/ptxld.h"));
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
}
