#!/usr/bin/env python3
"""The PTX instruction table (src/isa/table.tsv), derived and checked with ptxas 12.9.

    python3 scripts/isa_table.py derive [FILE.ptx ...]  which fixture instructions need what
    python3 scripts/isa_table.py check                  every row accepted/rejected as stated
    python3 scripts/isa_table.py fill                   rows with `?` values: find them by experiment
    python3 scripts/isa_table.py targets                the lowest .version of each .target
    python3 scripts/isa_table.py forms                  the fixtures' instruction forms, unknown ones marked

ptxas: $PTXAS, else .tools/nv/nvidia/cuda_nvcc/bin/ptxas. docs/isa-table.md explains the table.
No third-party packages.
"""

import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "src/isa/table.tsv")
PREAMBLE = os.path.join(ROOT, "src/isa/preamble.ptx")
PTXAS = os.environ.get("PTXAS") or os.path.join(ROOT, ".tools/nv/nvidia/cuda_nvcc/bin/ptxas")

# Every PTX ISA version up to 8.8 (what ptxas 12.9 implements), in order.
VERSIONS = (
    "1.0 1.1 1.2 1.3 1.4 1.5 2.0 2.1 2.2 2.3 3.0 3.1 3.2 4.0 4.1 4.2 4.3 5.0 "
    "6.0 6.1 6.2 6.3 6.4 6.5 7.0 7.1 7.2 7.3 7.4 7.5 7.6 7.7 7.8 "
    "8.0 8.1 8.2 8.3 8.4 8.5 8.6 8.7 8.8"
).split()

# `.address_size 64` (which every ptxld module has) needs 2.3: the lowest header that
# ptxas 12.9 accepts at all ("Feature '.address_size directive' requires PTX ISA
# .version 2.3 or later").
FLOOR_VERSION = "2.3"

# Every `.target` ptxas 12.9 knows, in ascending order (an `f` target between the base
# and the `a` one: sm_100 < sm_100f < sm_100a), with the lowest `.version` that accepts
# it (measured: `targets`). sm_88 and sm_110 are ISA 9.0 and unknown to ptxas 12.9.
TARGETS = [
    ("sm_10", "1.0"), ("sm_11", "1.0"), ("sm_12", "1.2"), ("sm_13", "1.2"),
    ("sm_20", "2.0"), ("sm_30", "3.0"), ("sm_32", "4.0"), ("sm_35", "3.1"),
    ("sm_37", "4.1"), ("sm_50", "4.0"), ("sm_52", "4.1"), ("sm_53", "4.2"),
    ("sm_60", "5.0"), ("sm_61", "5.0"), ("sm_62", "5.0"), ("sm_70", "6.0"),
    ("sm_72", "6.1"), ("sm_75", "6.3"), ("sm_80", "7.0"), ("sm_86", "7.1"),
    ("sm_87", "7.4"), ("sm_89", "7.8"), ("sm_90", "7.8"), ("sm_90a", "8.0"),
    ("sm_100", "8.6"), ("sm_100f", "8.8"), ("sm_100a", "8.6"),
    ("sm_101", "8.6"), ("sm_101f", "8.8"), ("sm_101a", "8.6"),
    ("sm_103", "8.8"), ("sm_103f", "8.8"), ("sm_103a", "8.8"),
    ("sm_120", "8.7"), ("sm_120f", "8.8"), ("sm_120a", "8.7"),
    ("sm_121", "8.8"), ("sm_121f", "8.8"), ("sm_121a", "8.8"),
]
TARGET_NAMES = [t for t, _ in TARGETS]
TARGET_VERSION = dict(TARGETS)

# The real architectures ptxas 12.9 compiles for (`-arch`); below sm_50 it has none.
REAL_ARCHS = [t for t in TARGET_NAMES if TARGET_NAMES.index(t) >= TARGET_NAMES.index("sm_50")]


def vkey(v):
    return VERSIONS.index(v)


def vmax(*vs):
    return max(vs, key=vkey)


def tkey(t):
    return -1 if t == "-" else TARGET_NAMES.index(t)


def tmax(*ts):
    return max(ts, key=tkey)


def arch_for(target):
    """The -arch to compile a `.target target` module with: that target, else the lowest
    real architecture above it (sm_50 for the old ones)."""
    return target if target in REAL_ARCHS else "sm_50"


# ---------------------------------------------------------------------------- table


