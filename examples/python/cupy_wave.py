"""ptxld's output loaded by CuPy (docs/python.md): the "wave" GPU program (a clang CUDA kernel,
an NVRTC device function and libdevice) linked by the `ptxld` package, loaded with
`cupy.RawModule`, run, and checked against NumPy.

    python3 examples/python/cupy_wave.py              # on a machine with a GPU and CuPy
    python3 examples/python/cupy_wave.py --link-only  # the linking half (CI, no GPU)
"""
import os
import sys
import tempfile

import ptxld

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INPUTS = [os.path.join(ROOT, p) for p in (
    "fixtures/gpu/wave/wave_kernel.ptx",
    "fixtures/gpu/wave/wave_lib.ptx",
    "fixtures/ptx/libdevice/libdevice.sm70.ptx",
)]
SCALES = [1.0, 0.5, 0.25, -2.0]   # rt_scales in fixtures/gpu/wave/wave_lib.cu


def main():
    ptx = ptxld.link(INPUTS)
    assert b".entry k_wave" in ptx, "the kernel is in the linked module"
    print("linked %d bytes of PTX with ptxld %s" % (len(ptx), ptxld.__version__))
    if "--link-only" in sys.argv:
        return 0
    import cupy as cp
    import numpy as np

    n = 1000
    x = np.random.default_rng(1).uniform(-4.0, 4.0, n).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "wave.ptx")
        with open(path, "wb") as f:
            f.write(ptx)
        kernel = cp.RawModule(path=path).get_function("k_wave")
        inp, out = cp.asarray(x), cp.zeros(3 * n, dtype=cp.float32)
        kernel(((n + 127) // 128,), (128,), (out, inp, np.int32(n)))
        got = cp.asnumpy(out).reshape(n, 3)
    scale = np.array([SCALES[i & 3] for i in range(n)], dtype=np.float32)
    want = np.stack([x * scale + np.float32(1.0), np.exp(-x), np.sin(x)], axis=1)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        print("FAIL: the kernel's results differ from NumPy's")
        return 1
    print("PASS: k_wave over %d inputs matches NumPy" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
