//! NVIDIA's nvJitLink, loaded at run time: it links the cubins of a split assembly
//! (`ptxas -ewp` or `-c`, docs/machine-code.md) into one executable cubin. It is loaded rather than linked against so that ptxld
//! builds and runs without a CUDA toolkit; only what links cubins needs it.
//!
//! Which library: `$NVJITLINK`, else the newest `libnvJitLink.so*` in
//! `$CUDA_HOME/lib64`, `$CUDA_HOME/lib`, `$CUDA_PATH/lib64`, `$CUDA_PATH/lib`, else
//! what the dynamic loader finds for `libnvJitLink.so.13`, `.so.12`, `.so`.

use std::ffi::{c_char, c_int, c_uint, c_void, CString, OsStr, OsString};
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::diag::{Code, Diagnostic};

/// Environment variables that choose the library, in order (for build scripts'
/// rerun-if-env-changed).
pub const NVJITLINK_ENV: [&str; 3] = ["NVJITLINK", "CUDA_HOME", "CUDA_PATH"];

/// How to point ptxld at nvJitLink.
const HELP: &str = "set NVJITLINK to libnvJitLink.so, or CUDA_HOME to a CUDA toolkit (it is in \
                    lib64), or put it in the loader's path (LD_LIBRARY_PATH)";

/// The names the dynamic loader is asked for last: the newest major version first.
const SONAMES: [&str; 3] = [
    "libnvJitLink.so.13",
    "libnvJitLink.so.12",
    "libnvJitLink.so",
];

/// `nvJitLinkHandle`: an opaque pointer.
type Handle = *mut c_void;
/// `nvJitLinkInputType` of a cubin (`NVJITLINK_INPUT_CUBIN`).
const INPUT_CUBIN: c_int = 1;

// The C signatures; `nvJitLinkResult` is a C enum, an `int`.
type Create = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut Handle) -> c_int;
type AddData = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
type Complete = unsafe extern "C" fn(Handle) -> c_int;
type GetSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type GetCubin = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type GetLog = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type Version = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

/// A loaded nvJitLink and the functions ptxld calls.
pub(crate) struct NvJitLink {
    create: Create,
    destroy: Destroy,
    add_data: AddData,
    complete: Complete,
    cubin_size: GetSize,
    cubin: GetCubin,
    error_log_size: GetSize,
    error_log: GetLog,
    info_log_size: GetSize,
    info_log: GetLog,
    /// Absent before CUDA 12.3, which has no `nvJitLinkVersion`.
    version: Option<Version>,
    /// The path or name it was loaded as.
    described: String,
    /// Keeps the code the pointers above point into mapped; never used otherwise.
    _library: Library,
}

/// Finds and loads nvJitLink with the environment `env` gives (`std::env::var_os`
/// but for tests); `purpose` says what needs it, for the message. `NVJITLINK`, when
/// set, is the one: it is an error if it cannot be loaded, rather than a silent fall
/// back to another library.
pub(crate) fn find_nvjitlink(
    env: &dyn Fn(&str) -> Option<OsString>,
    purpose: &str,
) -> Result<NvJitLink, Box<Diagnostic>> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(p) = set("NVJITLINK") {
        let shown = Path::new(&p).display().to_string();
        let why = match Path::new(&p).exists() {
            false => "does not exist".to_string(),
            // `./` first: dlopen searches its path for a name without a slash.
            true => match NvJitLink::open(Path::new(".").join(&p).as_os_str(), shown.clone()) {
                Ok(lib) => return Ok(lib),
                Err(e) => format!("cannot be loaded ({e})"),
            },
        };
        return Err(not_found(format!(
            "NVJITLINK is {shown}, which {why}; {purpose} needs nvJitLink"
        )));
    }
    let mut looked = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        let Some(home) = set(var) else { continue };
        for sub in ["lib64", "lib"] {
            let dir = Path::new(&home).join(sub);
            match newest_in(&dir) {
                None => looked.push(format!("{var}/{sub} ({})", dir.display())),
                Some(p) => match NvJitLink::open(p.as_os_str(), p.display().to_string()) {
                    Ok(lib) => return Ok(lib),
                    Err(e) => looked.push(format!("{var}/{sub} ({}: {e})", p.display())),
                },
            }
        }
    }
    // A bare name, which the loader looks for in LD_LIBRARY_PATH, its cache and so on.
    for name in SONAMES {
        if let Ok(lib) = NvJitLink::open(OsStr::new(name), name.to_string()) {
            return Ok(lib);
        }
    }
    looked.push(format!("the loader's path ({})", SONAMES.join(", ")));
    Err(not_found(format!(
        "cannot find nvJitLink for {purpose}: NVJITLINK is not set, and there is none in {}",
        looked.join(", ")
    )))
}

