#!/usr/bin/env python3
"""Link PTX modules with nvJitLink 12.9 (through ctypes) and report its verdict as JSON.

  nvjitlink.py [--arch sm_80] [--cubin OUT.cubin] [--name-mode path|base] [--option OPT ...] A.ptx B.ptx ...
  nvjitlink.py --cases [--ptxld BIN] [--markdown] [CASE_DIR_OR_ROOT ...]   (default fixtures/link)

Prints ONE JSON object on stdout:
  {"ok": bool, "result_add": [code per input], "result_complete": code or null,
   "error_log": str, "info_log": str, "captured": str, "error_lines": [str, ...],
   "arch": "sm_80", "inputs": [...], "names": [...]}

* `ok` is false if any nvJitLink call fails OR any line of the captured fd 1/2 output, the error
  log or the info log contains "error" (case-insensitive). nvJitLink 12.9 reports duplicate,
  prototype, size, memory-space and common errors only as `@E@error   : ...` lines written
  straight to file descriptor 2 while returning NVJITLINK_SUCCESS (the "stderr quirk", see
  docs/linking.md, "Rule sections", section 11).
* `error_lines` lists those lines (captured output first, then error log, then info log).
* `result_complete` is null when an AddData call failed (Complete is then not called).
* The name given to nvJitLink for each input is the path as written on the command line
  (`--name-mode base`: its basename); nvJitLink's messages quote it.
* `--cubin FILE` writes the linked cubin when every call succeeded (even if error lines were printed).

Library: $NVJITLINK_SO, default .tools/nv/nvidia/nvjitlink/lib/libnvJitLink.so.12 under the
repository root (the parent of this script's directory).

--cases runs every link case (fixtures/link/<case>/case.txt, format in fixtures/link/README.md):
each input alone through `ptxas -c` (arch max(sm_80, its .target)), nvJitLink through this script
(one subprocess per case, inside the case directory), and checks `nvjitlink: agree` / `differs:`
against the verdict. With --ptxld it also runs `BIN [ptxld-args] -o out.ptx inputs...`, checks the
exit status, the `stderr:` lines and, on success, `ptxas -arch=<arch> out.ptx`. Exit 1 if any
check fails. --markdown prints the nvJitLink column for docs/linking-cases.md instead.

Exit status: 0 whenever the harness itself worked (whatever the link verdict); 2 on harness
failure (bad usage, unreadable input, library not loadable, nvJitLinkCreate failed). On a harness
failure after argument parsing a JSON object with "harness_error" is still printed.
"""
import argparse
import ctypes
import json
import os
import sys
import tempfile

RESULT_NAMES = {
    0: "SUCCESS", 1: "UNRECOGNIZED_OPTION", 2: "MISSING_ARCH", 3: "INVALID_INPUT",
    4: "PTX_COMPILE", 5: "NVVM_COMPILE", 6: "INTERNAL", 7: "THREADPOOL",
    8: "UNRECOGNIZED_INPUT", 9: "FINALIZE",
}
INPUT_PTX = 2
VER = "12_9"


class HarnessError(Exception):
    pass


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _lib_path():
    p = os.environ.get("NVJITLINK_SO")
    if p:
        return p
    return os.path.join(_repo_root(), ".tools", "nv", "nvidia", "nvjitlink", "lib", "libnvJitLink.so.12")


def _fn(lib, name, argtypes):
    for sym in ("__nvJitLink%s_%s" % (name, VER), "nvJitLink" + name):
        f = getattr(lib, sym, None)
        if f is not None:
            f.restype = ctypes.c_int
            f.argtypes = argtypes
            return f
    raise HarnessError("symbol nvJitLink%s not found in the library" % name)


class FdCapture:
    """Redirect fds 1 and 2 into one temp file at the file-descriptor level."""

    def __init__(self, libc):
        self.libc = libc
        self.tmp = None
        self.saved = None

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.libc.fflush(None)
        self.tmp = tempfile.TemporaryFile()
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.tmp.fileno(), 1)
        os.dup2(self.tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        self.libc.fflush(None)
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])
        return False

    def text(self):
        self.tmp.seek(0)
        data = self.tmp.read()
        self.tmp.close()
        return data.decode("utf-8", errors="replace")


def _get_log(size_fn, get_fn, h):
    size = ctypes.c_size_t(0)
    if size_fn(h, ctypes.byref(size)) != 0 or size.value == 0:
        return ""
    buf = ctypes.create_string_buffer(size.value + 1)
    if get_fn(h, buf) != 0:
        return ""
    return buf.value.decode("utf-8", errors="replace")


