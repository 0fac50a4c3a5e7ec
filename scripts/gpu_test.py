#!/usr/bin/env python3
"""Run multi-producer programs linked by ptxld on a GPU, through the CUDA driver (`just test-gpu`).

  gpu_test.py [--dry-run] [--arch sm_XX] [--keep DIR] [--device N] [PROGRAM ...]

For each program (real producers' PTX: clang, GCC, NVRTC, libNVVM, libdevice; see PROGRAMS and
fixtures/gpu/README.md):

 1. ptxld links the inputs into out.ptx (for the driver's PTX JIT), with --arch sm_XX for the
    device into out.fatbin (PTX), and with --gpu-code sm_XX into a fatbin holding only ptxas's
    machine code (the driver must load its cubin entry: no PTX to fall back on);
 2. nvJitLink 12.9 links the same inputs into a cubin for sm_XX (the reference);
 3. each of the three is loaded with cuModuleLoadDataEx, the program's kernels run on fixed
    inputs (random.Random(seed)), and every output buffer (and the listed globals, read with
    cuModuleGetGlobal) is compared bit for bit between the three and with a host-computed
    expectation (integers exactly, libdevice math within a few ulp).

One line per program and path: PASS/FAIL (with the first differing index) or SKIP. Exit status
1 if anything failed, else 0.

Without a GPU (libcuda.so.1 not loadable, cuInit fails, no device) the script still runs the dry
run, then prints `*** SKIPPED gpu: <why> ***` and exits 0 (1 only if the dry run failed).
--dry-run never touches the driver: it does the links (ptxld: PTX and fatbin; nvJitLink: cubin)
for --arch (default sm_80) and checks that ptxas assembles out.ptx as a whole program, that the
fatbin's PTX entry (extracted with cuobjdump) assembles for its target, that the cubin is an ELF
file naming every kernel, and that the host expectations can be computed.

Tools: $PTXLD (default target/debug/ptxld), $PTXAS, $NVJITLINK_SO, $CUOBJDUMP (scripts/tools.env;
defaults under .tools/nv). Only the Python standard library is used (ctypes, array, struct).
"""
import argparse
import array
import ctypes
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.dont_write_bytecode = True   # no scripts/__pycache__ from importing nvjitlink
sys.path.insert(0, HERE)
import nvjitlink  # noqa: E402  (scripts/nvjitlink.py: nvJitLink 12.9 through ctypes)

NV = os.path.join(ROOT, ".tools", "nv", "nvidia")


def tool(env, default):
    return os.environ.get(env) or default


PTXLD = tool("PTXLD", os.path.join(ROOT, "target", "debug", "ptxld"))
PTXAS = tool("PTXAS", os.path.join(NV, "cuda_nvcc", "bin", "ptxas"))
CUOBJDUMP = tool("CUOBJDUMP", os.path.join(NV, "cu13", "bin", "cuobjdump"))


# ============================================================================ programs
#
# A program: its inputs (link order), its buffers, its launches, the globals to read back, and
# the host's expectation. Buffers are typed arrays ('f' float32, 'I' uint32, 'i' int32).

class Buf:
    def __init__(self, name, typecode, data=None, count=None, ulps=0):
        self.name, self.typecode = name, typecode
        self.data = data                      # input values (an array) or None for an output
        self.count = len(data) if data is not None else count
        self.ulps = ulps                      # host-expectation tolerance (floats only)

    @property
    def nbytes(self):
        return self.count * array.array(self.typecode).itemsize


class Launch:
    def __init__(self, kernel, grid, block, args, shared=0):
        # args: Buf names (device pointers) or ('i32', value)
        self.kernel, self.grid, self.block, self.args, self.shared = kernel, grid, block, args, shared


class Global:
    """A global read back with cuModuleGetGlobal: its size must be `size`; `expect(inputs)` gives
    its values (typecode, list) or None when only the size and the three paths' agreement count."""

    def __init__(self, name, size, typecode="B", expect=None, compare=True):
        self.name, self.size, self.typecode, self.expect, self.compare = name, size, typecode, expect, compare


class Program:
    def __init__(self, name, directory, inputs, bufs, launches, expect, globals_=(), what=""):
        self.name, self.dir, self.inputs = name, os.path.join(ROOT, directory), inputs
        self.bufs, self.launches, self.expect, self.globals = bufs, launches, expect, list(globals_)
        self.what = what

    def min_arch(self):
        """The highest .target of the inputs (a device below it cannot run the program)."""
        best = 0
        for p in self.inputs:
            with open(os.path.join(self.dir, p), "rb") as f:
                m = re.search(rb"^\s*\.target\s+sm_(\d+)", f.read(1 << 20), re.M)
            if m:
                best = max(best, int(m.group(1)))
        return best


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def u32(x):
    return x & 0xFFFFFFFF