/// The error of a failed search, with how to point ptxld at nvJitLink.
fn not_found(message: String) -> Box<Diagnostic> {
    Box::new(Diagnostic::global_error(Code::NvJitLinkNotFound, message).with_help(HELP))
}

/// The file of `dir` to load: the plain `libnvJitLink.so` (a toolkit's link to its
/// own version), else the highest version suffix (`.so.12.9.86` over `.so.12`).
fn newest_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?;
            // `libnvJitLink.so` or `libnvJitLink.so.N...`, not `libnvJitLink.so_old`.
            let version: Vec<u32> = match name.strip_prefix("libnvJitLink.so")? {
                "" => vec![u32::MAX],
                v => v
                    .strip_prefix('.')?
                    .split('.')
                    .map(|n| n.parse().unwrap_or(0))
                    .collect(),
            };
            path.is_file().then_some((version, path))
        })
        .max()
        .map(|(_, path)| path)
}

impl NvJitLink {
    /// Loads `file` (a path or a name for the loader) and its functions.
    fn open(file: &OsStr, described: String) -> Result<NvJitLink, libloading::Error> {
        // SAFETY: loading runs the library's initialisers; nvJitLink's are NVIDIA's
        // own and expect nothing of the process.
        let library = unsafe { Library::new(file)? };
        // SAFETY: the types are the C declarations of nvJitLink.h. The pointers are
        // copied out of the `Symbol`s; `_library`, kept with them, keeps them valid.
        unsafe {
            Ok(NvJitLink {
                create: *library.get(b"nvJitLinkCreate\0")?,
                destroy: *library.get(b"nvJitLinkDestroy\0")?,
                add_data: *library.get(b"nvJitLinkAddData\0")?,
                complete: *library.get(b"nvJitLinkComplete\0")?,
                cubin_size: *library.get(b"nvJitLinkGetLinkedCubinSize\0")?,
                cubin: *library.get(b"nvJitLinkGetLinkedCubin\0")?,
                error_log_size: *library.get(b"nvJitLinkGetErrorLogSize\0")?,
                error_log: *library.get(b"nvJitLinkGetErrorLog\0")?,
                info_log_size: *library.get(b"nvJitLinkGetInfoLogSize\0")?,
                info_log: *library.get(b"nvJitLinkGetInfoLog\0")?,
                version: library.get(b"nvJitLinkVersion\0").ok().map(|s| *s),
                described,
                _library: library,
            })
        }
    }

    /// The library's path or name as loaded, for messages.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// `nvJitLinkVersion`: (major, minor), if the library can say.
    pub fn version(&self) -> Option<(u32, u32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        let r = unsafe { (self.version?)(&mut major, &mut minor) };
        (r == 0).then_some((major, minor))
    }

