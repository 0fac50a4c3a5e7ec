#!/usr/bin/env bash
# The Python package's tests (docs/python.md): builds the wheel with maturin, installs it
# into a fresh venv and runs its pytest suite there. Installs maturin and pytest itself
# (into target/pyvenv*), so `just test` needs nothing beyond python3.
#
# --gpu: instead, runs the CuPy example on the GPU, in a venv that also sees the
# system's packages (CuPy, NumPy); without CuPy it says it skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
build=target/pyvenv-build
[ -x "$build/bin/maturin" ] || { python3 -m venv "$build" && "$build/bin/pip" install -q "maturin>=1.5,<2"; }
rm -rf target/wheels
"$build/bin/maturin" build --quiet -m python/Cargo.toml -o target/wheels
fresh=target/pyvenv-test
rm -rf "$fresh"
if [ "${1:-}" = "--gpu" ]; then
  python3 -m venv --system-site-packages "$fresh"
  "$fresh/bin/pip" install -q target/wheels/ptxld-*.whl
  if ! "$fresh/bin/python" -c "import cupy" >/dev/null 2>&1; then
    echo "*** SKIPPED the CuPy example: no CuPy ***" >&2
    exit 0
  fi
  exec "$fresh/bin/python" examples/python/cupy_wave.py
fi
python3 -m venv "$fresh"
"$fresh/bin/pip" install -q target/wheels/ptxld-*.whl pytest
"$fresh/bin/python" examples/python/cupy_wave.py --link-only
cd python/tests
"../../$fresh/bin/python" -m pytest -q -p no:cacheprovider
