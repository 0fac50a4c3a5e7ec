#!/usr/bin/env bash
# Regenerate fixtures/containers/: fatbins and host objects made by NVIDIA's own tools (to be
# used as ptxld INPUTS), hand-corrupted variants in bad/, and cuobjdump's view of each file in
# expected/. See fixtures/containers/README.md for what each file holds.
#
# Needs the CUDA 13.5 wheels, which are NOT part of scripts/install-tools.sh (CI never runs this
# script; the outputs are committed). They go into a scratch directory outside the repository,
# $NV135 (default /tmp/nv135), installed on first use with:
#
#   python3 -m pip install --no-input --no-deps --target /tmp/nv135 \
#       nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.5.37 \
#       nvidia-cuda-runtime==13.5.37 nvidia-cuda-cuobjdump==13.5.37 nvidia-nvfatbin-cu12==12.9.82
#
# Also needs: g++-12 (nvcc host compiler), GNU ld, zstd, python3 (standard library only).
#
# The build runs in a FIXED directory, $CONTAINERS_WORK (default /tmp/ptxld-containers-work):
# nvcc puts a hash of the source path into symbol names (__fatbinwrap_<hash>_...), so another
# directory changes bytes of the .o files (never the fatbin bytes). The pid in nvcc's
# `tmpxft_<pid>_...` STT_FILE symbol is zeroed afterwards (containers.py normalize-obj).
# With that, two runs give byte-identical files.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/fixtures/containers"
HELP="$ROOT/scripts/containers.py"
NV135="${NV135:-/tmp/nv135}"
WORK="${CONTAINERS_WORK:-/tmp/ptxld-containers-work}"
BIN="$NV135/nvidia/cu13/bin"
LIBNVFATBIN="$NV135/nvidia/nvfatbin/lib/libnvfatbin.so.12"

log() { printf 'regen-containers: %s\n' "$*" >&2; }

# ---- 0. tools ---------------------------------------------------------------------------
if [ ! -e "$BIN/nvcc" ] || [ ! -e "$BIN/fatbinary" ] || [ ! -e "$BIN/cuobjdump" ] || [ ! -e "$LIBNVFATBIN" ]; then
  if [ -e "$NV135" ] && [ -n "$(ls -A "$NV135")" ]; then
    log "error: $NV135 exists but lacks the 13.5 tools; remove it or point NV135 elsewhere"
    exit 1
  fi
  log "installing the CUDA 13.5 wheels into $NV135 (scratch, outside the repository)"
  python3 -m pip install --no-input --disable-pip-version-check --no-deps --target "$NV135" \
    nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.5.37 \
    nvidia-cuda-runtime==13.5.37 nvidia-cuda-cuobjdump==13.5.37 nvidia-nvfatbin-cu12==12.9.82 </dev/null
