//! The C API of ptxld (docs/c-api.md): a handle created with options, inputs added as
//! bytes or files, one link, its output and its diagnostics (text or JSON), in the
//! shape of nvJitLink's API. Everything here calls the one library: the options are
//! the command line's ([`ptxld_core::cli::link_job`]), the link is
//! [`ptxld_core::link_in_memory`], the diagnostics are its report rendered as the
//! command line and `ptxld check --json` render them.
//!
//! Every entry point checks its pointers, catches panics (none crosses into C: a
//! panic is reported as [`PtxldResult::Internal`]) and returns a result code. A
//! handle may be used from any thread, one call at a time (it is not shared inside
//! ptxld); handles are independent.

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ptxld_core::{link_in_memory, Job, MemoryInput, Report};

/// What a call did.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PtxldResult {
    /// It succeeded.
    Success = 0,
    /// A null pointer, or a string that is not UTF-8, where one is needed.
    InvalidArgument = 1,
    /// An option the command line does not know or that does not apply to a link
    /// (the diagnostics say which).
    InvalidOption = 2,
    /// An input file could not be read.
    Input = 3,
    /// The link failed: its errors are in the diagnostics.
    Link = 4,
    /// `ptxld_complete` has not succeeded, so there is no output; or inputs are added
    /// after it.
    NotComplete = 5,
    /// A bug in ptxld: it panicked (the panic did not cross into C).
    Internal = 6,
}

/// A link in the making. Opaque to C.
pub struct PtxldHandle {
    /// The link options, or why they were refused.
    job: Result<Job, String>,
    inputs: Vec<MemoryInput>,
    /// The output, once linked.
    output: Option<Vec<u8>>,
    /// What the link (or the options, or an input) reported, as text and as JSON.
    text: String,
    json: String,
}

impl PtxldHandle {
    fn report(&mut self, report: &Report) {
        self.text = report.render();
        self.json = report.to_json();
    }

    /// A message of ptxld's own (options, inputs), as a one-error report.
    fn message(&mut self, message: &str) {
        self.report(&Report::usage(message));
    }
}

/// Runs `f`, turning a panic into [`PtxldResult::Internal`].
fn guarded(f: impl FnOnce() -> PtxldResult) -> PtxldResult {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(PtxldResult::Internal)
}

/// The handle behind `h`, if it is not null.
///
/// # Safety
/// `h` is null or a handle from [`ptxld_create`] not yet destroyed.
unsafe fn handle<'a>(h: *mut PtxldHandle) -> Option<&'a mut PtxldHandle> {
    // SAFETY: the caller's contract.
    unsafe { h.as_mut() }
}

/// A C string as UTF-8.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

/// Creates a link with `num_options` options, spelled as on the command line
/// (`"--arch=sm_80"`, `"-O3"`, `"--gc-sections"`, `"--emit=fatbin"`). The handle is
/// made even when an option is refused (so that the diagnostics say why); that call
/// returns `PTXLD_RESULT_INVALID_OPTION` and the handle can only be destroyed.
///
/// # Safety
/// `handle` points to writable memory for a pointer; `options` points to
/// `num_options` NUL-terminated strings (it may be null when `num_options` is 0).
#[no_mangle]
pub unsafe extern "C" fn ptxld_create(
    handle: *mut *mut PtxldHandle,
    num_options: u32,
    options: *const *const c_char,
) -> PtxldResult {
    guarded(|| {
        if handle.is_null() || (options.is_null() && num_options > 0) {
            return PtxldResult::InvalidArgument;
        }
        let mut words = Vec::with_capacity(num_options as usize);
        for i in 0..num_options as usize {
            // SAFETY: `options` has `num_options` entries.
            match unsafe { text(*options.add(i)) } {
                Some(w) => words.push(w.to_string()),
                None => return PtxldResult::InvalidArgument,
            }
        }
        let mut h = Box::new(PtxldHandle {
            job: ptxld_core::cli::link_job(&words).map_err(|e| e.0),
            inputs: Vec::new(),
            output: None,
            text: String::new(),
            json: String::new(),
        });
        let result = match &h.job {
            Ok(_) => PtxldResult::Success,
            Err(e) => {
                let e = e.clone();
                h.message(&e);
                PtxldResult::InvalidOption
            }
        };
        // SAFETY: checked not null above.
        unsafe { *handle = Box::into_raw(h) };
        result
    })
}

