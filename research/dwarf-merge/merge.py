#!/usr/bin/env python3
"""Research PTX merger for DWARF experiments (NOT production code).

  merge.py [options] OUT.ptx IN1.ptx IN2.ptx ...

Options (variants):
  --separate          one .section block per input module (no concatenation)  [default: one merged block per name]
  --no-offsets        do not add +N to `.debug_X` references in later modules
  --no-rename         do not rename labels apart
  --no-filemap        do not renumber .file indices (keeps collisions)
  --dwarf             decode .debug_abbrev/.debug_info per module and remap DW_AT_decl_file/call_file
                      to the merged .file numbering (also re-serializes the sections canonically)
  --drop SEC          drop section SEC (e.g. .debug_loc) from the output entirely (repeatable)
  --drop-ref SEC      (bisect helper) replace every `.b32 .debug_SEC[+N]` by `.b32 0` (repeatable)
  --keep-extern       keep `.extern .func` declarations of functions defined in another input
  --nodebug-target    emit `.target` without `, debug`
  --union-abbrev      decode each module's DWARF, build ONE deduplicated abbrev table at .debug_abbrev+0,
                      re-encode every CU's DIE codes to it (all CU headers -> `.debug_abbrev`), remap
                      decl_file/call_file, keep CU-relative refs valid (THE WORKING VARIANT)
  --code-base N       with --union-abbrev: number abbrev codes from N+1 (tests ULEB size growth)
  --abbrev-reverse    with --union-abbrev: write the table entries in reverse order (same codes)
  --dummy-abbrevs N   with --union-abbrev: put N unused user-tag entries first (codes >127 -> 2-byte ULEB)
  --pad SEC=N         append N zero bytes to each module's SEC block before merging (alignment tests)
"""
import re
import sys

IDENT = re.compile(r'[$%A-Za-z_][\w$]*')
LABEL_DEF = re.compile(r'^\s*([$A-Za-z_][\w$]*)\s*:')
DEPOT = re.compile(r'__local_depot\d+')


class Module:
    def __init__(self, path):
        self.path = path
        self.header = {}
        self.files = []      # (idx, rest-of-line text)
        self.sections = []   # (name, [content lines])
        self.body = []
        text = open(path).read()
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            l = lines[i]
            s = l.strip()
            m = re.match(r'\.(version|target|address_size)\s+(.*)$', s)
            if m:
                self.header[m.group(1)] = m.group(2)
                i += 1
                continue
            m = re.match(r'\.file\s+(\d+)\s+(.*)$', s)
            if m:
                self.files.append((int(m.group(1)), m.group(2)))
                i += 1
                continue
            m = re.match(r'\.section\s+(\S+)\s*(.*)$', s)
            if m:
                name = m.group(1)
                rest = m.group(2)
                buf = rest
                while buf.count('{') == 0 or buf.count('{') != buf.count('}'):
                    i += 1
                    buf += '\n' + lines[i]
                inner = buf[buf.index('{') + 1:buf.rindex('}')]
                self.sections.append((name, [x for x in inner.split('\n') if x.strip()]))
                i += 1
                continue
            self.body.append(l)
            i += 1

    def labels(self):
        names = set()
        for l in self.body:
            m = LABEL_DEF.match(l)
            if m and not l.strip().startswith('//'):
                names.add(m.group(1))
            for d in DEPOT.findall(l):
                names.add(d)
        for _, content in self.sections:
            for l in content:
                m = LABEL_DEF.match(l)
                if m:
                    names.add(m.group(1))
        return names

    def defined_funcs(self):
        out = set()
        text = '\n'.join(self.body)
        for m in re.finditer(r'^\s*(?:\.visible\s+|\.weak\s+)?\.(?:func|entry)\s*(?:\([^)]*\))?\s*([$A-Za-z_][\w$]*)\s*\(?[^;{]*\{', text, re.M | re.S):
            out.add(m.group(1))
        return out


