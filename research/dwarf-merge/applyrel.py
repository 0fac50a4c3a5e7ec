#!/usr/bin/env python3
"""Make a cubin's DWARF readable by binutils/llvm-dwarfdump.

  applyrel.py IN.cubin OUT.elf

Applies R_CUDA_32 (1) and R_CUDA_64 (2) relocations (S + A; REL: A read from the place) of every
.rel/.rela section that targets a .debug_* / .nv_debug_* section, then marks those relocation
sections SHT_NULL and sets e_machine to EM_X86_64 so the tools do not complain.
Symbol value S: st_value of the symbol (0 for section symbols and for functions in a relocatable
cubin, i.e. addresses are section-relative). Unknown reloc types are reported and skipped.
"""
import struct
import sys

data = bytearray(open(sys.argv[1], 'rb').read())
assert data[:4] == b'\x7fELF' and data[4] == 2, 'ELF64 only'
e_shoff, = struct.unpack_from('<Q', data, 0x28)
e_shentsize, e_shnum, e_shstrndx = struct.unpack_from('<HHH', data, 0x3a)


def sh(i):
    off = e_shoff + i * e_shentsize
    name, typ, flags, addr, offset, size, link, info, align, entsize = struct.unpack_from('<IIQQQQIIQQ', data, off)
    return dict(idx=i, hdr=off, name=name, type=typ, offset=offset, size=size, link=link, info=info, entsize=entsize)


secs = [sh(i) for i in range(e_shnum)]
strtab = secs[e_shstrndx]


def secname(s):
    o = strtab['offset'] + s['name']
    return data[o:data.index(0, o)].decode()


for s in secs:
    s['n'] = secname(s)

unknown = {}
for s in secs:
    if s['type'] not in (4, 9):   # RELA, REL
        continue
    tgt = secs[s['info']]
    if not (tgt['n'].startswith('.debug') or tgt['n'].startswith('.nv_debug')):
        continue
    symtab = secs[s['link']]
    ent = 24 if s['type'] == 4 else 16
    for k in range(s['size'] // ent):
        o = s['offset'] + k * ent
        if s['type'] == 4:
            r_off, r_info, r_add = struct.unpack_from('<QQq', data, o)
        else:
            r_off, r_info = struct.unpack_from('<QQ', data, o)
            r_add = None
        typ, sym = r_info & 0xffffffff, r_info >> 32
        so = symtab['offset'] + sym * 24
        st_value, = struct.unpack_from('<Q', data, so + 8)
        w = {1: 4, 2: 8}.get(typ)
        if w is None:
            unknown[typ] = unknown.get(typ, 0) + 1
            continue
        place = tgt['offset'] + r_off
        if r_add is None:
            r_add = int.from_bytes(data[place:place + w], 'little')
        v = (st_value + r_add) & ((1 << (8 * w)) - 1)
        data[place:place + w] = v.to_bytes(w, 'little')
    struct.pack_into('<I', data, s['hdr'] + 4, 0)   # SHT_NULL
struct.pack_into('<H', data, 0x12, 62)
if unknown:
    sys.stderr.write('applyrel: skipped reloc types %s\n' % unknown)
open(sys.argv[2], 'wb').write(data)