def link(inputs, arch, names, cubin_out=None, options=()):
    try:
        lib = ctypes.CDLL(_lib_path())
    except OSError as e:
        raise HarnessError("cannot load nvJitLink (%s): %s" % (_lib_path(), e))
    libc = ctypes.CDLL(None)
    libc.fflush.argtypes = [ctypes.c_void_p]
    vp = ctypes.c_void_p
    create = _fn(lib, "Create", [ctypes.POINTER(vp), ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)])
    add = _fn(lib, "AddData", [vp, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p])
    complete = _fn(lib, "Complete", [vp])
    destroy = _fn(lib, "Destroy", [ctypes.POINTER(vp)])
    elog_size = _fn(lib, "GetErrorLogSize", [vp, ctypes.POINTER(ctypes.c_size_t)])
    elog = _fn(lib, "GetErrorLog", [vp, ctypes.c_char_p])
    ilog_size = _fn(lib, "GetInfoLogSize", [vp, ctypes.POINTER(ctypes.c_size_t)])
    ilog = _fn(lib, "GetInfoLog", [vp, ctypes.c_char_p])
    cubin_size = _fn(lib, "GetLinkedCubinSize", [vp, ctypes.POINTER(ctypes.c_size_t)])
    cubin_get = _fn(lib, "GetLinkedCubin", [vp, ctypes.c_void_p])

    datas = []
    for p in inputs:
        try:
            with open(p, "rb") as f:
                datas.append(ctypes.create_string_buffer(f.read()))  # adds the NUL terminator
        except OSError as e:
            raise HarnessError("cannot read %s: %s" % (p, e))

    opt_bufs = [ctypes.create_string_buffer(o.encode()) for o in ["-arch=%s" % arch] + list(options)]
    opts = (ctypes.c_char_p * len(opt_bufs))(*[ctypes.cast(b, ctypes.c_char_p) for b in opt_bufs])
    # nvJitLink keeps the name pointers: these buffers must outlive Destroy.
    name_bufs = [ctypes.create_string_buffer(n.encode()) for n in names]

    h = vp()
    result_add = []
    result_complete = None
    cubin = None
    cap = FdCapture(libc)
    with cap:
        rc = create(ctypes.byref(h), len(opt_bufs), opts)
        if rc == 0:
            for data, nb in zip(datas, name_bufs):
                result_add.append(add(h, INPUT_PTX, ctypes.cast(data, ctypes.c_void_p),
                                      ctypes.sizeof(data), ctypes.cast(nb, ctypes.c_char_p)))
            if all(r == 0 for r in result_add):
                result_complete = complete(h)
            error_log = _get_log(elog_size, elog, h)
            info_log = _get_log(ilog_size, ilog, h)
            if result_complete == 0 and cubin_out:
                n = ctypes.c_size_t(0)
                if cubin_size(h, ctypes.byref(n)) == 0 and n.value:
                    buf = ctypes.create_string_buffer(n.value)
                    if cubin_get(h, buf) == 0:
                        cubin = buf.raw
            destroy(ctypes.byref(h))
    captured = cap.text()
    del name_bufs, opt_bufs, datas  # only now
    if rc != 0:
        raise HarnessError("nvJitLinkCreate(-arch=%s) failed: %d %s; output: %s"
                           % (arch, rc, RESULT_NAMES.get(rc, "?"), captured.strip()))

    error_lines = []
    for text in (captured, error_log, info_log):
        for line in text.splitlines():
            if "error" in line.lower():
                error_lines.append(line.rstrip())
    calls_ok = all(r == 0 for r in result_add) and result_complete == 0
    if cubin_out and cubin is not None:
        with open(cubin_out, "wb") as f:
            f.write(cubin)
    return {
        "ok": bool(calls_ok and not error_lines),
        "result_add": result_add,
        "result_complete": result_complete,
        "error_log": error_log,
        "info_log": info_log,
        "captured": captured,
        "error_lines": error_lines,
        "arch": arch,
        "inputs": list(inputs),
        "names": list(names),
    }


# ----------------------------------------------------------------------------- --cases mode

def _ptxas_path():
    return os.environ.get("PTXAS") or os.path.join(_repo_root(), ".tools", "nv", "nvidia", "cuda_nvcc", "bin", "ptxas")