class Row:
    def __init__(self, line_no, fields):
        self.line_no = line_no
        self.opcode, mods, self.ptx, self.target, self.example, self.ptxas = fields
        self.mods = frozenset() if mods == "-" else frozenset(mods.split())

    def key(self):
        return f"{self.opcode} {' '.join(sorted(self.mods)) or '-'}"

    def is_named(self):
        """A row named by a directive, operator, special register, pragma or form
        (`.alias`, `generic()`, `%globaltimer`, `tex offset`) rather than an opcode."""
        return self.opcode != "*" and not re.fullmatch(r"[A-Za-z0-9_]+", self.opcode)

    def at_module_scope(self):
        """A directive statement's example goes at module scope, any other in the kernel."""
        return self.example.startswith(".")


def read_table(path=TABLE):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 6:
                sys.exit(f"{path}:{n}: expected 6 tab-separated columns, got {len(fields)}")
            rows.append(Row(n, fields))
    return rows


def split_word(word):
    """`ld.global.v2.u32` -> (`ld`, {`.global`, `.v2`, `.u32`})."""
    parts = word.split(".")
    return parts[0], frozenset("." + p for p in parts[1:] if p)


def requirement(rows, opcode, mods):
    """(ptx, target) an instruction needs: per component the maximum over the rows that
    apply (same opcode or `*`, every row modifier among `mods`); None if unknown."""
    base = any(r.opcode == opcode and not r.mods for r in rows)
    known = set()
    for r in rows:
        if r.opcode in (opcode, "*"):
            known |= r.mods
    if not base or not mods <= known:
        return None
    ptx, target = "1.0", "-"
    for r in rows:
        if r.opcode in (opcode, "*") and r.mods <= mods:
            ptx, target = vmax(ptx, r.ptx), tmax(target, r.target)
    return ptx, target


def example_word(row):
    """The example's instruction word (after a predicate guard), or its directive."""
    text = row.example
    # An example may declare what its instruction needs first (`brx.idx`'s
    # `.branchtargets`): the instruction is its last statement.
    # A block (`{ .param .b32 a0; st.param.b32 [a0], %r1; }`) counts as its last statement.
    text = [s.strip(" \t{}") for s in text.split(";") if s.strip(" \t{}")][-1]
    text = re.sub(r"^@!?%?\w+\s+", "", text)
    return text.split()[0]


# --------------------------------------------------------------------------- ptxas


def module(example, version, target, directive=False):
    with open(PREAMBLE) as f:
        text = f.read()
    text = text.replace("VERSION", version).replace("TARGET", target)
    if directive:
        return text.replace("MODULE_SCOPE", example).replace("EXAMPLE", "")
    return text.replace("MODULE_SCOPE", "").replace("EXAMPLE", example)


def ptxas(text, arch, name="k"):
    """(accepted, stderr) of a whole-program ptxas -arch=arch on `text`."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, name + ".ptx")
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run(
            [PTXAS, f"-arch={arch}", "-o", os.devnull, p],
            capture_output=True,
            text=True,
        )
        return r.returncode == 0, r.stderr


FEATURE = re.compile(
    r"line (\d+); error\s*: (?:Feature|Instruction) '(.+?)' requires "
    r"(?:PTX ISA \.version (\d+\.\d+) or later|\.target (sm_\w+) or higher)"
)


def features(stderr):
    """[(line, feature, version or None, target or None)] of ptxas's Feature messages."""
    return [(int(l), f, v, t) for l, f, v, t in FEATURE.findall(stderr)]


def header_for(ptx, target):
    """The header a row is tried under: its target (or sm_10, which every version
    accepts), at the row's version raised to what that target and .address_size need."""
    t = "sm_10" if target == "-" else target
    return vmax(ptx, TARGET_VERSION[t], FLOOR_VERSION), t


def try_row(row, ptx, target):
    version, t = header_for(ptx, target)
    return ptxas(module(row.example, version, t, row.at_module_scope()), arch_for(t))


def lower_version(v):
    i = vkey(v)
    return VERSIONS[i - 1] if i > 0 else None


def lower_target(t):
    i = tkey(t)
    return TARGET_NAMES[i - 1] if i > 0 else None


def row_trials(row):
    """[(what, ptx, target, must_accept)] that prove the row: accepted at its values,
    refused one version lower (unless its header needs that version anyway) and one
    target lower (where it names one)."""
    trials = [("accept", row.ptx, row.target, True)]
    lv = lower_version(row.ptx)
    t = "sm_10" if row.target == "-" else row.target
    if lv and vkey(lv) >= vkey(vmax(TARGET_VERSION[t], FLOOR_VERSION)):
        trials.append((f"reject .version {lv}", lv, row.target, False))
    if row.target != "-":
        lt = lower_target(row.target)
        trials.append((f"reject .target {lt}", row.ptx, lt, False))
    return trials


def parallel(fn, items, jobs=None):
    jobs = jobs or max(2, os.cpu_count() or 2)
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(fn, items))


# ------------------------------------------------------------------------ fixtures


