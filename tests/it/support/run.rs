//! Running the `ptxld` binary: every test starts it with [`ptxld()`], a builder.
//!
//! ```ignore
//! let o = ptxld().args(["-o", "out.ptx", "a.ptx"]).current_dir(&d).run();
//! let child = ptxld().args(["-o", "out.ptx", "a.ptx", "b.fifo"]).current_dir(&d).spawn();
//! ```
//!
//! Standard input is closed (or fed the bytes given to [`Ptxld::stdin`]), standard
//! output and error are captured unless redirected. [`Ptxld::run`] fails the test if
//! ptxld is still running after [`PATIENCE`] (a hang), instead of waiting forever.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use super::PATIENCE;

/// The `ptxld` binary cargo built for the tests.
pub fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ptxld"))
}

/// A `ptxld` command to build up and run.
pub fn ptxld() -> Ptxld {
    Ptxld {
        through: Vec::new(),
        args: Vec::new(),
        env: Vec::new(),
        dir: None,
        stdin: None,
        stdout: None,
        stderr: None,
    }
}

/// See [`ptxld()`].
pub struct Ptxld {
    through: Vec<OsString>,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    stdout: Option<Stdio>,
    stderr: Option<Stdio>,
}

impl Ptxld {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The folder ptxld runs in (default: the test's, the package root).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Sets environment variable `key` for ptxld (`None`: removes it).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: Option<&OsStr>) -> Self {
        let value = value.map(OsStr::to_os_string);
        self.env.push((key.as_ref().to_os_string(), value));
        self
    }

    /// Feeds `bytes` to ptxld's standard input, then closes it.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Standard output goes to `to` instead of being captured.
    pub fn stdout(mut self, to: Stdio) -> Self {
        self.stdout = Some(to);
        self
    }

    /// Standard error goes to `to` instead of being captured.
    pub fn stderr(mut self, to: Stdio) -> Self {
        self.stderr = Some(to);
        self
    }

    /// Runs ptxld through a wrapper, `WRAPPER... ptxld ARGS...`: a shell that sets
    /// limits first (`["bash", "-c", "ulimit -n 64 && exec \"$0\" \"$@\""]`), or a
    /// command that runs it as another user (`setpriv`).
    pub fn through<I, S>(mut self, wrapper: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.through = wrapper
            .into_iter()
            .map(|a| a.as_ref().to_os_string())
            .collect();
        self
    }

    /// The command as built so far, for what the builder does not cover (`pre_exec`):
    /// standard input closed, output captured by `Command::output`.
    pub fn command(self) -> Command {
        let mut cmd = match self.through.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(exe());
                c
            }
            None => Command::new(exe()),
        };
        cmd.args(&self.args);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(d) = &self.dir {
            cmd.current_dir(d);
        }
        cmd
    }

    /// Starts ptxld, its standard output and error piped unless redirected; collect it
    /// with [`wait_output`]. For tests that act on a link while it runs.
    pub fn spawn(mut self) -> Child {
        let stdin = self.stdin.take();
        let stdout = self.stdout.take().unwrap_or_else(Stdio::piped);
        let stderr = self.stderr.take().unwrap_or_else(Stdio::piped);
        let mut cmd = self.command();
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(stdout)
        .stderr(stderr);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        if let Some(bytes) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            // On a thread: ptxld may write before it has read all of it.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        child
    }

    /// Runs ptxld to its end and returns its exit status and captured output.
    pub fn run(self) -> Output {
        wait_output(self.spawn())
    }
}

/// Waits for `child` to exit and returns its output, reading its standard output and
/// error meanwhile; a child still running after [`PATIENCE`] is killed and the test
/// fails (it hangs).
pub fn wait_output(mut child: Child) -> Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        pipe.map(|mut p| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = p.read_to_end(&mut bytes);
                bytes
            })
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let collect = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.map(|h| h.join().unwrap()).unwrap_or_default()
    };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the process hangs (killed after {PATIENCE:?}); stderr:\n{}",
                String::from_utf8_lossy(&collect(stderr))
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

/// Standard output as text (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