def parse_case(path):
    """case.txt -> dict(inputs, arch, ptxld_args, expect, stderr, nvjitlink, comments)."""
    c = {"inputs": [], "arch": "sm_80", "ptxld_args": [], "expect": None, "stderr": [],
         "nvjitlink": None, "comments": []}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            if line.lstrip().startswith("#"):
                c["comments"].append(line.lstrip()[1:].strip())
                continue
            key, sep, val = line.partition(":")
            if not sep:
                raise ValueError("%s:%d: expected 'key: value'" % (path, n))
            key, val = key.strip(), val.strip()
            if key == "inputs":
                c["inputs"] = val.split()
            elif key == "arch":
                c["arch"] = val
            elif key == "ptxld-args":
                c["ptxld_args"] = val.split()
            elif key == "expect":
                if val not in ("ok", "error"):
                    raise ValueError("%s:%d: expect must be ok or error" % (path, n))
                c["expect"] = val
            elif key == "stderr":
                c["stderr"].append(val)
            elif key == "nvjitlink":
                c["nvjitlink"] = val
            elif key == "nvjitlink-args":
                c["nvjitlink_args"] = val.split()
            elif key in ("output-has", "output-lacks", "nvjitlink-stderr", "run"):
                pass  # checked by tests/it/link.rs only
            else:
                raise ValueError("%s:%d: unknown key %r" % (path, n, key))
    if not c["inputs"] or c["expect"] is None or c["nvjitlink"] is None:
        raise ValueError("%s: inputs, expect and nvjitlink are required" % path)
    if c["nvjitlink"] != "agree" and not c["nvjitlink"].startswith(("differs:", "same-verdict:")):
        raise ValueError("%s: nvjitlink must be 'agree', 'differs: <reason>' or 'same-verdict: <reason>'" % path)
    return c


def _target_arch(ptx_path):
    import re
    with open(ptx_path, "rb") as f:
        text = f.read(1 << 20).decode("latin-1")
    m = re.search(r"^\s*\.target\s+sm_(\d+)([a-z]?)", text, re.M)
    if not m:
        return "sm_80"
    num, suf = int(m.group(1)), m.group(2)
    return "sm_80" if num < 80 else "sm_%d%s" % (num, suf)


def _key_line(res):
    lines = [l.replace("@E@", "").strip() for t in (res.get("captured", ""), res.get("error_log", ""))
             for l in t.splitlines()]
    for l in lines:
        if "fatal" in l or l.lower().startswith("error   :"):
            return l
    for l in res.get("error_lines", []):
        return l.replace("@E@", "").strip()
    for text in (res.get("captured", ""), res.get("info_log", "")):
        for l in text.splitlines():
            if l.strip():
                return l.strip()
    return ""


