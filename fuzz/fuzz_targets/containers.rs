//! Container and archive readers on arbitrary bytes: never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ptxld::internal::input::fatbin::read(data);
    let _ = ptxld::internal::input::container::fatbin_section(data);
    let _ = ptxld::internal::input::container::extract(data, Some(ptxld::Arch::new(80)));
    if ptxld::internal::input::archive::is_archive(data) {
        let _ = ptxld::internal::input::archive::members(data);
    }
});