    /// Links `inputs` (name, bytes of a relocatable cubin) for `arch` (`sm_80`) with
    /// further nvJitLink `options` (`-O3`): the executable cubin and the info log, or
    /// the failing call, the result's name and the error log.
    pub fn link_cubins(
        &self,
        arch: &str,
        options: &[String],
        inputs: &[(String, Vec<u8>)],
    ) -> Result<(Vec<u8>, String), String> {
        let c = |s: &str| CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"));
        let arch = format!("-arch={arch}");
        let options = std::iter::once(arch.as_str())
            .chain(options.iter().map(String::as_str))
            .map(c)
            .collect::<Result<Vec<_>, _>>()?;
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let names = inputs
            .iter()
            .map(|(n, _)| c(n))
            .collect::<Result<Vec<_>, _>>()?;
        // Declared after the strings, so dropped (destroyed) before them: nvJitLink
        // keeps the names' pointers until `nvJitLinkDestroy`.
        let mut link = Link {
            lib: self,
            handle: std::ptr::null_mut(),
        };
        // SAFETY: an out-pointer and `pointers.len()` C strings.
        let r =
            unsafe { (self.create)(&mut link.handle, pointers.len() as u32, pointers.as_ptr()) };
        link.check(r, "nvJitLinkCreate")?;
        for ((name, bytes), cname) in inputs.iter().zip(&names) {
            // SAFETY: a live handle, `bytes.len()` bytes and a C string.
            let r = unsafe {
                let data = bytes.as_ptr().cast();
                (self.add_data)(link.handle, INPUT_CUBIN, data, bytes.len(), cname.as_ptr())
            };
            link.check(r, &format!("nvJitLinkAddData({name})"))?;
        }
        // SAFETY: a live handle.
        link.check(unsafe { (self.complete)(link.handle) }, "nvJitLinkComplete")?;
        let mut size = 0;
        // SAFETY: a live handle and an out-pointer.
        let r = unsafe { (self.cubin_size)(link.handle, &mut size) };
        link.check(r, "nvJitLinkGetLinkedCubinSize")?;
        let mut cubin = vec![0u8; size];
        // SAFETY: a live handle and `size` writable bytes, as it asked for.
        let r = unsafe { (self.cubin)(link.handle, cubin.as_mut_ptr().cast()) };
        link.check(r, "nvJitLinkGetLinkedCubin")?;
        Ok((cubin, link.log(self.info_log_size, self.info_log)))
    }
}

/// One `nvJitLinkHandle`, destroyed however `link_cubins` returns.
struct Link<'a> {
    /// The library that made it.
    lib: &'a NvJitLink,
    /// Null until `nvJitLinkCreate` sets it, and after `nvJitLinkDestroy`.
    handle: Handle,
}