def data_size(content):
    n = 0
    for l in content:
        s = l.strip()
        m = re.match(r'\.b(8|16|32|64)\s+(.*)$', s)
        if m:
            w = int(m.group(1)) // 8
            vals = [v for v in m.group(2).split(',') if v.strip()]
            n += w * len(vals)
    return n


def rename_text(line, mapping):
    return IDENT.sub(lambda m: mapping.get(m.group(0), m.group(0)), line)


def remap_loc(line, fmap):
    line = re.sub(r'(\.loc\s+)(\d+)', lambda m: m.group(1) + str(fmap[int(m.group(2))]), line)
    line = re.sub(r'(inlined_at\s+)(\d+)', lambda m: m.group(1) + str(fmap[int(m.group(2))]), line)
    return line


SECREF = re.compile(r'(?<![\w$])(\.debug_[a-z_]+)(?:\s*\+\s*(\d+))?(?![\w$])')


def shift_refs(line, offsets, drop_refs):
    s = line.strip()
    if not re.match(r'\.b(32|64)\s', s):
        return line

    def rep(m):
        sec = m.group(1)
        add = int(m.group(2) or 0)
        if sec in drop_refs:
            return '0'
        add += offsets.get(sec, 0)
        return sec + ('+%d' % add if add else '')
    return SECREF.sub(rep, line)


# ---------------------------------------------------------------- DWARF (de)serialization
class Blob:
    """Byte image of one section block with symbolic fixups: fix[offset] = (width, expr)."""

    def __init__(self, content):
        self.data = bytearray()
        self.fix = {}
        self.labels = {}   # offset -> [label]
        for l in content:
            s = l.strip()
            m = LABEL_DEF.match(s)
            if m:
                self.labels.setdefault(len(self.data), []).append(m.group(1))
                s = s[m.end():].strip()
                if not s:
                    continue
            m = re.match(r'\.b(8|16|32|64)\s+(.*)$', s)
            if not m:
                raise SystemExit('cannot parse section line: %r' % l)
            w = int(m.group(1)) // 8
            for v in m.group(2).split(','):
                v = v.strip()
                if not v:
                    continue
                if re.fullmatch(r'-?(0x[0-9a-fA-F]+|\d+)', v):
                    self.data += (int(v, 0) & ((1 << (8 * w)) - 1)).to_bytes(w, 'little')
                else:
                    self.fix[len(self.data)] = (w, v)
                    self.data += bytes(w)

    def emit(self):
        out = []
        i = 0
        run = []

        def flush():
            if run:
                for k in range(0, len(run), 16):
                    out.append('.b8 ' + ','.join(str(b) for b in run[k:k + 16]))
                run.clear()
        while i < len(self.data):
            if i in self.labels:
                flush()
                for lab in self.labels[i]:
                    out.append(lab + ':')
            if i in self.fix:
                flush()
                w, e = self.fix[i]
                out.append('.b%d %s' % (8 * w, e))
                i += w
                continue
            run.append(self.data[i])
            i += 1
        flush()
        if len(self.data) in self.labels:
            for lab in self.labels[len(self.data)]:
                out.append(lab + ':')
        return out


def uleb(b, p):
    r = s = 0
    while True:
        x = b[p]
        p += 1
        r |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            return r, p


def sleb(b, p):
    r = s = 0
    while True:
        x = b[p]
        p += 1
        r |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            if x & 0x40:
                r -= 1 << s
            return r, p


def parse_abbrevs(b, off):
    tab = {}
    p = off
    while True:
        code, p = uleb(b, p)
        if code == 0:
            return tab
        tag, p = uleb(b, p)
        children = b[p]
        p += 1
        attrs = []
        while True:
            a, p = uleb(b, p)
            f, p = uleb(b, p)
            if a == 0 and f == 0:
                break
            attrs.append((a, f))
        tab[code] = (tag, children, attrs)


FIXED = {0x01: 8, 0x0b: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x0c: 1, 0x11: 1, 0x12: 2, 0x13: 4, 0x14: 8,
         0x10: 4, 0x0e: 4, 0x17: 4, 0x19: 0, 0x20: 8}
