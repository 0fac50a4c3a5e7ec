#!/usr/bin/env python3
"""Wall time of --split-kernels N against one ptxas, on the same machine in the same rounds.

    python3 scripts/split_bench.py [--sets libdevice,cross] [--parts 2,4] [--rounds 3]

Sets (docs/performance.md, "Split assembly"):
  libdevice  64 kernels, each calling 24 of libdevice's scalar math functions (chosen with a
             fixed seed), linked with fixtures/ptx/libdevice/libdevice.sm70.ptx; generated into
             target/split-libdevice/.
  cross      the 105 MB cross-producer set of `just bench-cross` (target/bench-cross-110, made by
             `cargo bench --bench parse -- cross`), 2090 kernels; DWARF left out (--strip-debug),
             as split links need.

Each round links every configuration once (`--emit cubin --arch sm_90`, the order rotating from
round to round); the report is the median wall time of each and its ratio to one ptxas. Every
split cubin is checked to have the kernels and variables of the one-ptxas cubin (by name, from the
ELF symbol tables). Needs PTXAS and NVJITLINK (or NVJITLINK_SO: `source scripts/tools.env`).
"""
import argparse
import os
import random
import re
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTXLD = os.path.join(ROOT, "target", "release", "ptxld")
LIBDEVICE = os.path.join(ROOT, "fixtures", "ptx", "libdevice", "libdevice.sm70.ptx")

PROTO = re.compile(
    r"^\.visible \.func\s+\(\.param \.b(32|64) func_retval0\) (__nv_\w+)\(\s*((?:\.param \.b\d+ \w+,?\s*)*)\)",
    re.M)


def scalar_functions():
    """libdevice's functions whose result and parameters are all 32-bit or all 64-bit."""
    text = open(LIBDEVICE).read()
    found = []
    for m in PROTO.finditer(text):
        width, name, params = m.group(1), m.group(2), m.group(3)
        widths = re.findall(r"\.param \.b(\d+)", params)
        if widths and all(w == width for w in widths):
            found.append((name, int(width), len(widths)))
    return found


def libdevice_set(kernels=64, calls=24, seed=2026):
    """Writes the kernels module; returns the inputs."""
    out = os.path.join(ROOT, "target", "split-libdevice")
    os.makedirs(out, exist_ok=True)
    funcs = scalar_functions()
    rng = random.Random(seed)
    lines = [".version 7.0", ".target sm_70", ".address_size 64", ""]
    for name, width, n in funcs:
        params = ", ".join(".param .b%d p%d" % (width, i) for i in range(n))
        lines.append(".extern .func (.param .b%d r) %s(%s);" % (width, name, params))
    for k in range(kernels):
        lines += [
            "",
            ".visible .entry k%d(.param .u64 out, .param .u64 in)" % k,
            "{",
            "\t.reg .b32 %r<4>;",
            "\t.reg .b64 %rd<8>;",
            "\tld.param.u64 %rd1, [in];",
            "\tld.param.u64 %rd2, [out];",
            "\tmov.u32 %r1, %tid.x;",
            "\tmul.wide.u32 %rd3, %r1, 8;",
            "\tadd.s64 %rd4, %rd1, %rd3;",
            "\tadd.s64 %rd5, %rd2, %rd3;",
            "\tld.global.b64 %rd6, [%rd4];",
            "\tld.global.b32 %r2, [%rd4];",
        ]
        for name, width, n in rng.sample(funcs, min(calls, len(funcs))):
            reg = "%r2" if width == 32 else "%rd6"
            decls = " ".join(".param .b%d a%d;" % (width, i) for i in range(n))
            stores = " ".join("st.param.b%d [a%d], %s;" % (width, i, reg) for i in range(n))
            args = ", ".join("a%d" % i for i in range(n))
            lines.append("\t{ %s .param .b%d r; %s call.uni (r), %s, (%s); ld.param.b%d %s, [r]; }"
                         % (decls, width, stores, name, args, width, reg))
        lines += [
            "\tst.global.b64 [%rd5], %rd6;",
            "\tst.global.b32 [%rd5+4], %r2;",
            "\tret;",
            "}",
        ]
    path = os.path.join(out, "kernels.ptx")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return [path, LIBDEVICE]


def cross_set():
    d = os.path.join(ROOT, "target", "bench-cross-110")
    if not os.path.isdir(d):
        sys.exit("no %s: run `cargo bench --bench parse -- cross` (just bench-cross) first" % d)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ptx"))


def names(cubin):
    """Kernels (symbols with CUDA's STO_ENTRY) and variables of a cubin, by name: read from its
    ELF symbol table here, as cuobjdump -elf takes tens of minutes on a 100 MB cubin."""
    data = open(cubin, "rb").read()
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    kernels, variables = set(), set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]][4]
        for j in range(sh[5] // 24):
            name, info, other, _, _, _ = struct.unpack_from("<IBBHQQ", data, sh[4] + j * 24)
            end = data.index(b"\0", strtab + name)
            n = data[strtab + name:end].decode()
            if info & 0xf == 2 and other & 0x10:  # STT_FUNC, STO_ENTRY
                kernels.add(n)
            elif info & 0xf == 1:  # STT_OBJECT
                variables.add(n)
    return kernels, variables


def link(inputs, parts, out):
    cmd = [PTXLD, "--strip-debug", "--emit", "cubin", "--arch", "sm_90", "-o", out]
    if parts > 1:
        cmd += ["--split-kernels", str(parts)]
    start = time.monotonic()
    r = subprocess.run(cmd + inputs, capture_output=True, text=True)
    took = time.monotonic() - start
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd[:9]), r.stderr[-2000:]))
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="libdevice,cross")
    ap.add_argument("--parts", default="2,4")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if "NVJITLINK" not in os.environ and "NVJITLINK_SO" in os.environ:
        os.environ["NVJITLINK"] = os.environ["NVJITLINK_SO"]
    for var in ("PTXAS", "NVJITLINK"):
        if var not in os.environ:
            sys.exit("%s is not set: source scripts/tools.env" % var)
    configs = [1] + [int(p) for p in a.parts.split(",")]
    out = os.path.join(ROOT, "target", "split-bench")
    os.makedirs(out, exist_ok=True)
    print("machine: %d cores" % os.cpu_count())
    for name in a.sets.split(","):
        inputs = {"libdevice": libdevice_set, "cross": cross_set}[name]()
        mb = sum(os.path.getsize(p) for p in inputs) / 1e6
        times = {c: [] for c in configs}
        for r in range(a.rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                times[c].append(link(inputs, c, os.path.join(out, "%s-%d.cubin" % (name, c))))
        whole = names(os.path.join(out, "%s-1.cubin" % name))
        for c in configs[1:]:
            got = names(os.path.join(out, "%s-%d.cubin" % (name, c)))
            if got != whole:
                sys.exit("%s: %d parts: other kernels or variables than one ptxas" % (name, c))
        base = statistics.median(times[1])
        print("%s (%d inputs, %.1f MB, %d kernels): one ptxas %.2f s" % (
            name, len(inputs), mb, len(whole[0]), base))
        for c in configs[1:]:
            m = statistics.median(times[c])
            print("  --split-kernels %d: %.2f s, %.2fx faster (runs: %s)" % (
                c, m, base / m, ", ".join("%.2f" % t for t in times[c])))


if __name__ == "__main__":
    main()
