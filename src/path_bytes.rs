//! File names as bytes and back. On Unix a name is any bytes but NUL, and ptxld keeps
//! them exactly (command line, archives, depfiles, signal-safe C strings); elsewhere
//! names go through UTF-8, lossily where they are not.

use std::borrow::Cow;
use std::ffi::{CString, OsStr, OsString};

/// The bytes of `name`.
#[cfg(unix)]
pub(crate) fn bytes_of(name: &OsStr) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(name.as_bytes())
}

/// The bytes of `name` (UTF-8, lossily).
#[cfg(not(unix))]
pub(crate) fn bytes_of(name: &OsStr) -> Cow<'_, [u8]> {
    match name.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// The name whose bytes are `bytes`.
#[cfg(unix)]
pub(crate) fn from_bytes(bytes: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes).to_owned()
}

/// The name whose bytes are `bytes` (UTF-8, lossily).
#[cfg(not(unix))]
pub(crate) fn from_bytes(bytes: &[u8]) -> OsString {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// `name` as a C string for system calls; `None` if it holds a NUL byte (no file
/// can have such a name) or, off Unix, is not UTF-8.
pub(crate) fn c_string(name: &OsStr) -> Option<CString> {
    #[cfg(not(unix))]
    name.to_str()?;
    CString::new(bytes_of(name).into_owned()).ok()
}
