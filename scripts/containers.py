#!/usr/bin/env python3
"""Helpers for scripts/regen-containers.sh (fixtures/containers/).

  containers.py nvfatbin LIB OUT ARCH IDENT PTX [OPTION ...]   libnvfatbin (ctypes): one PTX entry
  containers.py normalize-obj FILE                              tmpxft_<pid>_ -> tmpxft_00000000_ in place
  containers.py info FILE                                       entry table (raw fatbin or ELF host object)
  containers.py extract FILE DIR                                decoded payloads, named like cuobjdump -xptx/-xelf
  containers.py corrupt GOOD.fatbin GOOD_ZSTD.fatbin GOOD.o OUTDIR   the bad/ variants (+ one-line .txt each)

Only the standard library is used. ZSTD payloads are decoded with the `zstd` command
(Debian package zstd); LZ4 payloads (raw LZ4 blocks) with the small decoder below.
"""
import ctypes
import os
import re
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
ENTRY_FMT = "<HHIQIIHHIIIQQQ"  # 64-byte entry header (docs/containers.md, "Byte layout" §2)
FLAG_LZ4, FLAG_ZSTD, FLAG_LEGACY = 0x2000, 0x8000, 0x1000


# ---------------------------------------------------------------------------------------------
# ELF64 little-endian: just enough to find a section by name
def elf_sections(d):
    if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    out = []
    for i, h in enumerate(hdrs):
        name = d[stroff + h[0]: d.index(b"\0", stroff + h[0])].decode()
        out.append({"index": i, "name": name, "type": h[1], "offset": h[4], "size": h[5],
                    "hdr_off": shoff + i * shentsize})
    return out


def fatbin_blobs(path):
    """[(label, bytes)]: the whole file for a raw fatbin, else each .nv_fatbin/__nv_relfatbin."""
    d = open(path, "rb").read()
    secs = elf_sections(d)
    if secs is None:
        return [("raw", d)]
    return [(s["name"], d[s["offset"]: s["offset"] + s["size"]])
            for s in secs if s["name"] in (".nv_fatbin", "__nv_relfatbin")]


def parse(blob):
    """Containers and entries of one blob; raises ValueError on anything malformed."""
    conts, off = [], 0
    while off < len(blob):
        if len(blob) - off < 16:
            raise ValueError("%d stray bytes at %#x" % (len(blob) - off, off))
        magic, ver, hsz, esz = struct.unpack_from("<IHHQ", blob, off)
        if magic != FATBIN_MAGIC or hsz != 16:
            raise ValueError("bad container header at %#x" % off)
        end = off + hsz + esz
        if end > len(blob):
            raise ValueError("container at %#x needs %d bytes, %d left" % (off, hsz + esz, len(blob) - off))
        entries, p = [], off + hsz
        while p < end:
            (kind, ever, ehsz, psz, csz, optoff, minor, major, arch, idoff, idlen, flags, _res,
             usz) = struct.unpack_from(ENTRY_FMT, blob, p)
            if ehsz < 64 or psz % 8 or ehsz % 8 or p + ehsz + psz > end:
                raise ValueError("bad entry sizes at %#x" % p)
            ident = blob[p + idoff: p + idoff + idlen].decode() if idoff else ""
            opts = ""
            if optoff:
                so, sl = struct.unpack_from("<II", blob, p + optoff)
                opts = blob[p + so: p + so + sl].decode()
            payload = blob[p + ehsz: p + ehsz + psz]
            entries.append(dict(off=p, kind=kind, hsz=ehsz, psz=psz, csz=csz, optoff=optoff,
                                minor=minor, major=major, arch=arch, ident=ident, opts=opts,
                                flags=flags, usz=usz, payload=payload))
            p += ehsz + psz
        conts.append(dict(off=off, esz=esz, entries=entries))
        off = end
    return conts