def strip_comments(text):
    # Block comments keep their newlines, so that line numbers stay ptxas's.
    text = re.sub(r"/\*.*?\*/", lambda m: " " + "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def instructions(text):
    """[(line, word)] of every instruction statement in a PTX module: statements inside
    function bodies (not initializers, not directives), label and guard removed."""
    text = strip_comments(text)
    out = []
    depth = 0  # brace depth of bodies and blocks
    stmt, start_line, line = [], 1, 1
    i = 0
    while i < len(text):
        c = text[i]
        so_far = "".join(stmt)
        if c == "{" and ("=" in so_far or (depth > 0 and so_far.strip())):
            # An initializer or a vector operand (`{%r1, %r2}`), not a block: keep it
            # in the statement, up to its closing brace.
            j, d = i, 0
            while True:
                d += text[j] == "{"
                d -= text[j] == "}"
                line += text[j] == "\n"
                j += 1
                if d == 0:
                    break
            stmt.append(text[i:j])
            i = j
            continue
        if c in ";{}":
            s = "".join(stmt)
            if c == ";" and depth > 0:
                word = statement_word(s)
                if word:
                    out.append((start_line, word))
            depth += (c == "{") - (c == "}")
            stmt, start_line = [], line
        else:
            if not "".join(stmt).strip() and not c.isspace():
                start_line = line
            stmt.append(c)
        line += c == "\n"
        i += 1
    return out


def statement_word(s):
    s = s.strip()
    while True:  # labels
        m = re.match(r"^[$%\w]+\s*:\s*", s)
        if not m or "::" in s[: m.end()]:
            break
        s = s[m.end():]
    s = re.sub(r"^@!?%?[\w$]+\s+", "", s)
    if not s or s.startswith("."):
        return None
    word = s.split()[0]
    return word if re.match(r"^[a-z][a-z0-9_]*(\.[A-Za-z0-9_:]+)*$", word) else None


def fixture_files():
    """Every fixture module but the deliberately broken ones (fixtures/broken, `bad/`,
    `*-invalid/`): their forms are what real producers (and the hand-written
    fixtures) write."""
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "fixtures")):
        rel = os.path.relpath(d, ROOT).split(os.sep)
        if "broken" in rel or "bad" in rel or any(c.endswith("-invalid") for c in rel):
            continue
        out += [os.path.join(d, f) for f in files if f.endswith(".ptx")]
    return sorted(out)


def fixture_forms():
    """{word: first fixture using it} over every fixture module."""
    forms = {}
    for p in fixture_files():
        with open(p, errors="replace") as f:
            for _, w in instructions(f.read()):
                forms.setdefault(w, os.path.relpath(p, ROOT))
    return forms


# ------------------------------------------------------------------------ commands


def cmd_forms(args):
    rows = read_table() if os.path.exists(TABLE) else []
    forms = fixture_forms()
    unknown = 0
    for w in sorted(forms):
        op, mods = split_word(w)
        req = requirement(rows, op, mods)
        unknown += req is None
        print(f"{w}\t{'UNKNOWN' if req is None else ' '.join(req)}\t{forms[w]}")
    print(f"{len(forms)} forms, {unknown} unknown", file=sys.stderr)
    return 1 if unknown else 0


def cmd_targets(args):
    """The lowest .version ptxas 12.9 accepts each .target with."""
    bad = 0

    def lowest(t):
        for v in VERSIONS[vkey(FLOOR_VERSION):]:
            ok, _ = ptxas(module("", v, t), arch_for(t))
            if ok:
                return v
        return None

    found = parallel(lowest, TARGET_NAMES)
    for (t, v), got in zip(TARGETS, found):
        # Below 2.3 .address_size itself fails: the table's value there is from the ISA.
        flag = "" if got == vmax(v, FLOOR_VERSION) else f"   MISMATCH (table says {v})"
        bad += bool(flag)
        print(f"{t}\t{got}{flag}")
    return 1 if bad else 0


def lower_header(text, version, target):
    text = re.sub(r"^[ \t]*\.version[ \t]+\S+", f".version {version}", text, count=1, flags=re.M)
    return re.sub(r"^[ \t]*\.target[ \t]+[^\n]*", f".target {target}", text, count=1, flags=re.M)


