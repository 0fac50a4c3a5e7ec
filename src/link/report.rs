//! How link diagnostics show symbol names, in lld's shape:
//!
//! ```text
//! error: duplicate symbol: tmax<int>(int, int) (_Z4tmaxIiET_S0_S0_)
//! >>> defined at a.ptx:12:44
//! >>> defined at b.ptx:40:44
//! ```

/// A symbol name shown as users wrote it, demangled only when it is displayed (a
/// link resolves many names and reports few).
#[derive(Copy, Clone)]
pub(crate) struct Shown<'a>(pub(crate) &'a [u8]);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&display_name(self.0))
    }
}

/// A symbol name as users wrote it: C++ names demangled, with the mangled name after.
pub(crate) fn display_name(name: &[u8]) -> String {
    let raw = String::from_utf8_lossy(name).into_owned();
    if name.starts_with(b"_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return format!("{d} ({raw})");
            }
        }
    }
    raw
}