def lz4_block_decode(src):
    out, i = bytearray(), 0
    while i < len(src):
        tok = src[i]; i += 1
        lit = tok >> 4
        if lit == 15:
            while True:
                b = src[i]; i += 1; lit += b
                if b != 255:
                    break
        out += src[i: i + lit]; i += lit
        if i >= len(src):
            break  # last sequence: literals only
        moff = src[i] | (src[i + 1] << 8); i += 2
        if moff == 0 or moff > len(out):
            raise ValueError("bad LZ4 match offset")
        ml = tok & 15
        if ml == 15:
            while True:
                b = src[i]; i += 1; ml += b
                if b != 255:
                    break
        for _ in range(ml + 4):
            out.append(out[-moff])
    return bytes(out)


def decode(e):
    """Decoded payload (PTX: text + NUL [+ padding if uncompressed]) and a compression label."""
    f, pl = e["flags"], e["payload"]
    if f & FLAG_ZSTD:
        stream = pl[: e["csz"]]
        assert stream[:4] == b"\x28\xb5\x2f\xfd", "not a zstd frame"
        data = subprocess.run(["zstd", "-d", "-c", "-q"], input=stream, capture_output=True,
                              check=True).stdout
        label = "ZSTD frame"
    elif f & FLAG_LZ4:
        data = lz4_block_decode(pl[: e["csz"]])
        label = "LZ4 block"
    elif f & FLAG_LEGACY:
        raise ValueError("legacy compression not supported")
    else:
        return pl, "none"
    if len(data) != e["usz"]:
        raise ValueError("decoded %d bytes, uncompressed_size says %d" % (len(data), e["usz"]))
    assert all(b == 0 for b in pl[e["csz"]:]), "non-zero padding after the compressed stream"
    return data, label


def ptx_text(e):
    data, _ = decode(e)
    return data[: data.index(b"\0")]


def arch_name(e):
    suf = "a" if e["flags"] & 0x100000 else "f" if e["flags"] & 0x200000 else ""
    return "sm_%d%s" % (e["arch"], suf)


def cmd_info(path):
    for label, blob in fatbin_blobs(path):
        for c in parse(blob):
            print("%s container @%#x entries_size=%#x" % (label, c["off"], c["esz"]))
            for e in c["entries"]:
                data, comp = decode(e)
                kind = {1: "PTX", 2: "ELF"}.get(e["kind"], "kind%d" % e["kind"])
                line = ("  @%#x %s %s hdr=%#x payload=%#x csize=%#x usize=%#x flags=%#x comp=%s"
                        % (e["off"], kind, arch_name(e), e["hsz"], e["psz"], e["csz"], e["usz"],
                           e["flags"], comp))
                if e["kind"] == 1:
                    text = data[: data.index(b"\0")]
                    ver = re.search(rb"^\s*\.version\s+(\S+)", text, re.M)
                    tgt = re.search(rb"^\s*\.target\s+([^\n]+)", text, re.M)
                    line += (" hdrver=%d.%d .version=%s .target=%s textlen=%d"
                             % (e["major"], e["minor"], ver.group(1).decode() if ver else "MISSING",
                                tgt.group(1).decode().strip() if tgt else "MISSING", len(text)))
                else:
                    line += " elfabi=%d" % e["minor"]
                line += " ident=%r opts=%r" % (e["ident"], e["opts"])
                print(line)


def cmd_extract(path, outdir):
    """Write payloads the way cuobjdump -xptx/-xelf names them (<ident|input.N>.<arch>.ptx)."""
    base = os.path.basename(path)
    base = base[: -len(".fatbin")] if base.endswith(".fatbin") else base[: -2] if base.endswith(".o") else base
    os.makedirs(outdir, exist_ok=True)
    n = {1: 0, 2: 0}
    for _, blob in fatbin_blobs(path):
        for c in parse(blob):
            for e in c["entries"]:
                n[e["kind"]] = n.get(e["kind"], 0) + 1
                ext = "ptx" if e["kind"] == 1 else "cubin"
                stem = e["ident"].rsplit(".", 1)[0] if e["ident"] else "%s.%d" % (base, n[e["kind"]])
                data, _ = decode(e)
                if e["kind"] == 1:
                    data = data[: data.index(b"\0")]
                else:
                    data = data[: e["usz"]] if e["usz"] else data
                with open(os.path.join(outdir, "%s.%s.%s" % (stem, arch_name(e), ext)), "wb") as f:
                    f.write(data)


