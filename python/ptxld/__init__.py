"""ptxld, the PTX linker, from Python (docs/python.md).

    import ptxld
    ptx = ptxld.link(["a.ptx", "b.ptx"], arch="sm_80")            # bytes of the linked module
    ptx = ptxld.link([("kernel.ptx", text_bytes), "lib.ptx"], gc_sections=True)
    fatbin = ptxld.link(["a.ptx"], emit="fatbin", gpu_code="sm_80,compute_80")
    findings = ptxld.check(["a.ptx", "b.ptx"])                     # [] when the set links

Every option of the command line is a keyword: `arch="sm_80"` is `--arch=sm_80`, `gc_sections=True`
is `--gc-sections`, a list repeats the option (`export=["f", "g"]`), and one-letter keywords are
short options (`O=3` is `-O3`). A link that fails raises `PtxLinkError`, whose `findings` say what
and where (file, line, column), as `ptxld check --json` does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import _ptxld

__version__: str = _ptxld.__version__

#: An input: a path, or a name (used in messages) with the bytes of a PTX module, fatbin,
#: ELF object or archive.
Input = Union[str, "os.PathLike[str]", Tuple[str, bytes]]


@dataclass(frozen=True)
class Finding:
    """One diagnostic: severity ("error", "warning", "note"), its stable code
    (docs/diagnostics.md), the message, where (file, 1-based line and column, or None),
    the notes (each a message and a place) and what to do (help)."""

    severity: str
    code: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    notes: List[dict] = field(default_factory=list)
    help: Optional[str] = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = "%s:%s:%s: " % (self.file, self.line, self.column) if self.line else self.file + ": "
        return "%s: %s%s" % (self.severity, where, self.message)


class PtxLinkError(Exception):
    """A link that failed, or options or inputs that were refused. `findings` holds every
    diagnostic (errors first as the linker reports them); `text` is the report as the
    command line prints it."""

    def __init__(self, text: str, findings: List[Finding]):
        super().__init__(text.strip())
        self.text = text
        self.findings = findings


def _findings(report: str) -> List[Finding]:
    out = []
    for d in json.loads(report)["diagnostics"]:
        loc = d.get("location") or {}
        out.append(Finding(
            severity=d["severity"], code=d["code"], message=d["message"],
            file=loc.get("file"), line=loc.get("line"), column=loc.get("column"),
            notes=d.get("notes") or [], help=d.get("help")))
    return out


def _options(options: dict) -> List[str]:
    words = []
    for key, value in options.items():
        name = ("-" + key) if len(key) == 1 else ("--" + key.replace("_", "-"))
        values: Iterable[Any] = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is True:
                words.append(name)
            elif v is False or v is None:
                continue
            elif len(key) == 1:
                words.append("%s%s" % (name, v))
            else:
                words.append("%s=%s" % (name, v))
    return words


def _inputs(inputs: Sequence[Input]) -> list:
    if isinstance(inputs, (str, bytes, tuple)) or hasattr(inputs, "__fspath__"):
        raise TypeError("inputs is a list of paths or (name, bytes) pairs")
    out = []
    for i in inputs:
        if isinstance(i, tuple):
            name, data = i
            out.append((str(name), bytes(data)))
        else:
            out.append(os.fspath(i))
    return out


def link(inputs: Sequence[Input], **options: Any) -> bytes:
    """Links `inputs` (in order) into one output, PTX unless `emit` says otherwise
    ("fatbin", "obj", "cubin"), and returns its bytes. Raises PtxLinkError with the
    findings when the link fails. Warnings of a link that succeeds are not raised: see
    `link_with_findings`. The GIL is released while ptxld links."""
    return link_with_findings(inputs, **options)[0]


def link_with_findings(inputs: Sequence[Input], **options: Any) -> Tuple[bytes, List[Finding]]:
    """Like `link`, also returning the findings of a link that succeeds (its warnings)."""
    output, text, report = _ptxld.link(_inputs(inputs), _options(options))
    findings = _findings(report)
    if output is None:
        raise PtxLinkError(text, findings)
    return output, findings


def check(inputs: Sequence[Input], **options: Any) -> List[Finding]:
    """`ptxld check`: every problem of the set as findings (empty when it links cleanly),
    with the notes on where nvJitLink decides differently and what the link needs. Never
    raises for a set that does not link; raises PtxLinkError for refused options."""
    ok, text, report = _ptxld.check(_inputs(inputs), _options(options))
    findings = _findings(report)
    if not ok and any(f.code == "usage" for f in findings):
        raise PtxLinkError(text, findings)
    return findings


__all__ = ["link", "link_with_findings", "check", "Finding", "PtxLinkError", "Input", "__version__"]