DW_AT_decl_file, DW_AT_call_file = 0x3a, 0x58


def walk_info(info, abbrev, visit):
    """visit(attr, form, pos, size) for every attribute value in .debug_info (DWARF 2-4, 32-bit)."""
    b = info.data
    p = 0
    cus = []
    while p < len(b):
        start = p
        length = int.from_bytes(b[p:p + 4], 'little')
        ver = int.from_bytes(b[p + 4:p + 6], 'little')
        aoff = int.from_bytes(b[p + 6:p + 10], 'little')
        asz = b[p + 10]
        end = p + 4 + length
        abbrevs = parse_abbrevs(abbrev.data, aoff)
        cus.append((start, ver, aoff, asz))
        p += 11
        while p < end:
            code, p = uleb(b, p)
            if code == 0:
                continue
            tag, ch, attrs = abbrevs[code]
            for a, f in attrs:
                while f == 0x16:   # indirect
                    f, p = uleb(b, p)
                q = p
                if f in FIXED:
                    p += FIXED[f]
                elif f == 0x08:    # string
                    p = b.index(0, p) + 1
                elif f in (0x0f, 0x15, 0x0d):  # udata, ref_udata, sdata
                    _, p = uleb(b, p)
                elif f == 0x0a:    # block1
                    p += 1 + b[p]
                elif f == 0x03:
                    p += 2 + int.from_bytes(b[p:p + 2], 'little')
                elif f == 0x04:
                    p += 4 + int.from_bytes(b[p:p + 4], 'little')
                elif f in (0x09, 0x18):   # block, exprloc
                    n, p2 = uleb(b, p)
                    p = p2 + n
                elif f == 0x10:
                    p += 4 if ver > 2 else asz
                else:
                    raise SystemExit('unhandled form 0x%x' % f)
                visit(a, f, q, p - q)
        p = end
    return cus


def enc_uleb(v):
    out = bytearray()
    while True:
        x = v & 0x7f
        v >>= 7
        if v:
            out.append(x | 0x80)
        else:
            out.append(x)
            return bytes(out)


def remap_decl_files(info, abbrev, fmap):
    """Rewrite DW_AT_decl_file/call_file through fmap. Returns new Blob (same size if forms fixed)."""
    edits = []

    def visit(a, f, q, n):
        if a in (DW_AT_decl_file, DW_AT_call_file):
            old = int.from_bytes(info.data[q:q + n], 'little') if f != 0x0f else uleb(info.data, q)[0]
            if old in fmap and fmap[old] != old:
                edits.append((q, n, f, fmap[old]))
    walk_info(info, abbrev, visit)
    for q, n, f, new in edits:
        if f == 0x0f:
            enc = enc_uleb(new)
            if len(enc) != n:
                raise SystemExit('uleb size change not implemented')
            info.data[q:q + n] = enc
        else:
            if new >= 1 << (8 * n):
                raise SystemExit('file index %d does not fit form size %d' % (new, n))
            info.data[q:q + n] = new.to_bytes(n, 'little')
    return len(edits)


REVERSE = False  # --abbrev-reverse: test hook, emit the union table entries in reverse order
CODE_BASE = 0   # --code-base N: test hook, makes DIE codes start at N+1 (forces ULEB size changes)


def enc_abbrev(code, decl):
    tag, ch, attrs = decl
    out = bytearray(enc_uleb(code) + enc_uleb(tag) + bytes([ch]))
    for a, f in attrs:
        out += enc_uleb(a) + enc_uleb(f)
    out += b'\0\0'
    return out