impl Link<'_> {
    /// `Err` naming `call`, the result and the error log if `result` is not success.
    fn check(&self, result: c_int, call: &str) -> Result<(), String> {
        // nvJitLink.h's `NVJITLINK_ERROR_*`, from 1.
        const NAMES: &str = "UNRECOGNIZED_OPTION MISSING_ARCH INVALID_INPUT PTX_COMPILE \
                             NVVM_COMPILE INTERNAL THREADSAFETY UNRECOGNIZED_INPUT FINALIZE";
        if result == 0 {
            return Ok(());
        }
        let name = usize::try_from(result - 1)
            .ok()
            .and_then(|i| NAMES.split(' ').nth(i));
        let mut message = match name {
            Some(name) => format!("{call} failed: NVJITLINK_ERROR_{name} ({result})"),
            None => format!("{call} failed: error {result}"),
        };
        let log = self.log(self.lib.error_log_size, self.lib.error_log);
        if !log.trim().is_empty() {
            message.push('\n');
            message.push_str(log.trim_end());
        }
        Err(message)
    }

    /// The error or info log (which `size` and `get` read), empty if there is none.
    fn log(&self, size: GetSize, get: GetLog) -> String {
        if self.handle.is_null() {
            return String::new(); // `nvJitLinkCreate` failed before making one.
        }
        let mut n = 0;
        // SAFETY: a live handle and an out-pointer.
        if unsafe { size(self.handle, &mut n) } != 0 || n == 0 {
            return String::new();
        }
        // The size counts the terminating NUL.
        let mut text = vec![0u8; n];
        // SAFETY: a live handle and `n` writable bytes.
        if unsafe { get(self.handle, text.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        let end = text.iter().position(|&b| b == 0).unwrap_or(n);
        String::from_utf8_lossy(&text[..end]).into_owned()
    }
}

impl Drop for Link<'_> {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: a handle `nvJitLinkCreate` made, destroyed once (it nulls it).
            unsafe { (self.lib.destroy)(&mut self.handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find_nvjitlink` with only `vars` set; it must read no variable that
    /// [`NVJITLINK_ENV`] does not list, or a build script would miss its change.
    fn find(vars: &[(&str, &Path)]) -> Result<NvJitLink, Box<Diagnostic>> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        let env = |name: &str| {
            assert!(NVJITLINK_ENV.contains(&name), "reads {name}");
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        };
        find_nvjitlink(&env, "linking cubins")
    }

    /// Says the calling test cannot run and why, on the process's standard error,
    /// which the harness does not capture (tests/it/support's `skip`); in CI, where
    /// every tool is installed, it fails the test instead.
    fn skip(test: &str, why: &str) {
        use std::io::Write as _;
        assert!(
            std::env::var_os("CI").is_none(),
            "{test} cannot run in CI: {why}"
        );
        let line = format!("\n*** SKIPPED {test}: {why} ***\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// The tool `var` names, else `default` under `.tools/nv` (tests/it/support's
    /// `nvidia_tool`); `None`, after saying so, when it is missing.
    fn tool(test: &str, var: &str, default: &str) -> Option<PathBuf> {
        let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(".tools/nv")
                .join(default)
        });
        if path.exists() {
            return Some(path);
        }
        let why = format!(
            "{var} not found at {}; run scripts/install-tools.sh (or `just tools`)",
            path.display()
        );
        skip(test, &why);
        None
    }

    #[test]
    fn nvjitlink_set_is_the_one_even_when_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let nowhere = Path::new("/nonexistent-ptxld/libnvJitLink.so");
        // NVJITLINK set wrong is an error, not a fall back to CUDA_HOME.
        let e = find(&[("NVJITLINK", nowhere), ("CUDA_HOME", dir.path())])
            .err()
            .unwrap();
        assert_eq!(e.code, Code::NvJitLinkNotFound);
        assert_eq!(
            e.message,
            "NVJITLINK is /nonexistent-ptxld/libnvJitLink.so, which does not exist; linking \
             cubins needs nvJitLink"
        );
        assert_eq!(e.help.as_deref(), Some(HELP));
        let junk = dir.path().join("libnvJitLink.so");
        std::fs::write(&junk, "not a library").unwrap();
        let e = find(&[("NVJITLINK", &junk)]).err().unwrap();
        let start = format!("NVJITLINK is {}, which cannot be loaded (", junk.display());
        assert!(e.message.starts_with(&start), "{}", e.message);
    }

    #[test]
    fn nvjitlink_not_found_lists_what_was_looked_at() {
        let home = tempfile::tempdir().unwrap();
        let lib64 = home.path().join("lib64");
        std::fs::create_dir(&lib64).unwrap();
        std::fs::write(lib64.join("libnvJitLink.so.12"), "not a library").unwrap();
        let nowhere = Path::new("/nonexistent-ptxld");
        // The system's loader may have a real one: then finding it is right.
        let Err(e) = find(&[("CUDA_HOME", home.path()), ("CUDA_PATH", nowhere)]) else {
            return;
        };
        let h = home.path().display();
        let start = format!(
            "cannot find nvJitLink for linking cubins: NVJITLINK is not set, and there is none \
             in CUDA_HOME/lib64 ({h}/lib64/libnvJitLink.so.12: "
        );
        assert!(e.message.starts_with(&start), "{}", e.message);
        let end = format!(
            "), CUDA_HOME/lib ({h}/lib), CUDA_PATH/lib64 (/nonexistent-ptxld/lib64), \
             CUDA_PATH/lib (/nonexistent-ptxld/lib), the loader's path (libnvJitLink.so.13, \
             libnvJitLink.so.12, libnvJitLink.so)"
        );
        assert!(e.message.ends_with(&end), "{}", e.message);
    }

    #[test]
    fn nvjitlink_newest_in_prefers_the_plain_name_then_the_highest_version() {
        let dir = tempfile::tempdir().unwrap();
        let best = || newest_in(dir.path()).map(|p| p.file_name().unwrap().to_owned());
        assert_eq!(best(), None);
        for name in [
            "libnvJitLink.so.9.1",
            "libnvJitLink.so_old",
            "libnvJitLink.so.12",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(best().unwrap(), "libnvJitLink.so.12");
        std::fs::write(dir.path().join("libnvJitLink.so.12.9.86"), "").unwrap();
        assert_eq!(best().unwrap(), "libnvJitLink.so.12.9.86");
        std::fs::create_dir(dir.path().join("libnvJitLink.so.13")).unwrap(); // Not a file.
        assert_eq!(best().unwrap(), "libnvJitLink.so.12.9.86");
        std::fs::write(dir.path().join("libnvJitLink.so"), "").unwrap();
        assert_eq!(best().unwrap(), "libnvJitLink.so");
    }

    /// `.version 7.0 / .target sm_80` with `body`.
    const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\n";
    const DEFINES_F: &str = ".visible .func f()\n{\n\tret;\n}\n";
    const CALLS_F: &str =
        ".extern .func f();\n\n.visible .entry k()\n{\n\tcall.uni f, ();\n\tret;\n}\n";

    #[test]
    fn nvjitlink_links_relocatable_cubins() {
        const TEST: &str = "nvjitlink_links_relocatable_cubins";
        let Some(so) = tool(
            TEST,
            "NVJITLINK_SO",
            "nvidia/nvjitlink/lib/libnvJitLink.so.12",
        ) else {
            return;
        };
        let Some(ptxas) = tool(TEST, "PTXAS", "nvidia/cuda_nvcc/bin/ptxas") else {
            return;
        };
        let lib = find(&[("NVJITLINK", &so)]).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(lib.describe(), so.display().to_string());
        let version = lib.version().expect("nvJitLinkVersion");
        assert!(version >= (12, 0), "{version:?}");
        // What ptxas makes of each module with `-c`: a relocatable cubin.
        let dir = tempfile::tempdir().unwrap();
        let cubin = |name: &str, body: &str| {
            let ptx = dir.path().join(format!("{name}.ptx"));
            let out = dir.path().join(format!("{name}.cubin"));
            std::fs::write(&ptx, format!("{HEADER}{body}")).unwrap();
            let o = std::process::Command::new(&ptxas)
                .args(["-c", "-arch=sm_80"])
                .arg(&ptx)
                .arg("-o")
                .arg(&out)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            (format!("{name}.cubin"), std::fs::read(out).unwrap())
        };
        let (a, b) = (cubin("a", DEFINES_F), cubin("b", CALLS_F));
        let (linked, _info) = lib
            .link_cubins("sm_80", &["-O3".to_string()], &[a, b.clone()])
            .unwrap();
        assert!(
            linked.starts_with(b"\x7fELF"),
            "{:?}",
            &linked[..linked.len().min(16)]
        );
        // Without the definition, f is undefined.
        let e = lib.link_cubins("sm_80", &[], &[b]).unwrap_err();
        assert!(
            e.starts_with("nvJitLinkComplete failed: NVJITLINK_ERROR_"),
            "{e}"
        );
        assert!(e.contains("Undefined reference to 'f'"), "{e}");
        // The toolkit's layout finds the same library through CUDA_HOME (its lib).
        let home = so.parent().unwrap().parent().unwrap();
        let lib = find(&[("CUDA_HOME", home)]).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(lib.describe(), so.display().to_string());
        // An option nvJitLink does not know fails at nvJitLinkCreate, named.
        let e = lib
            .link_cubins("sm_80", &["-no-such-option".into()], &[])
            .unwrap_err();
        let start = "nvJitLinkCreate failed: NVJITLINK_ERROR_UNRECOGNIZED_OPTION (1)\n";
        assert!(e.starts_with(start) && e.contains("-no-such-option"), "{e}");
    }
}