# ---------------------------------------------------------------------------------------------
def cmd_nvfatbin(lib, out, arch, ident, ptx, options):
    nv = ctypes.CDLL(lib)
    opts = [o.encode() for o in options]
    arr = (ctypes.c_char_p * max(1, len(opts)))(*opts)
    h = ctypes.c_void_p()

    def ok(r, what):
        if r != 0:
            sys.exit("nvfatbin: %s failed with %d" % (what, r))

    ok(nv.nvFatbinCreate(ctypes.byref(h), arr, ctypes.c_size_t(len(opts))), "nvFatbinCreate")
    src = open(ptx, "rb").read() + b"\0"
    ok(nv.nvFatbinAddPTX(h, src, ctypes.c_size_t(len(src)), arch.encode(), ident.encode(), b""),
       "nvFatbinAddPTX")
    n = ctypes.c_size_t()
    ok(nv.nvFatbinSize(h, ctypes.byref(n)), "nvFatbinSize")
    buf = ctypes.create_string_buffer(n.value)
    ok(nv.nvFatbinGet(h, buf), "nvFatbinGet")
    nv.nvFatbinDestroy(ctypes.byref(h))
    open(out, "wb").write(buf.raw)


def cmd_normalize_obj(path):
    """nvcc names the host object's STT_FILE symbol tmpxft_<pid>_...; zero the pid (same length)."""
    d = open(path, "rb").read()
    d2 = re.sub(rb"tmpxft_[0-9a-f]{8}_", b"tmpxft_00000000_", d)
    open(path, "wb").write(d2)