def reencode_info(info, abbrev, gabbrevs, fmap, info_base):
    """Re-encode one module's .debug_info with DIE codes from the global (deduplicated) abbrev list
    gabbrevs (list of decls; code = index+1), DW_AT_decl_file/call_file through fmap, and
    DW_FORM_ref_addr (numeric) shifted by info_base. Every CU's abbrev offset becomes 0 (kept symbolic
    as `.debug_abbrev`). CU-relative refs are re-pointed if DIE sizes change. Returns a new Blob."""
    b = info.data
    new = Blob([])
    p = 0

    def copy(q, e):
        for o in range(q, e):
            if o in info.fix:
                w, ex = info.fix[o]
                new.fix[len(new.data) + (o - q)] = (w, ex)
            if o in info.labels and o != q:
                new.labels.setdefault(len(new.data) + (o - q), []).extend(info.labels[o])
        new.data += b[q:e]
    while p < len(b):
        cu_start_new = len(new.data)
        if p in info.labels:
            new.labels.setdefault(cu_start_new, []).extend(info.labels[p])
        length = int.from_bytes(b[p:p + 4], 'little')
        ver = int.from_bytes(b[p + 4:p + 6], 'little')
        if p + 6 not in info.fix:
            raise SystemExit('abbrev offset is not symbolic in CU at %d' % p)
        asz = b[p + 10]
        end = p + 4 + length
        aoff = int.from_bytes(b[p + 6:p + 10], 'little')   # symbolic fixup holds '.debug_abbrev[+n]'
        w, ex = info.fix[p + 6]
        m = re.fullmatch(r'\.debug_abbrev(?:\+(\d+))?', ex.replace(' ', ''))
        aoff = int(m.group(1) or 0)
        table = parse_abbrevs(abbrev.data, aoff)
        new.data += b[p:p + 6]
        new.fix[len(new.data)] = (4, '.debug_abbrev')
        new.data += bytes(4)
        new.data += b[p + 10:p + 11]
        p += 11
        offmap = {}     # old CU-relative -> new CU-relative
        refs = []       # (new_pos, width_or_-1 for udata, old_target)
        old_cu = p - 11
        while p < end:
            if p in info.labels:
                new.labels.setdefault(len(new.data), []).extend(info.labels[p])
            offmap[p - old_cu] = len(new.data) - cu_start_new
            code, p = uleb(b, p)
            if code == 0:
                new.data += b'\0'
                continue
            decl = table[code]
            if decl not in gabbrevs:
                gabbrevs.append(decl)
            new.data += enc_uleb(gabbrevs.index(decl) + 1 + CODE_BASE)
            tag, ch, attrs = decl
            for a, f in attrs:
                q = p
                if f == 0x16:
                    raise SystemExit('DW_FORM_indirect not supported')
                if f in FIXED:
                    p += FIXED[f]
                elif f == 0x08:
                    p = b.index(0, p) + 1
                elif f in (0x0f, 0x15, 0x0d):
                    _, p = uleb(b, p)
                elif f == 0x0a:
                    p += 1 + b[p]
                elif f == 0x03:
                    p += 2 + int.from_bytes(b[p:p + 2], 'little')
                elif f == 0x04:
                    p += 4 + int.from_bytes(b[p:p + 4], 'little')
                elif f in (0x09, 0x18):
                    n, p2 = uleb(b, p)
                    p = p2 + n
                else:
                    raise SystemExit('unhandled form 0x%x' % f)
                n = p - q
                if a in (DW_AT_decl_file, DW_AT_call_file) and q not in info.fix:
                    old = uleb(b, q)[0] if f == 0x0f else int.from_bytes(b[q:p], 'little')
                    v = fmap.get(old, old)
                    if f == 0x0f:
                        new.data += enc_uleb(v)
                    else:
                        if v >= 1 << (8 * n):
                            raise SystemExit('file index %d does not fit in %d bytes' % (v, n))
                        new.data += v.to_bytes(n, 'little')
                elif f in (0x11, 0x12, 0x13, 0x14, 0x15) and q not in info.fix:
                    old = uleb(b, q)[0] if f == 0x15 else int.from_bytes(b[q:p], 'little')
                    refs.append((len(new.data) - cu_start_new, n if f != 0x15 else -n, old))
                    new.data += b[q:p]
                elif f == 0x10 and q not in info.fix:
                    old = int.from_bytes(b[q:p], 'little')
                    new.data += (old + info_base).to_bytes(n, 'little')   # approximate: assumes no size change before target
                    sys.stderr.write('warning: numeric DW_FORM_ref_addr %d shifted by %d\n' % (old, info_base))
                else:
                    copy(q, p)
        offmap[end - old_cu] = len(new.data) - cu_start_new
        for pos, w, old in refs:
            if old not in offmap:
                raise SystemExit('ref to non-DIE offset %d' % old)
            v = offmap[old]
            at = cu_start_new + pos
            if w < 0:
                enc = enc_uleb(v)
                if len(enc) != -w:
                    raise SystemExit('ref_udata size change not implemented')
                new.data[at:at - w] = enc
            else:
                new.data[at:at + w] = v.to_bytes(w, 'little')
        newlen = len(new.data) - cu_start_new - 4
        new.data[cu_start_new:cu_start_new + 4] = newlen.to_bytes(4, 'little')
        p = end
    if len(b) in info.labels:
        new.labels.setdefault(len(new.data), []).extend(info.labels[len(b)])
    return new