def i32(x):
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


# ---- wave: clang CUDA kernel + NVRTC device function + libdevice (__nv_expf, __nv_sinf)
def _wave():
    n = 1000
    rng = random.Random(0x5EED01)
    xs = array.array("f", [rng.uniform(-4.0, 4.0) for _ in range(n)])
    scales = [1.0, 0.5, 0.25, -2.0]  # rt_scales in wave_lib.cu

    def expect(inp):
        out = []
        for i, x in enumerate(inp["in"]):
            out += [f32(f32(x * scales[i & 3]) + 1.0), f32(math.exp(-x)), f32(math.sin(x))]
        return {"out": ("f", out)}

    return Program(
        "wave", "fixtures/gpu/wave",
        ["wave_kernel.ptx", "wave_lib.ptx", "../../ptx/libdevice/libdevice.sm70.ptx"],
        [Buf("in", "f", xs), Buf("out", "f", count=3 * n, ulps=2)],
        [Launch("k_wave", (n + 127) // 128, 128, ["out", "in", ("i32", n)])],
        expect,
        what="clang CUDA kernel -> NVRTC rt_shape (+ its __constant__ table) and libdevice __nv_expf/__nv_sinf")


# ---- hash: NVRTC kernel + clang C (function-pointer table, symbol+offset initializers) + NVVM
def _hash():
    n = 4096
    rng = random.Random(0x5EED02)
    xs = array.array("I", [rng.getrandbits(32) for _ in range(n)])
    keys = [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]       # rt_keys (hash_kernel.cu)
    salt = [0x9E3779B9, 0x7F4A7C15, 0xF39CC060, 0x5CED1E57]       # c_salt (hash_c.c)
    table = [3, 1, 4, 1, 5, 9, 2, 6]                              # c_table
    tab_ptrs = [table[3], table[5]]                               # *c_tab_ptrs[0], [1]
    fold = [17, u32(-559038737), 305419896, 42]                   # nv_fold_tab (hash_nv.ll)

    def lc_mix(x):
        x ^= salt[x & 3]
        x = u32(x * 0x9E3779B1)
        x ^= u32(tab_ptrs[x & 1] + table[x >> 29])
        return x ^ (x >> 16)

    def c_rotl(x):
        return u32((x << 7) | (x >> 25))

    def nv_twist(x):
        m = u32(x * u32(-2048144789))
        return m ^ (m >> 13)

    ops = [c_rotl, nv_twist, lc_mix]                              # c_ops

    def expect(inp):
        out = []
        for i, x in enumerate(inp["in"]):
            h = ops[i % 3](lc_mix(x ^ keys[i & 3]))
            out.append(u32(h + fold[i & 3]) ^ u32(i << 5))
        return {"out": ("I", out)}

    return Program(
        "hash", "fixtures/gpu/hash",
        ["hash_kernel.ptx", "hash_c.ptx", "hash_nv.ptx"],
        [Buf("in", "I", xs), Buf("out", "I", count=n)],
        [Launch("k_hash", n // 256, 256, ["out", "in", ("i32", n)])],
        expect,
        [Global("c_ops", 24, compare=False),   # function addresses: they differ between images
         Global("c_tab_ptrs", 16, compare=False),
         Global("c_table", 32, "I", lambda inp: table)],
        what="NVRTC kernel -> clang C lc_mix, c_ops {module-local, NVVM, clang} called through pointers, NVVM nv_fold")


# ---- rules: clang CUDA kernel + clang C + NVVM + NVRTC + GCC: weak, common, .extern .shared
def _rules():
    n, block = 256, 64
    rng = random.Random(0x5EED03)
    xs = array.array("i", [rng.randint(-100000, 100000) for _ in range(n)])

    def expect(inp):
        x = list(inp["in"])
        out = []
        for i in range(n):
            t, base = i % block, i - i % block
            v = x[i] & 1023
            ring = x[base + (t + 1) % block] + 2 * x[base + (t + block - 1) % block]
            out += [1 * 1000 + 11, i32(3 * x[i]), i32(ring), i32(v * (v + 1) // 2 + i * 5)]
        return {"out": ("i", out)}

    return Program(
        "rules", "fixtures/gpu/rules",
        ["rules_c.ptx", "rules_kernel.ptx", "rules_nv.ptx", "rules_rt.ptx", "rules_g.ptx"],
        [Buf("in", "i", xs), Buf("out", "i", count=4 * n)],
        [Launch("k_rules", n // block, block, ["out", "in", ("i32", n)], shared=block * 4)],
        expect,
        [Global("w_var", 4, "i", lambda inp: [11]),
         Global("g_bias", 4, "i", lambda inp: [5]),
         Global("com_buf", 1024, "i", lambda inp: [i32(3 * v) for v in inp["in"]])],
        what="weak w_pick/w_var (first wins), .weak+.common com_buf, .extern .shared dyn, GCC g_tri")


# ---- libdevice-llvm-nvvm: the link case fixtures/link/real-libdevice-llvm-nvvm, NVVM's kernel
def _libdevice_llvm_nvvm():
    block, n = 64, 10
    tab = [1, -2]   # nv_local_tab[tid & 1] (nv_common.ll)

    def expect(inp):
        # com_arr is zero, nv_count is 0, pick() is cu_lib's weak 2, nv_dot3(com_arr, com_arr) is 0
        return {"out": ("f", [f32(math.sqrt(float(n + 2 + tab[t & 1]))) for t in range(block)])}

    return Program(
        "libdevice-llvm-nvvm", "fixtures/link/real-libdevice-llvm-nvvm",
        ["../../ptx/llvm/cu_lib.ptx", "../../ptx/nvvm/nv_common.ptx", "../../ptx/libdevice/libdevice.sm70.ptx"],
        [Buf("out", "f", count=block, ulps=2)],   # libdevice.sm70's __nv_sqrtf is sqrt.approx.f32
        [Launch("nv_kernel", 1, block, ["out", ("i32", n)])],
        expect,
        [Global("com_arr", 256, "i", lambda inp: [0] * 64),
         Global("nv_com_small", 8, compare=False)],   # 64 unsynchronized increments
        what="NVVM kernel -> its .common com_arr, clang CUDA's weak pick, libdevice __nv_sqrtf")


# ---- together: wave, hash and rules linked as one program of three kernels, whose split
# assembly (--split-kernels 3) puts each kernel in its own part: the function-pointer table, the
# .extern .shared array, the weak and common variables and libdevice then cross parts.
def _together(parts):
    def renamed(prog, name):
        return "%s.%s" % (prog.name, name)

    def own(prog, inp):
        return {b.name: inp[renamed(prog, b.name)] for b in prog.bufs if b.data is not None}

    def expect(inp):
        out = {}
        for prog in parts:
            for k, v in prog.expect(own(prog, inp)).items():
                out[renamed(prog, k)] = v
        return out

    inputs, bufs, launches, globals_ = [], [], [], []
    for prog in parts:
        where = os.path.relpath(prog.dir, os.path.join(ROOT, "fixtures", "gpu"))
        for i in prog.inputs:
            path = os.path.normpath(os.path.join(where, i))
            if path not in inputs:
                inputs.append(path)
        for b in prog.bufs:
            bufs.append(Buf(renamed(prog, b.name), b.typecode, b.data, b.count, b.ulps))
        for l in prog.launches:
            args = [renamed(prog, a) if isinstance(a, str) else a for a in l.args]
            launches.append(Launch(l.kernel, l.grid, l.block, args, l.shared))
        for g in prog.globals:
            check = g.expect and (lambda inp, g=g, prog=prog: g.expect(own(prog, inp)))
            globals_.append(Global(g.name, g.size, g.typecode, check, g.compare))
    return Program("together", "fixtures/gpu", inputs, bufs, launches, expect, globals_,
                   what="wave, hash and rules as one program of three kernels")


PROGRAMS = [f() for f in (_wave, _hash, _rules, _libdevice_llvm_nvvm)]
PROGRAMS.append(_together([p for p in PROGRAMS if p.name in ("wave", "hash", "rules")]))


# ============================================================================ reporting

class Report:
    def __init__(self):
        self.failures = 0

    def line(self, status, prog, path, msg):
        if status == "FAIL":
            self.failures += 1
        print("%-4s %-20s %-10s %s" % (status, prog, path, msg), flush=True)


def show(typecode, v):
    if typecode == "f":
        return "%r (0x%08x)" % (v, struct.unpack("<I", struct.pack("<f", v))[0])
    return "%d (0x%x)" % (v, v & 0xFFFFFFFF)


def ulp_distance(a, b):
    ia = struct.unpack("<i", struct.pack("<f", a))[0]
    ib = struct.unpack("<i", struct.pack("<f", b))[0]
    ia = ia if ia >= 0 else -(ia & 0x7FFFFFFF)   # sign-magnitude -> ordered integers
    ib = ib if ib >= 0 else -(ib & 0x7FFFFFFF)
    return abs(ia - ib)


def first_bit_difference(a, b):
    """Index of the first element whose bytes differ between arrays A and B (same typecode)."""
    n, ab, bb = a.itemsize, a.tobytes(), b.tobytes()
    for i in range(min(len(a), len(b))):
        if ab[i * n:(i + 1) * n] != bb[i * n:(i + 1) * n]:
            return i
    return min(len(a), len(b))


def first_difference(typecode, got, want, ulps=0):
    """Index of the first element of `got` (array) that differs from `want` (list), or None."""
    if len(got) != len(want):
        return min(len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if typecode == "f":
            if math.isnan(g) or math.isnan(w) or ulp_distance(g, w) > ulps:
                return i
        elif typecode in "iI":
            if (g & 0xFFFFFFFF) != (w & 0xFFFFFFFF):
                return i
        elif g != w:
            return i
    return None


# ============================================================================ linking (no GPU)

def run_tool(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def link_ptxld(prog, work, arch):
    """out.ptx (default target), out.fatbin (--arch ARCH) and, where ptxas is there, a fatbin of
    ptxas's machine code only (--gpu-code ARCH) and, where nvJitLink is there too, a cubin
    assembled in three parts (--split-kernels 3): returns (ptx, fatbin, sass fatbin or None,
    split cubin or None)."""
    ptx = os.path.join(work, prog.name + ".ptx")
    fatbin = os.path.join(work, prog.name + ".fatbin")
    sass = os.path.join(work, prog.name + ".sass.fatbin") if os.access(PTXAS, os.X_OK) else None
    split = None
    if sass and os.path.exists(nvjitlink._lib_path()):
        split = os.path.join(work, prog.name + ".split.cubin")
    links = [[PTXLD, "-o", ptx] + prog.inputs,
             [PTXLD, "--arch", arch, "-o", fatbin] + prog.inputs]
    if sass:
        links.append([PTXLD, "--gpu-code", arch, "-o", sass] + prog.inputs)
    if split:
        links.append([PTXLD, "--strip-debug", "--arch", arch, "--split-kernels", "3", "-o", split] + prog.inputs)
        os.environ["NVJITLINK"] = nvjitlink._lib_path()
    os.environ["PTXAS"] = PTXAS
    for argv in links:
        rc, out = run_tool(argv, prog.dir)
        if rc != 0:
            raise LinkError("ptxld %s: exit %d: %s" % (" ".join(argv[1:-len(prog.inputs)]), rc, out[:2000]))
    return ptx, fatbin, sass, split


class LinkError(Exception):
    pass


def link_nvjitlink(prog, work, arch):
    """The reference cubin; raises LinkError unless nvJitLink links without an error line."""
    cubin = os.path.join(work, prog.name + ".nvjitlink.cubin")
    cwd = os.getcwd()
    os.chdir(prog.dir)   # names as written (relative), as scripts/nvjitlink.py --cases gives them
    try:
        res = nvjitlink.link(prog.inputs, arch, prog.inputs, cubin)
    finally:
        os.chdir(cwd)
    if not res["ok"] or not os.path.isfile(cubin):
        raise LinkError("nvJitLink -arch=%s: add %s, complete %s: %s" % (
            arch, res["result_add"], res["result_complete"], "; ".join(res["error_lines"])[:2000]))
    return cubin


def elf_symbols(data):
    """Names in the symbol tables of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for s in secs:
        if s[1] not in (2, 11):          # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = secs[s[6]]
        for off in range(s[4], s[4] + s[5], 24):
            st_name, = struct.unpack_from("<I", data, off)
            start = strtab[4] + st_name
            names.add(data[start:data.index(b"\0", start)].decode("latin-1"))
    return names


def dry_run(programs, arch, work, report):
    """Everything short of the driver, for ARCH. Returns the number of failing programs."""
    have_ptxas = os.access(PTXAS, os.X_OK)
    have_cuobjdump = os.access(CUOBJDUMP, os.X_OK)
    for tool_path, what in ((PTXAS, "ptxas"), (CUOBJDUMP, "cuobjdump")):
        if not os.access(tool_path, os.X_OK):
            msg = "*** SKIPPED gpu dry run: %s not found at %s (just tools) ***" % (what, tool_path)
            print(msg, file=sys.stderr, flush=True)
            if os.environ.get("CI"):
                report.line("FAIL", "-", "tools", "%s missing and CI is set" % what)
    bad = 0
    for prog in programs:
        problems = []
        if int(arch[3:].rstrip("afk")) < prog.min_arch():
            report.line("SKIP", prog.name, "dry-run", "needs sm_%d, --arch is %s" % (prog.min_arch(), arch))
            continue
        try:
            ptx, fatbin, sass, split = link_ptxld(prog, work, arch)
            if split:
                syms = elf_symbols(open(split, "rb").read())
                missing = [l.kernel for l in prog.launches if l.kernel not in syms]
                if missing:
                    problems.append("the --split-kernels cubin lacks kernel(s) %s" % ", ".join(missing))
            if sass and have_cuobjdump:
                rc, out = run_tool([CUOBJDUMP, "-lelf", sass], work)
                want = "ELF file    1: %s.sass.sm_%s.cubin" % (prog.name, arch[3:])
                if rc != 0 or out.strip() != want:
                    problems.append("cuobjdump -lelf of the --gpu-code fatbin: exit %d: %s (want %s)" % (rc, out[:500], want))
            if have_ptxas:
                rc, out = run_tool([PTXAS, "-arch=" + arch, ptx, "-o", os.devnull], work)
                if rc != 0:
                    problems.append("ptxas -arch=%s rejects ptxld's out.ptx: %s" % (arch, out[:1000]))
            if have_cuobjdump:
                xdir = os.path.join(work, prog.name + ".fatbin.d")
                os.makedirs(xdir, exist_ok=True)
                rc, out = run_tool([CUOBJDUMP, "-xptx", "all", fatbin], xdir)
                entries = sorted(os.listdir(xdir))
                if rc != 0 or len(entries) != 1:
                    problems.append("cuobjdump -xptx all: exit %d, %d PTX entries: %s" % (rc, len(entries), out[:500]))
                else:
                    text = open(os.path.join(xdir, entries[0]), "rb").read()
                    if not re.search(rb"^\.target %s\b" % arch.encode(), text, re.M):
                        problems.append("the fatbin's PTX entry is not for %s" % arch)
                    if have_ptxas:
                        rc, out = run_tool([PTXAS, "-arch=" + arch, entries[0], "-o", os.devnull], xdir)
                        if rc != 0:
                            problems.append("ptxas rejects the fatbin's PTX entry: %s" % out[:1000])
        except LinkError as e:
            problems.append(str(e))
        try:
            cubin = link_nvjitlink(prog, work, arch)
            syms = elf_symbols(open(cubin, "rb").read())
            missing = [l.kernel for l in prog.launches if l.kernel not in syms]
            if missing:
                problems.append("nvJitLink's cubin lacks kernel(s) %s" % ", ".join(missing))
        except nvjitlink.HarnessError as e:
            print("*** SKIPPED gpu dry run nvJitLink: %s ***" % e, file=sys.stderr, flush=True)
            if os.environ.get("CI"):
                problems.append("nvJitLink not loadable and CI is set: %s" % e)
        except (LinkError, ValueError) as e:
            problems.append(str(e))
        try:
            inputs = {b.name: b.data for b in prog.bufs if b.data is not None}
            counts = {k: len(v) for k, (tc, v) in prog.expect(inputs).items()}
            for b in prog.bufs:
                if b.name in counts and counts[b.name] != b.count:
                    problems.append("host expectation for %s has %d values, the buffer %d" % (b.name, counts[b.name], b.count))
            for g in prog.globals:
                if g.expect:
                    g.expect(inputs)
        except Exception as e:  # a bug in the expectation code itself
            problems.append("host expectation: %r" % e)
        if problems:
            bad += 1
            for p in problems:
                report.line("FAIL", prog.name, "dry-run", p)
        else:
            report.line("ok", prog.name, "dry-run", "%s: ptxld PTX + fatbin + SASS fatbin + split cubin, nvJitLink cubin, ptxas (%s)" % (arch, prog.what))
    return bad


# ============================================================================ the CUDA driver

class CudaError(Exception):
    def __init__(self, call, code, text):
        super().__init__("%s failed: %d %s" % (call, code, text))
        self.call, self.code = call, code


CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6

CUresult = ctypes.c_int
CUdevice = ctypes.c_int
CUdeviceptr = ctypes.c_ulonglong
CUcontext = CUmodule = CUfunction = CUstream = ctypes.c_void_p
P = ctypes.POINTER


class Driver:
    """The driver API calls the test needs, with the C signatures of cuda.h (CUDA 12). Symbols
    that cuda.h maps to a versioned name (#define cuMemAlloc cuMemAlloc_v2, ...) are looked up
    by that name."""

    SIGNATURES = {
        "cuInit": [ctypes.c_uint],
        "cuDriverGetVersion": [P(ctypes.c_int)],
        "cuDeviceGetCount": [P(ctypes.c_int)],
        "cuDeviceGet": [P(CUdevice), ctypes.c_int],
        "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, CUdevice],
        "cuDeviceGetAttribute": [P(ctypes.c_int), ctypes.c_int, CUdevice],
        "cuDevicePrimaryCtxRetain": [P(CUcontext), CUdevice],
        "cuDevicePrimaryCtxRelease_v2": [CUdevice],
        "cuCtxSetCurrent": [CUcontext],
        "cuCtxSynchronize": [],
        "cuModuleLoadDataEx": [P(CUmodule), ctypes.c_void_p, ctypes.c_uint, P(ctypes.c_int), P(ctypes.c_void_p)],
        "cuModuleUnload": [CUmodule],
        "cuModuleGetFunction": [P(CUfunction), CUmodule, ctypes.c_char_p],
        "cuModuleGetGlobal_v2": [P(CUdeviceptr), P(ctypes.c_size_t), CUmodule, ctypes.c_char_p],
        "cuMemAlloc_v2": [P(CUdeviceptr), ctypes.c_size_t],
        "cuMemFree_v2": [CUdeviceptr],
        "cuMemcpyHtoD_v2": [CUdeviceptr, ctypes.c_void_p, ctypes.c_size_t],
        "cuMemcpyDtoH_v2": [ctypes.c_void_p, CUdeviceptr, ctypes.c_size_t],
        "cuLaunchKernel": [CUfunction, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           CUstream, P(ctypes.c_void_p), P(ctypes.c_void_p)],
        "cuGetErrorString": [CUresult, P(ctypes.c_char_p)],
        "cuGetErrorName": [CUresult, P(ctypes.c_char_p)],
    }

    def __init__(self, lib):
        self.lib = lib
        for name, argtypes in self.SIGNATURES.items():
            f = getattr(lib, name)
            f.argtypes = argtypes
            f.restype = CUresult
            setattr(self, name, f)

    def error_text(self, code):
        s, n = ctypes.c_char_p(), ctypes.c_char_p()
        name = n.value.decode() if self.cuGetErrorName(code, ctypes.byref(n)) == 0 and n.value else "?"
        text = s.value.decode() if self.cuGetErrorString(code, ctypes.byref(s)) == 0 and s.value else ""
        return "%s (%s)" % (name, text) if text else name

    def check(self, call, code):
        if code != 0:
            raise CudaError(call, code, self.error_text(code))


def open_driver(device_index):
    """(Driver, device, context, 'sm_XX', description) or raise Skip(why)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Skip("libcuda.so.1 cannot be loaded (no CUDA driver): %s" % e)
    try:
        cu = Driver(lib)
    except AttributeError as e:
        raise Skip("libcuda.so.1 lacks a driver API symbol: %s" % e)
    rc = cu.cuInit(0)
    if rc != 0:
        raise Skip("cuInit failed: %d %s" % (rc, cu.error_text(rc)))
    count = ctypes.c_int(0)
    cu.check("cuDeviceGetCount", cu.cuDeviceGetCount(ctypes.byref(count)))
    if count.value <= device_index:
        raise Skip("no CUDA device %d (%d device(s))" % (device_index, count.value))
    dev = CUdevice()
    cu.check("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), device_index))
    major, minor, version = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    cu.check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(ctypes.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    cu.check("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    cu.check("cuDriverGetVersion", cu.cuDriverGetVersion(ctypes.byref(version)))
    name = ctypes.create_string_buffer(256)
    cu.check("cuDeviceGetName", cu.cuDeviceGetName(name, 256, dev))
    ctx = CUcontext()
    cu.check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    cu.check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    arch = "sm_%d%d" % (major.value, minor.value)
    desc = "%s (%s), driver API %d.%d" % (name.value.decode(errors="replace"), arch,
                                        version.value // 1000, version.value % 1000 // 10)
    return cu, dev, ctx, arch, desc


class Skip(Exception):
    pass


class LoadError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def run_image(cu, image, prog, inputs):
    """Load IMAGE (bytes: PTX text, fatbin or cubin), run PROG's launches on INPUTS; returns
    ({buffer: array}, {global: (size, bytes)})."""
    logsize = 1 << 16
    errlog = ctypes.create_string_buffer(logsize)
    infolog = ctypes.create_string_buffer(logsize)
    opts = (ctypes.c_int * 4)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 4)(ctypes.cast(errlog, ctypes.c_void_p).value, logsize,
                                 ctypes.cast(infolog, ctypes.c_void_p).value, logsize)
    data = ctypes.create_string_buffer(image)   # a NUL after the bytes: PTX text must end in one
    mod = CUmodule()
    rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.cast(data, ctypes.c_void_p), 4, opts, vals)
    if rc != 0:
        log = errlog.value.decode(errors="replace").strip() or infolog.value.decode(errors="replace").strip()
        raise LoadError("cuModuleLoadDataEx: %s%s" % (cu.error_text(rc), ("; JIT log: " + log[:2000]) if log else ""), rc)
    ptrs = {}
    try:
        for b in prog.bufs:
            p = CUdeviceptr()
            cu.check("cuMemAlloc_v2", cu.cuMemAlloc_v2(ctypes.byref(p), b.nbytes))
            ptrs[b.name] = p
            # inputs as given; outputs filled with 0xA5 so that an element never written shows
            host = ctypes.create_string_buffer(inputs[b.name].tobytes() if b.data is not None else b"\xa5" * b.nbytes)
            cu.check("cuMemcpyHtoD_v2", cu.cuMemcpyHtoD_v2(p, host, b.nbytes))
        for l in prog.launches:
            fn = CUfunction()
            cu.check("cuModuleGetFunction(%s)" % l.kernel,
                     cu.cuModuleGetFunction(ctypes.byref(fn), mod, l.kernel.encode()))
            # kernelParams: an array of pointers, one to each argument's value
            values = [CUdeviceptr(ptrs[a].value) if isinstance(a, str) else ctypes.c_int32(a[1]) for a in l.args]
            params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            cu.check("cuLaunchKernel(%s)" % l.kernel,
                     cu.cuLaunchKernel(fn, l.grid, 1, 1, l.block, 1, 1, l.shared, None, params, None))
            cu.check("cuCtxSynchronize", cu.cuCtxSynchronize())
        outs = {}
        for b in prog.bufs:
            if b.data is None:
                host = ctypes.create_string_buffer(b.nbytes)
                cu.check("cuMemcpyDtoH_v2", cu.cuMemcpyDtoH_v2(host, ptrs[b.name], b.nbytes))
                outs[b.name] = array.array(b.typecode, host.raw)
        globs = {}
        for g in prog.globals:
            p, size = CUdeviceptr(), ctypes.c_size_t()
            cu.check("cuModuleGetGlobal_v2(%s)" % g.name,
                     cu.cuModuleGetGlobal_v2(ctypes.byref(p), ctypes.byref(size), mod, g.name.encode()))
            host = ctypes.create_string_buffer(max(1, size.value))
            cu.check("cuMemcpyDtoH_v2", cu.cuMemcpyDtoH_v2(host, p, size.value))
            globs[g.name] = (size.value, host.raw[:size.value])
        return outs, globs
    finally:
        for p in ptrs.values():
            cu.cuMemFree_v2(p)
        cu.cuModuleUnload(mod)


def gpu_run(cu, arch, programs, work, report):
    for prog in programs:
        if int(arch[3:].rstrip("afk")) < prog.min_arch():
            report.line("SKIP", prog.name, "-", "*** needs sm_%d, the device is %s ***" % (prog.min_arch(), arch))
            continue
        inputs = {b.name: b.data for b in prog.bufs if b.data is not None}
        images = []
        try:
            ptx, fatbin, sass, split = link_ptxld(prog, work, arch)
            images += [("ptx", open(ptx, "rb").read()), ("fatbin", open(fatbin, "rb").read())]
            if sass:
                images.append(("sass-fatbin", open(sass, "rb").read()))
            if split:
                images.append(("split-cubin", open(split, "rb").read()))
        except LinkError as e:
            report.line("FAIL", prog.name, "ptxld", str(e))
        try:
            images.append(("nvjitlink", open(link_nvjitlink(prog, work, arch), "rb").read()))
        except nvjitlink.HarnessError as e:
            if os.environ.get("CI"):
                report.line("FAIL", prog.name, "nvjitlink", "nvJitLink not loadable and CI is set: %s" % e)
            else:
                report.line("SKIP", prog.name, "nvjitlink", "*** no reference: %s ***" % e)
        except LinkError as e:
            report.line("FAIL", prog.name, "nvjitlink", str(e))
        results = {}
        for path, image in images:
            try:
                results[path] = run_image(cu, image, prog, inputs)
            except LoadError as e:
                if e.code == CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
                    report.line("SKIP", prog.name, path, "*** the driver is older than the PTX ISA version: %s ***" % e)
                else:
                    report.line("FAIL", prog.name, path, str(e))
            except CudaError as e:
                report.line("FAIL", prog.name, path, str(e))
                if e.code >= 700:   # a launch error leaves the context unusable
                    raise
        want = prog.expect(inputs)
        ref = results.get("nvjitlink")
        for path, (outs, globs) in results.items():
            problems, summary = [], []
            for b in prog.bufs:
                if b.data is not None:
                    continue
                tc, expected = want[b.name]
                got = outs[b.name]
                if ref is not None and path != "nvjitlink":
                    other = ref[0][b.name]
                    if got.tobytes() != other.tobytes():
                        i = first_bit_difference(got, other)
                        problems.append("%s[%d] = %s, nvJitLink's cubin gives %s" % (
                            b.name, i, show(tc, got[i]), show(tc, other[i])))
                        continue
                i = first_difference(b.typecode, got, expected, b.ulps)
                if i is not None:
                    problems.append("%s[%d] = %s, the host expects %s%s" % (
                        b.name, i, show(tc, got[i]), show(tc, expected[i]),
                        " (within %d ulp)" % b.ulps if tc == "f" else ""))
                else:
                    summary.append("%s: %d %s" % (b.name, b.count, {"f": "floats", "i": "ints", "I": "uints"}[tc]))
            for g in prog.globals:
                size, raw = globs[g.name]
                if size != g.size:
                    problems.append("global %s is %d bytes, not %d" % (g.name, size, g.size))
                    continue
                if g.compare and ref is not None and path != "nvjitlink" and raw != ref[1][g.name][1]:
                    vals, rvals = array.array(g.typecode, raw), array.array(g.typecode, ref[1][g.name][1])
                    i = first_bit_difference(vals, rvals)
                    problems.append("global %s[%d] = %s, nvJitLink's cubin gives %s" % (
                        g.name, i, show(g.typecode, vals[i]), show(g.typecode, rvals[i])))
                    continue
                if g.expect:
                    vals, exp = array.array(g.typecode, raw), g.expect(inputs)
                    i = first_difference(g.typecode, vals, exp)
                    if i is not None:
                        problems.append("global %s[%d] = %s, the host expects %s" % (
                            g.name, i, show(g.typecode, vals[i]), show(g.typecode, exp[i])))
                        continue
                summary.append(g.name if g.expect or g.compare else "%s (size)" % g.name)
            if problems:
                report.line("FAIL", prog.name, path, "; ".join(problems))
            else:
                msg = "%s match the host" % ", ".join(summary)
                if ref is not None and path != "nvjitlink":
                    msg += " and nvJitLink's cubin bit for bit"
                report.line("PASS", prog.name, path, msg)


# ============================================================================ main

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="links and ptxas checks only; never loads the driver")
    ap.add_argument("--arch", default=None, help="target of the dry run (default sm_80; the device's on a GPU)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    ap.add_argument("--keep", default=None, help="write the linked images to this folder and keep them")
    ap.add_argument("programs", nargs="*", help="program names (default: all): " + ", ".join(p.name for p in PROGRAMS))
    args = ap.parse_args(argv[1:])
    programs = PROGRAMS
    if args.programs:
        unknown = [n for n in args.programs if n not in {p.name for p in PROGRAMS}]
        if unknown:
            ap.error("unknown program(s): %s" % ", ".join(unknown))
        programs = [p for p in PROGRAMS if p.name in args.programs]
    if not os.access(PTXLD, os.X_OK):
        print("gpu_test: ptxld not found at %s (cargo build, or set PTXLD)" % PTXLD, file=sys.stderr)
        return 1
    report = Report()
    work = args.keep or tempfile.mkdtemp(prefix="ptxld-gpu.")
    os.makedirs(work, exist_ok=True)
    try:
        if args.dry_run:
            dry_run(programs, args.arch or "sm_80", work, report)
            print("gpu dry run: %d program(s), %d failing" % (len(programs), report.failures))
            return 1 if report.failures else 0
        try:
            cu, dev, ctx, arch, desc = open_driver(args.device)
        except Skip as why:
            dry_run(programs, args.arch or "sm_80", work, report)
            print("*** SKIPPED gpu: %s ***" % why, flush=True)
            return 1 if report.failures else 0
        if args.arch and args.arch != arch:
            print("gpu_test: --arch %s ignored: the device is %s" % (args.arch, arch), file=sys.stderr)
        print("gpu: %s" % desc, flush=True)
        try:
            gpu_run(cu, arch, programs, work, report)
        except CudaError as e:
            report.line("FAIL", "-", "driver", "stopped after %s" % e)
        finally:
            cu.cuDevicePrimaryCtxRelease_v2(dev)
        print("gpu: %d program(s) on %s, %d failing" % (len(programs), arch, report.failures))
        return 1 if report.failures else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