def cmd_corrupt(good, good_zstd, good_obj, outdir):
    d = bytearray(open(good, "rb").read())
    conts = parse(bytes(d))
    assert len(conts) == 1 and len(conts[0]["entries"]) == 1
    e = conts[0]["entries"][0]
    assert e["kind"] == 1 and e["flags"] == 0x11 and e["csz"] == 0
    E = e["off"]                          # entry start (0x10)
    P = E + e["hsz"]                      # payload start
    text_len = e["payload"].index(b"\0")
    nul = P + text_len                    # offset of the terminating NUL
    gname = os.path.basename(good)
    os.makedirs(outdir, exist_ok=True)

    def put(name, data, why):
        open(os.path.join(outdir, name), "wb").write(bytes(data))
        open(os.path.join(outdir, name[: name.rindex(".")] + ".txt"), "w").write(why + "\n")

    def patched(fmt, off, val, base=None):
        x = bytearray(d if base is None else base)
        struct.pack_into(fmt, x, off, val)
        return x

    put("bad_magic.fatbin", patched("<I", 0, 0xBA55ED51),
        "from %s: container magic at 0x0 is 0xBA55ED51 (byte 0x0 = 0x51), must be 0xBA55ED50" % gname)
    cut = P + 0x40
    put("truncated.fatbin", d[:cut],
        "from %s: file cut to %#x bytes inside the PTX payload; entries_size at 0x8 still says %#x (needs %#x bytes)"
        % (gname, cut, conts[0]["esz"], 16 + conts[0]["esz"]))
    put("entries_size_too_large.fatbin", patched("<Q", 8, conts[0]["esz"] + 8),
        "from %s: entries_size (u64 at 0x8) = %#x, 8 more than the %#x bytes after the header"
        % (gname, conts[0]["esz"] + 8, len(d) - 16))
    x = bytearray(d)
    for i in range(nul, P + e["psz"]):
        x[i] = 0x0A
    put("ptx_no_nul.fatbin", x,
        "from %s: PTX payload %#x..%#x has no NUL: bytes %#x..%#x (NUL + padding) replaced by 0x0a"
        % (gname, P, P + e["psz"], nul, P + e["psz"] - 1))
    put("payload_size_misaligned.fatbin", patched("<Q", E + 8, text_len + 1),
        "from %s: payload_size (u64 at %#x) = %#x (text+NUL, not a multiple of 8); entries_size and file unchanged (%#x stray bytes)"
        % (gname, E + 8, text_len + 1, e["psz"] - text_len - 1))
    x = patched("<Q", E + 8, text_len + 1)
    struct.pack_into("<Q", x, 8, e["hsz"] + text_len + 1)
    x = x[: 16 + e["hsz"] + text_len + 1]
    put("payload_unpadded.fatbin", x,
        "from %s: consistent but unpadded: payload_size (u64 at %#x) = %#x = text+NUL, entries_size (0x8) = %#x, file %#x bytes; sizes not multiples of 8"
        % (gname, E + 8, text_len + 1, e["hsz"] + text_len + 1, len(x)))
    put("ptx_flags_32bit.fatbin", patched("<Q", E + 0x28, 0x10),
        "from %s: entry flags (u64 at %#x) = 0x10 (32-bit, Linux) but the PTX says .address_size 64 (valid value 0x11)"
        % (gname, E + 0x28))
    put("ptx_host_windows.fatbin", patched("<Q", E + 0x28, 0x41),
        "from %s: entry flags (u64 at %#x) = 0x41 (64-bit, host Windows) instead of 0x11 (host Linux)"
        % (gname, E + 0x28))
    put("trailing_zeros_16.fatbin", d + bytes(16),
        "from %s: 16 zero bytes appended at %#x after the only container (file %#x bytes)"
        % (gname, len(d), len(d) + 16))
    put("arch_zero.fatbin", patched("<I", E + 0x1C, 0),
        "from %s: entry arch (u32 at %#x) = 0" % (gname, E + 0x1C))
    put("optdesc_zero.fatbin", patched("<I", E + 0x14, 0),
        "from %s: PTX entry options_desc_off (u32 at %#x) = 0 (must point at the options descriptor, here 0x40)"
        % (gname, E + 0x14))
    put("zstd_flag_uncompressed.fatbin", patched("<Q", E + 0x28, 0x8011),
        "from %s: entry flags (u64 at %#x) = 0x8011 (ZSTD) but the payload is plain text, compressed_size = uncompressed_size = 0"
        % (gname, E + 0x28))

    # a corrupt zstd stream, from the ZSTD fatbin
    z = bytearray(open(good_zstd, "rb").read())
    ze = parse(bytes(z))[0]["entries"][0]
    assert ze["flags"] & FLAG_ZSTD
    zp = ze["off"] + ze["hsz"]
    bad = zp + 16
    z[bad] ^= 0xFF
    put("zstd_corrupt.fatbin", z,
        "from %s: byte %#x inside the ZSTD frame (frame at %#x, %#x bytes) XORed with 0xff"
        % (os.path.basename(good_zstd), bad, zp, ze["csz"]))

    # ELF host object whose .nv_fatbin section is shorter than the container in it
    o = bytearray(open(good_obj, "rb").read())
    sec = [s for s in elf_sections(bytes(o)) if s["name"] == ".nv_fatbin"][0]
    newsize = 0x100
    struct.pack_into("<Q", o, sec["hdr_off"] + 0x20, newsize)
    put("nv_fatbin_truncated.o", o,
        "from %s: section [%d] .nv_fatbin sh_size (u64 at file offset %#x) = %#x instead of %#x; the container there (file offset %#x) says entries_size %#x"
        % (os.path.basename(good_obj), sec["index"], sec["hdr_off"] + 0x20, newsize, sec["size"],
           sec["offset"], struct.unpack_from("<Q", o, sec["offset"] + 8)[0]))


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "nvfatbin":
        cmd_nvfatbin(args[0], args[1], args[2], args[3], args[4], args[5:])
    elif cmd == "normalize-obj":
        cmd_normalize_obj(args[0])
    elif cmd == "info":
        cmd_info(args[0])
    elif cmd == "extract":
        cmd_extract(args[0], args[1])
    elif cmd == "corrupt":
        cmd_corrupt(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
