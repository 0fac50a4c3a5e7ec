#!/usr/bin/env python3
"""Hand-made minimal reproductions of the ptxas `Attempted to Dereference Out of Bounds` failure.

  gen_min.py OUTDIR

Writes (each is ONE module with two compile units, CU1 for f(), CU2 for g()):
  min_fail.ptx        CU2 has its own abbrev table at .debug_abbrev+N, CU1 has DW_OP_addr __local_depot0
                      -> ptxas -g: "Attempted to Dereference Out of Bounds"
  min_nodepot.ptx     same, but the DW_OP_addr operand is 0 instead of __local_depot0  -> accepted
  min_union.ptx       one abbrev table (union, distinct codes) at offset 0 for both CUs   -> accepted
  min_depot_in_cu2.ptx  depot reference only in CU2 (g has the depot), tables separate     -> fails
  min_samecodes.ptx   separate tables, but CU2's table is a byte-identical copy of CU1's  -> accepted
"""
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'


def uleb(v):
    b = bytearray()
    while True:
        x = v & 0x7f
        v >>= 7
        b.append(x | (0x80 if v else 0))
        if not v:
            return bytes(b)


def abbrev(code, tag, children, attrs):
    b = uleb(code) + uleb(tag) + bytes([children])
    for a, f in attrs:
        b += uleb(a) + uleb(f)
    return b + b'\0\0'


# attribute / form constants
NAME, STMT, LOW, HIGH, LOC, PROD = 0x03, 0x10, 0x11, 0x12, 0x02, 0x25
STRING, DATA4, ADDR, BLOCK1 = 0x08, 0x06, 0x01, 0x0a
CU, SUB, VAR = 0x11, 0x2e, 0x34


def table1(base=1):
    return (abbrev(base, CU, 1, [(NAME, STRING), (STMT, DATA4)]) +
            abbrev(base + 1, SUB, 1, [(LOW, ADDR), (HIGH, ADDR), (NAME, STRING)]) +
            abbrev(base + 2, VAR, 0, [(NAME, STRING), (LOC, BLOCK1)]))


def table2(base=1):
    # a different shape: CU has a producer first; subprogram has the name first
    return (abbrev(base, CU, 1, [(PROD, STRING), (NAME, STRING), (STMT, DATA4)]) +
            abbrev(base + 1, SUB, 1, [(NAME, STRING), (LOW, ADDR), (HIGH, ADDR)]) +
            abbrev(base + 2, VAR, 0, [(LOC, BLOCK1), (NAME, STRING)]))


def s(x):
    return list(x.encode()) + [0]


def cu(items):
    """items: list of ints (bytes) or ('b32'|'b64', expr). Returns PTX lines incl. header."""
    size = 2 + 4 + 1 + sum(1 if isinstance(i, int) else (4 if i[0] == 'b32' else 8) for i in items)
    return size, items


def emit_items(items):
    lines, run = [], []
    for i in items:
        if isinstance(i, int):
            run.append(i)
            continue
        if run:
            lines.append('.b8 ' + ','.join(map(str, run)))
            run = []
        lines.append('.%s %s' % i)
    if run:
        lines.append('.b8 ' + ','.join(map(str, run)))
    return lines


def cu_lines(abbrev_expr, body):
    size = 2 + 4 + 1 + sum(1 if isinstance(i, int) else (4 if i[0] == 'b32' else 8) for i in body)
    return ['.b32 %d' % size, '.b8 2,0', '.b32 %s' % abbrev_expr, '.b8 8'] + emit_items(body)


def var_loc(depot):
    # DW_OP_addr <8 bytes>
    return [9, 0x03, ('b64', depot)] if depot else [9, 0x03, 0, 0, 0, 0, 0, 0, 0, 0]


def cu1_body(c, depot='__local_depot0', shape=1):
    # c = first code of the table used; shape 1 = table1 layout
    return ([c] + s('m1.c') + [('b32', '.debug_line')] +
            [c + 1, ('b64', 'Lfunc_begin0'), ('b64', 'Lfunc_end0')] + s('f') +
            [c + 2] + s('x') + var_loc(depot) + [0] + [0])


def cu2_body_t2(c, depot=None):
    return ([c] + s('prod') + s('m2.c') + [('b32', '.debug_line')] +
            [c + 1] + s('g') + [('b64', 'Lfunc_begin1'), ('b64', 'Lfunc_end1')] +
            [c + 2] + var_loc(depot) + s('y') + [0] + [0])


def cu2_body_t1(c, depot=None):
    return ([c] + s('m2.c') + [('b32', '.debug_line')] +
            [c + 1, ('b64', 'Lfunc_begin1'), ('b64', 'Lfunc_end1')] + s('g') +
            [c + 2] + s('y') + var_loc(depot) + [0] + [0])


CODE = r'''.version 7.0
.target sm_80, debug
.address_size 64

.visible .func f()
{
	.local .align 4 .b8 	__local_depot0[4];
	.reg .b64 	%SPL;
	.reg .b32 	%r<2>;
	.loc	1 1 0
Lfunc_begin0:
	mov.u64 	%SPL, __local_depot0;
	mov.u32 	%r1, 7;
	.loc	1 2 0
	st.local.u32 	[%SPL], %r1;
	ret;
Lfunc_end0:
}

.visible .func g()
{
	.local .align 4 .b8 	__local_depot1[4];
	.reg .b64 	%SPL;
	.reg .b32 	%r<2>;
	.loc	2 1 0
Lfunc_begin1:
	mov.u64 	%SPL, __local_depot1;
	mov.u32 	%r1, 9;
	.loc	2 3 0
	st.local.u32 	[%SPL], %r1;
	ret;
Lfunc_end1:
}
	.file	1 "m1.c"
	.file	2 "m2.c"
'''


def module(abbrev_bytes, info_lines):
    t = CODE + '\t.section\t.debug_abbrev\n\t{\n'
    for i in range(0, len(abbrev_bytes), 16):
        t += '.b8 ' + ','.join(map(str, abbrev_bytes[i:i + 16])) + '\n'
    t += '\t}\n\t.section\t.debug_info\n\t{\n' + '\n'.join(info_lines) + '\n\t}\n'
    return t


t1 = table1() + b'\0'
t2 = table2() + b'\0'
N = len(t1)
files = {
    'min_fail.ptx': module(t1 + t2, cu_lines('.debug_abbrev', cu1_body(1)) +
                           cu_lines('.debug_abbrev+%d' % N, cu2_body_t2(1))),
    'min_nodepot.ptx': module(t1 + t2, cu_lines('.debug_abbrev', cu1_body(1, depot=None)) +
                              cu_lines('.debug_abbrev+%d' % N, cu2_body_t2(1))),
    'min_union.ptx': module(table1(1) + table2(4) + b'\0',
                            cu_lines('.debug_abbrev', cu1_body(1)) +
                            cu_lines('.debug_abbrev', cu2_body_t2(4, depot='__local_depot1'))),
    'min_depot_in_cu2.ptx': module(t1 + t2, cu_lines('.debug_abbrev', cu1_body(1, depot=None)) +
                                   cu_lines('.debug_abbrev+%d' % N, cu2_body_t2(1, depot='__local_depot1'))),
    'min_samecodes.ptx': module(t1 + t1, cu_lines('.debug_abbrev', cu1_body(1)) +
                                cu_lines('.debug_abbrev+%d' % N, cu2_body_t1(1, depot='__local_depot1'))),
}
for n, t in files.items():
    open(os.path.join(out, n), 'w').write(t)
    print(n)
