#!/usr/bin/env bash
# Install everything the tests and scripts/regen-fixtures.sh need, idempotently:
#   * Debian packages: clang-14 llvm-14 gcc-12 gcc-12-offload-nvptx nvptx-tools python3-pip
#     (apt is skipped entirely when every binary is already present; `apt-get update` runs
#     only when something has to be installed);
#   * NVIDIA wheels (ptxas, libNVVM, libdevice, NVRTC, nvJitLink, libnvfatbin, cuobjdump,
#     and nvdisasm, which `cuobjdump -sass` runs)
#     into .tools/nv with ONE `pip install --target` call (skipped when all files are present);
#   * `.tools/` in .gitignore.
# Works non-interactively (CI=true, no stdin). Run from anywhere; needs root or sudo for apt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(clang-14 llvm-14 gcc-12 gcc-12-offload-nvptx nvptx-tools python3-pip python3-venv valgrind pkg-config)
# binaries that prove the packages above are installed
NEEDED_BINS=(clang-14 llc-14 opt-14 gcc-12 x86_64-linux-gnu-accel-nvptx-none-gcc-12
             nvptx-none-as nvptx-none-ld python3 valgrind pkg-config)

NV_DIR=.tools/nv
NV_WHEELS=(nvidia-cuda-nvcc-cu12==12.9.86 nvidia-nvjitlink-cu12==12.9.86
           nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-nvfatbin-cu12==12.9.82
           nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37)
NV_FILES=(nvidia/cuda_nvcc/bin/ptxas
          nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so
          nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc
          nvidia/cuda_nvrtc/lib/libnvrtc.so.12
          nvidia/nvjitlink/lib/libnvJitLink.so.12
          nvidia/nvfatbin/lib/libnvfatbin.so.12
          nvidia/cu13/bin/cuobjdump
          nvidia/cu13/bin/nvdisasm)

log() { printf 'install-tools: %s\n' "$*" >&2; }

# ---- 1. Debian packages -------------------------------------------------------------
missing_bins=()
for b in "${NEEDED_BINS[@]}"; do
  command -v "$b" >/dev/null 2>&1 || missing_bins+=("$b")
done
if ! python3 -m pip --version >/dev/null 2>&1; then
  missing_bins+=("python3 -m pip")
fi
# The Python package's tests make virtual environments (scripts/test-python.sh).
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  missing_bins+=("python3 -m venv")
fi

if [ "${#missing_bins[@]}" -eq 0 ]; then
  log "apt: all binaries present, skipping apt"
else
  log "apt: missing: ${missing_bins[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else
      log "error: not root and no sudo; install as root: apt-get install -y ${APT_PACKAGES[*]}"
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update </dev/null
  "${SUDO[@]}" apt-get install -y "${APT_PACKAGES[@]}" </dev/null
fi

# ---- 2. NVIDIA wheels ---------------------------------------------------------------
nv_missing=0
for f in "${NV_FILES[@]}"; do
  [ -e "$NV_DIR/$f" ] || { nv_missing=1; log "wheels: missing $NV_DIR/$f"; }
done
if [ "$nv_missing" -eq 0 ]; then
  log "wheels: all files present in $NV_DIR, skipping pip"
else
  # A second `pip install --target` into an existing directory may skip the shared
  # nvidia/ package directory, so always install every wheel in one call into a fresh dir.
  rm -rf "$NV_DIR"
  mkdir -p "$(dirname "$NV_DIR")"
  python3 -m pip install --no-input --disable-pip-version-check --no-deps \
    --target "$NV_DIR" "${NV_WHEELS[@]}" </dev/null
  for f in "${NV_FILES[@]}"; do
    [ -e "$NV_DIR/$f" ] || { log "error: $NV_DIR/$f still missing after pip install"; exit 1; }
  done
fi
chmod +x "$NV_DIR/nvidia/cuda_nvcc/bin/ptxas" "$NV_DIR/nvidia/cu13/bin/cuobjdump" \
  "$NV_DIR/nvidia/cu13/bin/nvdisasm"

# ---- 3. .gitignore --------------------------------------------------------------------
touch .gitignore
for line in /target /.tools/; do
  grep -qxF "$line" .gitignore || printf '%s\n' "$line" >> .gitignore
done

log "done. Use: source scripts/tools.env"