# ---------------------------------------------------------------- main
gabbrevs = []   # global union abbrev table (decls); code = index + 1 (+ CODE_BASE)


def main(argv):
    opts = {'separate': False, 'offsets': True, 'rename': True, 'filemap': True, 'dwarf': False,
            'drop': set(), 'drop_ref': set(), 'keep_extern': False, 'nodebug': False, 'pad': {}, 'union': False}
    args = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == '--separate':
            opts['separate'] = True
        elif a == '--no-offsets':
            opts['offsets'] = False
        elif a == '--no-rename':
            opts['rename'] = False
        elif a == '--no-filemap':
            opts['filemap'] = False
        elif a == '--dwarf':
            opts['dwarf'] = True
        elif a == '--dummy-abbrevs':
            i += 1
            gabbrevs.extend((0x4100 + j, 0, []) for j in range(int(argv[i])))
        elif a == '--abbrev-reverse':
            global REVERSE
            REVERSE = True
        elif a == '--code-base':
            global CODE_BASE
            i += 1
            CODE_BASE = int(argv[i])
        elif a == '--union-abbrev':
            opts['union'] = True
        elif a == '--drop':
            i += 1
            opts['drop'].add(argv[i])
        elif a == '--drop-ref':
            i += 1
            opts['drop_ref'].add(argv[i])
        elif a == '--keep-extern':
            opts['keep_extern'] = True
        elif a == '--nodebug-target':
            opts['nodebug'] = True
        elif a == '--pad':
            i += 1
            k, v = argv[i].split('=')
            opts['pad'][k] = int(v)
        else:
            args.append(a)
        i += 1
    out_path, inputs = args[0], args[1:]
    mods = [Module(p) for p in inputs]

    # header
    vers = [m.header.get('version', '7.0') for m in mods]
    version = max(vers, key=lambda v: tuple(int(x) for x in v.split('.')))
    tgt = [t.strip() for t in mods[0].header['target'].split(',')]
    if any('debug' in m.header['target'] for m in mods) and 'debug' not in tgt:
        tgt.append('debug')
    if opts['nodebug'] and 'debug' in tgt:
        tgt.remove('debug')
    out = ['.version ' + version, '.target ' + ', '.join(tgt), '.address_size 64', '']

    # file table
    gfiles = []   # rest-of-line strings
    fmaps = []
    for m in mods:
        fmap = {}
        for idx, rest in m.files:
            if opts['filemap']:
                if rest not in gfiles:
                    gfiles.append(rest)
                fmap[idx] = gfiles.index(rest) + 1
            else:
                fmap[idx] = idx
        fmaps.append(fmap)

    defined = [m.defined_funcs() for m in mods]
    sec_order = []
    merged = {}
    offsets_so_far = {}
    for k, m in enumerate(mods):
        mapping = {}
        if opts['rename']:
            mapping = {n: n + '_m%d' % k for n in m.labels()}
        others = set().union(*[d for j, d in enumerate(defined) if j != k]) if len(mods) > 1 else set()
        # body
        body = '\n'.join(m.body)
        if not opts['keep_extern']:
            def drop_ext(mm):
                if mm.group(1) not in others:
                    return mm.group(0)
                if any(mm.group(1) in defined[j] for j in range(k)):
                    return ''
                return mm.group(0).replace('.extern', '.visible', 1)
            body = re.sub(r'^\s*\.extern\s+\.func\s*(?:\([^)]*\))?\s*([$A-Za-z_][\w$]*)\s*(?:\([^)]*\))?\s*;',
                          drop_ext, body, flags=re.M | re.S)
        newbody = []
        for l in body.split('\n'):
            if opts['rename'] and not l.strip().startswith('//'):
                l = rename_text(l, mapping)
            if opts['filemap']:
                l = remap_loc(l, fmaps[k])
            newbody.append(l)
        out.append('// ---- module %d: %s' % (k, m.path))
        out.extend(newbody)

        # sections
        secs = {}
        for name, content in m.sections:
            if name in opts['drop']:
                continue
            secs.setdefault(name, []).extend(content)
        if opts['union'] and '.debug_info' in secs and '.debug_abbrev' in secs:
            info = Blob(secs['.debug_info'])
            abbrev = Blob(secs['.debug_abbrev'])
            base = offsets_so_far.get('.debug_info', 0)
            secs['.debug_info'] = reencode_info(info, abbrev, gabbrevs, fmaps[k], base).emit()
            del secs['.debug_abbrev']
        elif opts['dwarf'] and '.debug_info' in secs and '.debug_abbrev' in secs:
            info = Blob(secs['.debug_info'])
            abbrev = Blob(secs['.debug_abbrev'])
            n = remap_decl_files(info, abbrev, fmaps[k])
            sys.stderr.write('module %d: %d decl_file/call_file rewritten\n' % (k, n))
            secs['.debug_info'] = info.emit()
        for name, content in secs.items():
            if name in opts['pad']:
                content = content + ['.b8 ' + ','.join(['0'] * opts['pad'][name])]
            offs = offsets_so_far if opts['offsets'] else {}
            newc = []
            for l in content:
                if opts['rename']:
                    l = rename_text(l, mapping)
                l = shift_refs(l, offs, opts['drop_ref'])
                newc.append(l)
            if name not in merged:
                sec_order.append(name)
                merged[name] = []
            merged[name].append(newc)
        for name, content in secs.items():
            if name in opts['pad']:
                content = content + ['.b8 ' + ','.join(['0'] * opts['pad'][name])]
            offsets_so_far[name] = offsets_so_far.get(name, 0) + data_size(content)

    for j, rest in enumerate(gfiles):
        out.append('\t.file\t%d %s' % (j + 1, rest))
    if opts['filemap'] is False:
        seen = set()
        for k, m in enumerate(mods):
            for idx, rest in m.files:
                if idx not in seen:
                    seen.add(idx)
                    out.append('\t.file\t%d %s' % (idx, rest))
    if opts['union'] and gabbrevs:
        ab = bytearray()
        order = list(enumerate(gabbrevs))
        if REVERSE:
            order.reverse()
        for c, d in order:
            ab += enc_abbrev(c + 1 + CODE_BASE, d)
        ab += b'\0'
        sec_order.insert(0, '.debug_abbrev')
        merged['.debug_abbrev'] = [['.b8 ' + ','.join(str(x) for x in ab[i:i + 16]) for i in range(0, len(ab), 16)]]
    for name in sec_order:
        blocks = merged[name]
        if opts['separate']:
            for bl in blocks:
                out.append('\t.section\t%s\n\t{' % name)
                out.extend(bl)
                out.append('\t}')
        else:
            out.append('\t.section\t%s\n\t{' % name)
            for bl in blocks:
                out.extend(bl)
            out.append('\t}')
    open(out_path, 'w').write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main(sys.argv)
