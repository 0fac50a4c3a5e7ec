"""The Python package against real producers' fixtures (docs/python.md): run by
scripts/test-python.sh in a fresh venv with the built wheel installed."""

import os
import subprocess
import threading

import pytest

import ptxld

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = [os.path.join(ROOT, p) for p in (
    "fixtures/ptx/llvm/cu_lib.ptx",
    "fixtures/ptx/nvvm/nv_common.ptx",
    "fixtures/link/real-libdevice-three-producers/g_nvlib.ptx",
    "fixtures/ptx/libdevice/libdevice.sm70.ptx",
)]


def cli(*args):
    """The command line's output for `args`, from the ptxld cargo built."""
    exe = os.path.join(ROOT, "target", "debug", "ptxld")
    if not os.path.exists(exe):
        pytest.skip("no target/debug/ptxld to compare with")
    out = subprocess.run([exe, *args, "-o", "-"], capture_output=True, check=True)
    return out.stdout


def test_links_like_the_command_line():
    got = ptxld.link(EXAMPLE, arch="sm_80")
    assert got.startswith(b"//") or b".version" in got[:4096]
    assert b".entry" in got
    assert got == cli("--arch=sm_80", *EXAMPLE)


def test_keywords_are_options():
    got = ptxld.link(EXAMPLE, arch="sm_80", gc_sections=True, export=["lib_counter_public"], O=3)
    assert got == cli("--arch=sm_80", "--gc-sections", "--export=lib_counter_public", "-O3", *EXAMPLE)
    fatbin = ptxld.link(EXAMPLE, emit="fatbin", arch="sm_80")
    assert fatbin[:4] == b"\x50\xed\x55\xba"   # the fatbin magic


def test_bytes_and_paths_mix():
    first = open(EXAMPLE[0], "rb").read()
    got = ptxld.link([("cu_lib.ptx", first)] + EXAMPLE[1:], arch="sm_80")
    assert b".entry" in got


def test_a_failed_link_raises_with_located_findings():
    data = open(EXAMPLE[1], "rb").read()
    with pytest.raises(ptxld.PtxLinkError) as e:
        ptxld.link([("one.ptx", data), ("two.ptx", data)])
    errors = [f for f in e.value.findings if f.severity == "error"]
    assert errors and errors[0].code == "duplicate-symbol"
    assert "duplicate symbol" in str(e.value)
    places = [n["location"]["file"] for n in errors[0].notes if n.get("location")]
    assert places[:2] == ["one.ptx", "two.ptx"]
    assert all(n["location"]["line"] >= 1 for n in errors[0].notes if n.get("location"))


def test_refused_options_and_inputs():
    with pytest.raises(ptxld.PtxLinkError) as e:
        ptxld.link(EXAMPLE, no_such_option=True)
    assert e.value.findings[0].code == "usage"
    assert "--no-such-option" in e.value.findings[0].message
    with pytest.raises(ptxld.PtxLinkError) as e:
        ptxld.link(["/nonexistent-ptxld/x.ptx"])
    assert "cannot read /nonexistent-ptxld/x.ptx" in e.value.findings[0].message
    with pytest.raises(TypeError):
        ptxld.link("a.ptx")


def test_check_returns_findings():
    assert [f for f in ptxld.check(EXAMPLE) if f.severity == "error"] == []
    data = open(EXAMPLE[1], "rb").read()
    findings = ptxld.check([("one.ptx", data), ("two.ptx", data)])
    dup = [f for f in findings if f.code == "duplicate-symbol"]
    assert dup, findings


def test_links_in_parallel_threads():
    """The GIL is released while linking: links from several threads all succeed and agree."""
    results = []

    def work():
        results.append(ptxld.link(EXAMPLE, arch="sm_80"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r == results[0] for r in results)


def test_version():
    assert ptxld.__version__ == "0.1.0"