/// Adds an input held in memory: PTX text, a fatbin, an ELF object or an archive;
/// `name` is what messages call it.
///
/// # Safety
/// `h` is a live handle; `data` points to `size` readable bytes; `name` is a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ptxld_add_data(
    h: *mut PtxldHandle,
    data: *const c_void,
    size: usize,
    name: *const c_char,
) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let (Some(h), Some(name)) = (unsafe { handle(h) }, unsafe { text(name) }) else {
            return PtxldResult::InvalidArgument;
        };
        if data.is_null() && size > 0 {
            return PtxldResult::InvalidArgument;
        }
        let bytes = match size {
            0 => Vec::new(),
            // SAFETY: `data` has `size` readable bytes.
            _ => unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec(),
        };
        add(h, name, bytes)
    })
}

/// Adds an input file (read now).
///
/// # Safety
/// `h` is a live handle; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ptxld_add_file(h: *mut PtxldHandle, path: *const c_char) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let (Some(h), Some(path)) = (unsafe { handle(h) }, unsafe { text(path) }) else {
            return PtxldResult::InvalidArgument;
        };
        match std::fs::read(path) {
            Ok(bytes) => add(h, path, bytes),
            Err(e) => {
                h.message(&format!("cannot read {path}: {e}"));
                PtxldResult::Input
            }
        }
    })
}

fn add(h: &mut PtxldHandle, name: &str, bytes: Vec<u8>) -> PtxldResult {
    if h.job.is_err() {
        return PtxldResult::InvalidOption;
    }
    if h.output.is_some() {
        return PtxldResult::NotComplete;
    }
    h.inputs.push(MemoryInput {
        name: name.to_string(),
        bytes,
    });
    PtxldResult::Success
}

/// Links the inputs added so far. On success the output and the warnings are ready;
/// on failure (`PTXLD_RESULT_LINK`) the diagnostics say why.
///
/// # Safety
/// `h` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptxld_complete(h: *mut PtxldHandle) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { handle(h) }) else {
            return PtxldResult::InvalidArgument;
        };
        let job = match &h.job {
            Ok(job) => job.clone(),
            Err(_) => return PtxldResult::InvalidOption,
        };
        match link_in_memory(&h.inputs, &job) {
            Ok(outcome) => {
                h.report(&outcome.report);
                h.output = Some(outcome.into_bytes());
                PtxldResult::Success
            }
            Err(failure) => {
                h.report(&failure.report);
                PtxldResult::Link
            }
        }
    })
}

/// The output's size in bytes.
///
/// # Safety
/// `h` is a live handle; `size` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn ptxld_get_output_size(
    h: *mut PtxldHandle,
    size: *mut usize,
) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let (Some(h), Some(size)) = (unsafe { handle(h) }, unsafe { size.as_mut() }) else {
            return PtxldResult::InvalidArgument;
        };
        match &h.output {
            Some(o) => {
                *size = o.len();
                PtxldResult::Success
            }
            None => PtxldResult::NotComplete,
        }
    })
}

/// Copies the output into `buffer` (`ptxld_get_output_size` bytes).
///
/// # Safety
/// `h` is a live handle; `buffer` has room for the output.
#[no_mangle]
pub unsafe extern "C" fn ptxld_get_output(h: *mut PtxldHandle, buffer: *mut c_void) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { handle(h) }) else {
            return PtxldResult::InvalidArgument;
        };
        if buffer.is_null() {
            return PtxldResult::InvalidArgument;
        }
        match &h.output {
            Some(o) => {
                // SAFETY: `buffer` has room for `o.len()` bytes.
                unsafe { std::ptr::copy_nonoverlapping(o.as_ptr(), buffer.cast::<u8>(), o.len()) };
                PtxldResult::Success
            }
            None => PtxldResult::NotComplete,
        }
    })
}

