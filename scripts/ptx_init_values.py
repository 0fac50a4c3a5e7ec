#!/usr/bin/env python3
"""Print the bytes ptxas stores for each initialized .global variable of a PTX file.

  scripts/ptx_init_values.py FILE.ptx [-arch=sm_80]

Runs `$PTXAS -c` and reads the .nv.global.init section of the relocatable cubin (ELF64).
Useful as an oracle for initializer/constant-expression evaluation. Values filled in by
relocations (generic(sym), function addresses) show as zero bytes.
"""
import os
import struct
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    arch = sys.argv[2] if len(sys.argv) > 2 else "-arch=sm_80"
    ptxas = os.environ.get("PTXAS", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "out.cubin")
        subprocess.run([ptxas, arch, "-c", sys.argv[1], "-o", cubin], check=True)
        d = open(cubin, "rb").read()
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]

    def cstr(table, off):
        start = secs[table][4] + off
        return d[start:d.index(b"\0", start)].decode()

    names = [cstr(shstrndx, s[0]) for s in secs]
    if ".nv.global.init" not in names:
        return
    init_idx = names.index(".nv.global.init")
    init = d[secs[init_idx][4]:secs[init_idx][4] + secs[init_idx][5]]
    symtab = secs[names.index(".symtab")]
    for i in range(symtab[5] // 24):
        n, _info, _other, shndx, val, size = struct.unpack_from("<IBBHQQ", d, symtab[4] + i * 24)
        if shndx == init_idx and size:
            print("%-24s %4d  %s" % (cstr(symtab[6], n), size, init[val:val + size].hex()))


if __name__ == "__main__":
    main()