fi
chmod +x "$BIN"/* "$NV135"/nvidia/cu13/nvvm/bin/* 2>/dev/null || true
export PATH="$BIN:$PATH"
for t in nvcc fatbinary ptxas cuobjdump g++-12 ld zstd; do
  command -v "$t" >/dev/null || { log "error: $t not found"; exit 1; }
done
nvcc --version | grep -q 'V13.5.37' || { log "error: nvcc is not 13.5.37"; exit 1; }

# ---- 1. build in the fixed work directory ----------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK"
cp "$OUT"/src/* "$WORK"/
cd "$WORK"

# a. fatbinary 13.5 (entries are written in command-line order)
fatbinary --create=ptx_sm80.fatbin -64 --compress=false --image3=kind=ptx,sm=80,file=a.ptx
fatbinary --create=ptx_sm70_sm80.fatbin -64 --compress=false --ident=a.ptx \
          --image3=kind=ptx,sm=70,file=a_sm70.ptx --image3=kind=ptx,sm=80,file=a.ptx
fatbinary --create=ptx_sm80_zstd.fatbin -64 --image3=kind=ptx,sm=80,file=b.ptx
fatbinary --create=ptx_sm80_lz4.fatbin -64 --compress-mode=speed --image3=kind=ptx,sm=80,file=b.ptx
ptxas -arch=sm_80 b.ptx -o b.sm_80.cubin
fatbinary --create=ptx_and_cubin_sm80.fatbin -64 --compress=false \
          --image3=kind=elf,sm=80,file=b.sm_80.cubin --image3=kind=ptx,sm=80,file=b.ptx
fatbinary --create=ptx_sm90a.fatbin -64 --compress=false --image3=kind=ptx,sm=90a,file=a_sm90a.ptx
cat ptx_sm80.fatbin ptx_sm80_zstd.fatbin > concat_ptx_sm80_x2.fatbin

# b. libnvfatbin 12.9, default options (LZ4 for PTX). It deletes the first line of the text:
#    b.ptx's first line is a comment, so nothing real is lost.
python3 "$HELP" nvfatbin "$LIBNVFATBIN" nvfatbin_lz4_sm80.fatbin 80 b.ptx b.ptx

# c. nvcc 13.5 host objects
NVCC=(nvcc -ccbin g++-12 -c)
"${NVCC[@]}" -arch=compute_80 -code=compute_80 dev.cu -o nvcc_ptx_sm80.o
"${NVCC[@]}" -arch=compute_80 -code=compute_80 --compress-mode=none dev.cu -o nvcc_ptx_sm80_nocompress.o
"${NVCC[@]}" -arch=compute_80 -code=compute_80 --compress-mode=speed dev.cu -o nvcc_ptx_sm80_lz4.o
"${NVCC[@]}" -gencode 'arch=compute_80,code=[sm_80,compute_80]' -Xfatbin=-compress-all dev.cu \
             -o nvcc_ptx_cubin_sm80.o
"${NVCC[@]}" -rdc=true -arch=compute_80 -code=compute_80 dev.cu -o nvcc_rdc_sm80.o
"${NVCC[@]}" -rdc=true -arch=compute_80 -code=compute_80 --compress-mode=none user.cu -o nvcc_rdc_user_sm80.o
for o in nvcc_*.o; do python3 "$HELP" normalize-obj "$o"; done
ld -r nvcc_rdc_sm80.o nvcc_rdc_user_sm80.o -o nvcc_rdc_ldr_sm80.o

# d. hand-corrupted variants
python3 "$HELP" corrupt ptx_sm80.fatbin ptx_sm80_zstd.fatbin nvcc_ptx_sm80_nocompress.o bad

# ---- 2. install into fixtures/containers ----------------------------------------------------
VALID=(ptx_sm80.fatbin ptx_sm70_sm80.fatbin ptx_sm80_zstd.fatbin ptx_sm80_lz4.fatbin
       ptx_and_cubin_sm80.fatbin ptx_sm90a.fatbin concat_ptx_sm80_x2.fatbin nvfatbin_lz4_sm80.fatbin
       nvcc_ptx_sm80.o nvcc_ptx_sm80_nocompress.o nvcc_ptx_sm80_lz4.o nvcc_ptx_cubin_sm80.o
       nvcc_rdc_sm80.o nvcc_rdc_user_sm80.o nvcc_rdc_ldr_sm80.o)
rm -rf "$OUT"/*.fatbin "$OUT"/*.o "$OUT"/bad "$OUT"/expected
cp "${VALID[@]}" "$OUT"/
cp -r bad "$OUT"/bad
mkdir -p "$OUT/expected"

# ---- 3. verify with cuobjdump; record what it prints ----------------------------------------
# expected/<file>.txt      : containers.py info, then cuobjdump -lptx -lelf / -ptx / -xptx all / -xelf all
# expected/<file>/         : the PTX files `cuobjdump -xptx all` extracts (= decoded text without the NUL)
# expected/bad.txt         : cuobjdump's exit status and messages for each bad/ file
run() {  # run a command, print its stdout, stderr and exit status
  local o e rc=0
  o="$(mktemp)"; e="$(mktemp)"
  "$@" >"$o" 2>"$e" || rc=$?
  printf '$ %s\n' "$*"; cat "$o"; [ -s "$e" ] && { printf '[stderr]\n'; sed "s|$PWD/||g" "$e"; }
  printf '[exit %d]\n\n' "$rc"
  rm -f "$o" "$e"
}
fail=0
for f in "${VALID[@]}"; do
  x="$WORK/x/$f"; mine="$WORK/mine/$f"
  mkdir -p "$x" "$mine"
  cp "$OUT/$f" "$x/$f"
  python3 "$HELP" extract "$OUT/$f" "$mine"
  {
    printf '# %s\n$ containers.py info %s\n' "$f" "$f"
    python3 "$HELP" info "$OUT/$f"; echo
    cd "$x"
    run cuobjdump -lptx -lelf "$f"
    run cuobjdump -ptx "$f"
    run cuobjdump -xptx all "$f"
    run cuobjdump -xelf all "$f"
    rm "$f"
    cd "$WORK"
  } > "$OUT/expected/$f.txt"
  # the decoder in containers.py must agree byte for byte with cuobjdump's extraction
  if ! diff -r "$x" "$mine" >/dev/null; then
    log "error: $f: cuobjdump -xptx/-xelf differs from containers.py extract"; diff -r "$x" "$mine" | head >&2 || true; fail=1
  fi
  grep -q '^\[exit 0\]' "$OUT/expected/$f.txt" || { log "error: $f: cuobjdump failed"; fail=1; }
  mkdir -p "$OUT/expected/$f"
  for p in "$x"/*.ptx; do [ -e "$p" ] && cp "$p" "$OUT/expected/$f/"; done
  rmdir "$OUT/expected/$f" 2>/dev/null || true
done
{
  echo "# cuobjdump 13.5 on each bad/ file (run from fixtures/containers/bad)"
  cd "$OUT/bad"
  for f in *.fatbin *.o; do
    printf '## %s: %s' "$f" "$(cat "${f%.*}.txt")"; echo
    run cuobjdump -lptx -lelf "$f"
    run cuobjdump -ptx "$f"
  done
  cd "$WORK"
} > "$OUT/expected/bad.txt"
[ "$fail" -eq 0 ] || exit 1
log "done: $(ls "$OUT" | wc -l) entries in $OUT"