def run_cases(argv):
    import subprocess
    ap = argparse.ArgumentParser(prog="nvjitlink.py --cases")
    ap.add_argument("--ptxld", default=None)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-ptxas-c", action="store_true", help="skip the per-input ptxas -c check")
    ap.add_argument("dirs", nargs="*")
    args = ap.parse_args(argv)
    roots = args.dirs or [os.path.join(_repo_root(), "fixtures", "link")]
    case_dirs = []
    for r in roots:
        if os.path.isfile(os.path.join(r, "case.txt")):
            case_dirs.append(r)
        else:
            case_dirs += sorted(os.path.join(r, d) for d in os.listdir(r)
                                if os.path.isfile(os.path.join(r, d, "case.txt")))
    ptxas = _ptxas_path()
    me = os.path.abspath(__file__)
    failures = 0
    rows = []
    checked_inputs = {}
    for d in case_dirs:
        name = os.path.basename(os.path.normpath(d))
        problems, notes = [], []
        try:
            c = parse_case(os.path.join(d, "case.txt"))
        except ValueError as e:
            print("FAIL %s: %s" % (name, e))
            failures += 1
            continue
        for inp in c["inputs"]:
            full = os.path.normpath(os.path.join(d, inp))
            if not os.path.isfile(full):
                problems.append("missing input %s" % inp)
                continue
            if args.no_ptxas_c or full in checked_inputs:
                continue
            arch_c = _target_arch(full)
            p = subprocess.run([ptxas, "-arch=" + arch_c, "-c", full, "-o", os.devnull],
                               capture_output=True, text=True)
            checked_inputs[full] = p.returncode
            if p.returncode != 0:
                msg = "ptxas -c rejects %s: %s" % (inp, (p.stderr.strip().splitlines() or ["?"])[-1])
                if ".address_size 32" in open(full, errors="replace").read():
                    notes.append(msg + " (expected: .address_size 32)")
                else:
                    problems.append(msg)
        if problems:
            print("FAIL %s: %s" % (name, "; ".join(problems)))
            failures += 1
            continue
        options = ["--option=" + o for o in c.get("nvjitlink_args", [])]
        p = subprocess.run([sys.executable, me, "--arch", c["arch"]] + options + c["inputs"],
                           cwd=d, capture_output=True, text=True)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            res = {"ok": False, "harness_error": p.stderr.strip()}
        if "harness_error" in res:
            print("FAIL %s: harness: %s" % (name, res["harness_error"]))
            failures += 1
            continue
        nv = "ok" if res["ok"] else "error"
        key = _key_line(res)
        if c["nvjitlink"].startswith(("agree", "same-verdict")) and nv != c["expect"]:
            problems.append("nvjitlink says %s but case expects %s and claims agree (%s)" % (nv, c["expect"], key))
        if c["nvjitlink"].startswith("differs") and nv == c["expect"]:
            notes.append("same verdict as expected; difference is in the result, not the verdict")
        if args.ptxld:
            import tempfile as _tf
            with _tf.TemporaryDirectory() as td:
                out = os.path.join(td, "out.ptx")
                q = subprocess.run([os.path.abspath(args.ptxld)] + c["ptxld_args"] + ["-o", out] + c["inputs"],
                                   cwd=d, capture_output=True, text=True)
                got = "ok" if q.returncode == 0 else "error"
                if got != c["expect"]:
                    problems.append("ptxld %s (expected %s): %s" % (got, c["expect"], q.stderr.strip()[:300]))
                for want in c["stderr"]:
                    if want not in q.stderr:
                        problems.append("ptxld stderr lacks %r" % want)
                if q.returncode == 0:
                    if not os.path.isfile(out):
                        problems.append("ptxld wrote no output")
                    else:
                        # A partial link (-r) may keep imports: ptxas -c.
                        partial = ["-c"] if {"-r", "--relocatable"} & set(c["ptxld_args"]) else []
                        r = subprocess.run([ptxas, "-arch=" + c["arch"]] + partial + [out, "-o", os.devnull],
                                           capture_output=True, text=True)
                        if r.returncode != 0:
                            problems.append("ptxas -arch=%s rejects the output: %s" % (c["arch"], r.stderr.strip()[:300]))
                elif os.path.exists(out):
                    problems.append("ptxld failed but wrote %s" % out)
        rule = next((x[5:].strip() for x in c["comments"] if x.lower().startswith("rule:")), "")
        rows.append((name, rule, c["expect"], nv, key, c["nvjitlink"]))
        if args.markdown:
            continue
        status = "FAIL" if problems else "ok  "
        failures += bool(problems)
        print("%s %-44s expect=%-5s nvjitlink=%-5s %s" % (status, name, c["expect"], nv, key[:110]))
        for x in problems:
            print("       problem: " + x)
        for x in notes:
            print("       note: " + x)
    if args.markdown:
        print("| case | rule (linking-rules.md) | ptxld | nvJitLink 12.9 | key line printed by nvJitLink | nvjitlink: |")
        print("|---|---|---|---|---|---|")
        for name, rule, exp, nv, key, claim in rows:
            kl = key.replace("|", "\\|")
            if len(kl) > 160:
                kl = kl[:157] + "..."
            cl = claim.replace("|", "\\|")
            print("| `%s` | %s | %s | %s | %s | %s |" % (name, rule, exp, nv, ("`%s`" % kl) if kl else "(nothing)", cl))
    else:
        print("%d case(s), %d failing" % (len(case_dirs), failures))
    return 1 if failures else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--cases":
        return run_cases(argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--cubin", default=None, help="write the linked cubin here")
    ap.add_argument("--name-mode", choices=("path", "base"), default="path")
    ap.add_argument("--option", action="append", default=[],
                    help="a further nvJitLink option (-kernels-used=k), repeatable")
    ap.add_argument("inputs", nargs="+")
    try:
        args = ap.parse_args(argv[1:])
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    arch = args.arch if args.arch.startswith("sm_") else "sm_" + args.arch
    names = [os.path.basename(p) if args.name_mode == "base" else p for p in args.inputs]
    try:
        res = link(args.inputs, arch, names, args.cubin, args.option)
    except HarnessError as e:
        print(json.dumps({"ok": False, "harness_error": str(e), "arch": arch, "inputs": args.inputs}))
        sys.stderr.write("nvjitlink.py: %s\n" % e)
        return 2
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