/// Which rendering of the diagnostics.
fn diagnostics(h: &PtxldHandle, json: bool) -> &str {
    match json {
        true => &h.json,
        false => &h.text,
    }
}

/// The size, NUL included, of the diagnostics as text (`json` 0) or as one line of
/// JSON (`json` 1, the form of `ptxld check --json`, docs/diagnostics.md). Empty
/// (size 1) before anything was reported.
///
/// # Safety
/// `h` is a live handle; `size` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn ptxld_get_diagnostics_size(
    h: *mut PtxldHandle,
    json: i32,
    size: *mut usize,
) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let (Some(h), Some(size)) = (unsafe { handle(h) }, unsafe { size.as_mut() }) else {
            return PtxldResult::InvalidArgument;
        };
        *size = diagnostics(h, json != 0).len() + 1;
        PtxldResult::Success
    })
}

/// Copies the diagnostics, NUL-terminated, into `buffer`
/// (`ptxld_get_diagnostics_size` bytes).
///
/// # Safety
/// `h` is a live handle; `buffer` has room for them.
#[no_mangle]
pub unsafe extern "C" fn ptxld_get_diagnostics(
    h: *mut PtxldHandle,
    json: i32,
    buffer: *mut c_char,
) -> PtxldResult {
    guarded(|| {
        // SAFETY: the caller's contract.
        let Some(h) = (unsafe { handle(h) }) else {
            return PtxldResult::InvalidArgument;
        };
        if buffer.is_null() {
            return PtxldResult::InvalidArgument;
        }
        let text = diagnostics(h, json != 0).as_bytes();
        // SAFETY: `buffer` has room for the text and its NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), text.len());
            *buffer.add(text.len()) = 0;
        }
        PtxldResult::Success
    })
}

/// Frees a handle and sets `*handle` to null (nothing if it is null already).
///
/// # Safety
/// `handle` points to null or to a live handle, which is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn ptxld_destroy(handle: *mut *mut PtxldHandle) -> PtxldResult {
    guarded(|| {
        if handle.is_null() {
            return PtxldResult::InvalidArgument;
        }
        // SAFETY: the caller's contract.
        let h = unsafe { std::mem::replace(&mut *handle, std::ptr::null_mut()) };
        if !h.is_null() {
            // SAFETY: made by `Box::into_raw` in `ptxld_create`, freed once.
            drop(unsafe { Box::from_raw(h) });
        }
        PtxldResult::Success
    })
}

/// The name of a result code (`"PTXLD_RESULT_LINK"`), a static string.
#[no_mangle]
pub extern "C" fn ptxld_result_string(result: PtxldResult) -> *const c_char {
    let name: &'static CStr = match result {
        PtxldResult::Success => c"PTXLD_RESULT_SUCCESS",
        PtxldResult::InvalidArgument => c"PTXLD_RESULT_INVALID_ARGUMENT",
        PtxldResult::InvalidOption => c"PTXLD_RESULT_INVALID_OPTION",
        PtxldResult::Input => c"PTXLD_RESULT_INPUT",
        PtxldResult::Link => c"PTXLD_RESULT_LINK",
        PtxldResult::NotComplete => c"PTXLD_RESULT_NOT_COMPLETE",
        PtxldResult::Internal => c"PTXLD_RESULT_INTERNAL",
    };
    name.as_ptr()
}

/// ptxld's version: `major.minor.patch` of the crate.
///
/// # Safety
/// Each pointer is null or points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn ptxld_version(major: *mut u32, minor: *mut u32, patch: *mut u32) {
    let parse = |s: &str| s.parse::<u32>().unwrap_or(0);
    for (p, v) in [
        (major, env!("CARGO_PKG_VERSION_MAJOR")),
        (minor, env!("CARGO_PKG_VERSION_MINOR")),
        (patch, env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        // SAFETY: the caller's contract.
        if let Some(p) = unsafe { p.as_mut() } {
            *p = parse(v);
        }
    }
}
