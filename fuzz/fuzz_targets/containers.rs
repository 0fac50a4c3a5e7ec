//! Container and archive readers on arbitrary bytes: never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ptxld::container::fatbin::read(data);
    let _ = ptxld::container::elf::fatbin_section(data);
    let _ = ptxld::container::input::extract(data, Some((80, None)));
    if ptxld::archive::is_archive(data) {
        let _ = ptxld::archive::members(data);
    }
});
