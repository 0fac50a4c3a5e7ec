#!/usr/bin/env python3
"""Check a merged module's cubin DWARF against the inputs assembled alone.

  verify.py MERGED.ptx IN1.ptx IN2.ptx ...   [ARCH=sm_80 env var, PTXAS env var]

1. ptxas -g -c each input alone and the merged module; applyrel.py each cubin -> .elf.
2. llvm-dwarfdump-14 --debug-info: split into compile units, normalize (drop DIE offsets,
   stmt_list / abbrev offsets / loc-list offsets / ref4 offsets / DW_OP_addr operands, keep names), and require
   merged CU #i == input #i's CU (in order), for every input that has a .debug_info.
3. llvm-dwarfdump-14 --debug-line: line-table rows as (address, line, column, FILE NAME, flags)
   grouped by sequence; require every input's sequences to occur in the merged table.
4. llvm-dwarfdump-14 --verify on the merged .elf: only 'overlapping address ranges' errors allowed
   (expected in a relocatable cubin: every function's section starts at 0).
Prints a summary; exit status 1 on any mismatch.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PTXAS = os.environ.get('PTXAS', os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../.tools/nv/nvidia/cuda_nvcc/bin/ptxas'))
ARCH = os.environ.get('ARCH', 'sm_80')
DD = 'llvm-dwarfdump-14'


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def build(ptx, tag):
    cub = os.path.join(HERE, 'out', 'v_%s.cubin' % tag)
    elf = cub[:-6] + '.elf'
    rc, o, e = sh([PTXAS, '-arch=' + ARCH, '-g', '-c', ptx, '-o', cub])
    if rc:
        raise SystemExit('ptxas failed on %s:\n%s' % (ptx, e))
    sh([sys.executable, os.path.join(HERE, 'applyrel.py'), cub, elf])
    return elf


def cus(elf):
    rc, o, e = sh([DD, '--debug-info', elf])
    units = []
    cur = None
    for l in o.splitlines():
        if ': Compile Unit:' in l:
            cur = []
            units.append(cur)
            continue
        if cur is None or not l.strip():
            continue
        l = re.sub(r'^0x[0-9a-f]+:', '', l)
        l = re.sub(r'cu \+ 0x[0-9a-f]+ => \{0x[0-9a-f]+\}', 'REF', l)
        l = re.sub(r'\{0x[0-9a-f]+\}', 'REF', l)
        l = re.sub(r'\(0x[0-9a-f]+ "', '(REF "', l)
        # global variables share .nv.global/.nv.shared/... in the merged module, so their
        # section-relative addresses legitimately move: compare DW_OP_addr operands symbolically
        l = re.sub(r'DW_OP_addr 0x[0-9a-f]+', 'DW_OP_addr ADDR', l)
        if 'DW_AT_stmt_list' in l:
            continue
        l = re.sub(r'DW_AT_location\t\(0x[0-9a-f]+:', 'DW_AT_location\t(LOCLIST:', l)
        cur.append(l.strip())
    return units


def lines(elf):
    rc, o, e = sh([DD, '--debug-line', elf])
    files = {}
    seqs = []
    cur = []
    tables = 0
    for l in o.splitlines():
        if l.startswith('debug_line['):
            tables += 1
            files = {}
        m = re.match(r'file_names\[\s*(\d+)\]:', l.strip())
        if m:
            fidx = int(m.group(1))
        m = re.match(r'\s*name: "(.*)"', l)
        if m:
            files[fidx] = m.group(1)
        m = re.match(r'(0x[0-9a-f]{16})\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s*(.*)$', l)
        if m:
            row = (int(m.group(1), 16), int(m.group(2)), int(m.group(3)), files.get(int(m.group(4)), '?%s' % m.group(4)), m.group(5).strip())
            cur.append(row)
            if 'end_sequence' in row[4]:
                seqs.append(tuple(cur))
                cur = []
    return tables, seqs


def main():
    merged, inputs = sys.argv[1], sys.argv[2:]
    ok = True
    melf = build(merged, 'merged')
    mcus = cus(melf)
    mtables, mseqs = lines(melf)
    print('merged: %d compile unit(s), %d line table(s), %d line sequence(s)' % (len(mcus), mtables, len(mseqs)))
    ci = 0
    for k, ptx in enumerate(inputs):
        elf = build(ptx, 'in%d' % k)
        icus = cus(elf)
        _, iseqs = lines(elf)
        for cu in icus:
            if ci >= len(mcus):
                print('  input %d (%s): CU missing in merged output' % (k, ptx))
                ok = False
                continue
            name = next((l for l in cu if 'DW_AT_name' in l), '?')
            if mcus[ci] == cu:
                print('  input %d CU %s: identical (%d lines)' % (k, name, len(cu)))
            else:
                ok = False
                print('  input %d CU %s: DIFFERS' % (k, name))
                import difflib
                for d in list(difflib.unified_diff(cu, mcus[ci], lineterm='', n=1))[:30]:
                    print('     ' + d)
            ci += 1
        missing = [s for s in iseqs if s not in mseqs]
        files = sorted({r[3] for s in iseqs for r in s})
        print('  input %d line sequences: %d, missing in merged: %d, files %s' % (k, len(iseqs), len(missing), files))
        if missing:
            ok = False
            for s in missing[:2]:
                print('     missing: %s' % (s[:3],))
    if ci != len(mcus):
        print('  merged has %d extra CU(s)' % (len(mcus) - ci))
        ok = False
    rc, o, e = sh([DD, '--verify', melf])
    errs = sorted(set(l.strip() for l in (o + e).splitlines() if l.strip().startswith('error:')))
    bad = [x for x in errs if 'overlapping address ranges' not in x]
    print('  llvm-dwarfdump --verify errors: %s' % (errs or 'none'))
    if bad:
        ok = False
    print('RESULT: %s' % ('OK' if ok else 'MISMATCH'))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