def derive_file(path):
    """Lower the header to 2.3/sm_10, then raise it to what ptxas says until it stops
    asking: [(line, word, feature, version, target)] of everything it asked for."""
    with open(path, errors="replace") as f:
        text = f.read()
    words = dict(instructions(text))
    # sm_20: below it, every .func with parameters fails ("Function parameter 'r' has
    # illegal state space": no ABI), which hides the rest.
    version, target = FLOOR_VERSION, "sm_20"
    seen = {}
    for _ in range(12):
        ok, err = ptxas(lower_header(text, version, target), arch_for(target))
        found = features(err)
        new_v, new_t = version, target
        for line, feat, v, t in found:
            seen.setdefault((line, feat), (v, t))
            if v:
                new_v = vmax(new_v, v)
            if t:
                new_t = tmax(new_t, t)
        new_v = vmax(new_v, TARGET_VERSION[new_t])
        if (new_v, new_t) == (version, target):
            break
        version, target = new_v, new_t
    out = [(l, words.get(l, "?"), f, v, t) for (l, f), (v, t) in sorted(seen.items())]
    return out, (version, target, ok, err)


def cmd_derive(args):
    files = args or fixture_files()
    results = parallel(derive_file, files)
    for p, (found, (v, t, ok, err)) in zip(files, results):
        print(f"== {os.path.relpath(p, ROOT)}: needs .version {v} .target {t}"
              + ("" if ok else "  (ptxas still refuses: " + err.strip().splitlines()[0] + ")"))
        for l, w, f, v, t in found:
            print(f"   line {l}\t{w}\t'{f}'\t{v or t}")
    return 0


def probe(row):
    """(ptx, target, ptxas feature name) the row's example needs, by experiment: the
    lowest target accepted at 8.8, then the lowest version accepted with it."""
    for t in TARGET_NAMES:
        ok, _ = ptxas(module(row.example, "8.8", t, row.at_module_scope()), arch_for(t))
        if ok:
            break
    else:
        return None
    names = []
    for v in VERSIONS[vkey(vmax(TARGET_VERSION[t], FLOOR_VERSION)):]:
        ok, err = ptxas(module(row.example, v, t, row.at_module_scope()), arch_for(t))
        if ok:
            break
        names += [f for _, f, _, _ in features(err)]
    i = tkey(t)
    if i > 0:
        lt = TARGET_NAMES[i - 1]
        _, err = ptxas(module(row.example, "8.8", lt, row.at_module_scope()), arch_for(lt))
        names += [f for _, f, _, _ in features(err)]
    target = "-" if t == "sm_10" else t
    return v, target, (names[-1] if names else "-")


def cmd_fill(args):
    """Rewrite the table rows whose ptx is `?` with probed values."""
    with open(TABLE) as f:
        lines = f.read().split("\n")
    rows = [r for r in read_table() if r.ptx == "?"]
    results = parallel(probe, rows)
    for r, res in zip(rows, results):
        if res is None:
            print(f"line {r.line_no}: never accepted: {r.example}")
            continue
        v, t, name = res
        f = lines[r.line_no - 1].split("\t")
        f[2], f[3] = v, t
        if f[5] in ("?", "-"):
            f[5] = name
        lines[r.line_no - 1] = "\t".join(f)
        print(f"{r.key()}\t{v}\t{t}\t{name}")
    with open(TABLE, "w") as f:
        f.write("\n".join(lines))
    return 0


def cmd_check(args):
    rows = read_table()
    failures = []

    # Self-consistency: each example needs exactly its row's values, from the table.
    # A named row is its own requirement.
    for r in (r for r in rows if not r.is_named()):
        got = requirement(rows, *split_word(example_word(r)))
        if got != (r.ptx, r.target):
            failures.append(f"line {r.line_no} {r.key()}: the table gives its example {got}, "
                            f"the row says {(r.ptx, r.target)}")
        if r.opcode != "*" and split_word(example_word(r))[0] != r.opcode:
            failures.append(f"line {r.line_no} {r.key()}: example's opcode differs")

    # Coverage: every fixture instruction form is known.
    for w, where in sorted(fixture_forms().items()):
        if requirement(rows, *split_word(w)) is None:
            failures.append(f"fixture form {w} ({where}) is unknown to the table")

    # ptxas: every row accepted at its values, refused one version / target lower.
    trials = [(r, t) for r in rows for t in row_trials(r)]

    def run(rt):
        r, (what, ptx, target, accept) = rt
        ok, err = try_row(r, ptx, target)
        return None if ok == accept else (
            f"line {r.line_no} {r.key()}: {what}: ptxas {'refused' if accept else 'accepted'}"
            + (": " + " | ".join(err.strip().splitlines()[:2]) if err.strip() else ""))

    failures += [f for f in parallel(run, trials) if f]
    for f in failures:
        print(f)
    print(f"{len(rows)} rows, {len(trials)} ptxas runs, {len(fixture_forms())} fixture forms, "
          f"{len(failures)} failures")
    return 1 if failures else 0


def main():
    cmds = {"derive": cmd_derive, "check": cmd_check, "fill": cmd_fill,
            "targets": cmd_targets, "forms": cmd_forms}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]))


if __name__ == "__main__":
    main()
