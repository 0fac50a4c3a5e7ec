#!/usr/bin/env bash
# Regenerate every producer fixture under fixtures/ptx/ from fixtures/src/, then check them
# with scripts/check-fixtures.sh. Hand-written fixtures (fixtures/ptx/hand/) are not touched.
#
#   scripts/install-tools.sh      # once
#   scripts/regen-fixtures.sh     # [--no-check]
#
# Output is deterministic for a given toolchain (clang/llvm 14.0.6, GCC 12.2.0, NVRTC and
# libNVVM 12.9.86) and independent of the checkout path: the compilers run with
# repository-relative file names and -fdebug-prefix-map/-ffile-prefix-map, and NVRTC/libNVVM
# run from "/" (see scripts/nvrtc_nvvm.py).
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools.env
source scripts/tools.env

CHECK=1
[ "${1:-}" = "--no-check" ] && CHECK=0

for t in clang-14 llc-14 opt-14 gcc-12 x86_64-linux-gnu-accel-nvptx-none-gcc-12 nvptx-none-as python3; do
  command -v "$t" >/dev/null || { echo "regen-fixtures: $t not found; run scripts/install-tools.sh" >&2; exit 1; }
done
for f in "$PTXAS" "$NVRTC_SO" "$NVVM_SO" "$LIBDEVICE_BC"; do
  [ -e "$f" ] || { echo "regen-fixtures: $f not found; run scripts/install-tools.sh" >&2; exit 1; }
done

SRC=fixtures/src
OUT_TMP="$(mktemp -d "${TMPDIR:-/tmp}/ptxld-fixtures.XXXXXX")"
trap 'rm -rf "$OUT_TMP"' EXIT
O="$OUT_TMP/ptx"
B="$OUT_TMP/build"
mkdir -p "$O"/{llvm,gcc,gcc-raw,nvrtc,nvvm,nvvm-invalid,libdevice} "$B"

say() { printf 'regen: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- LLVM 14 (clang, llc)
CUDA_FLAGS=(-x cuda --cuda-device-only --cuda-gpu-arch=sm_70 -nocudainc -nocudalib -fgpu-rdc
            -include prelude.h "-fdebug-prefix-map=$ROOT/=")
C_FLAGS=(-x c --target=nvptx64-nvidia-cuda -fcommon "-fdebug-prefix-map=$ROOT/=")
(
  cd "$SRC/llvm"   # relative names: __FILE__ in assert() strings is "cu_kernels.cu"
  say "llvm: cu_kernels cu_lib cu_lineinfo"
  clang-14 "${CUDA_FLAGS[@]}" -O2    -S cu_kernels.cu  -o "$O/llvm/cu_kernels.ptx"
  clang-14 "${CUDA_FLAGS[@]}" -O2    -S cu_lib.cu      -o "$O/llvm/cu_lib.ptx"
  clang-14 "${CUDA_FLAGS[@]}" -O2 -g -S cu_lineinfo.cu -o "$O/llvm/cu_lineinfo.ptx"
  say "llvm: c_common c_debug c_debug2"
  clang-14 "${C_FLAGS[@]}" -march=sm_70 -O2 -S c_common.c -o "$O/llvm/c_common.ptx"
  clang-14 "${C_FLAGS[@]}" -march=sm_70 -O0 -gdwarf-2 -S c_debug.c -o "$O/llvm/c_debug.ptx"
  clang-14 "${C_FLAGS[@]}" -march=sm_70 -O0 -gdwarf-4 -S c_debug2.c -o "$O/llvm/c_debug2.ptx"
  say "llvm: llc_vec_ptx72 (sm_80) llc_kernel_ptx75 (sm_86)"
  clang-14 "${C_FLAGS[@]}" -march=sm_80 -O2 -emit-llvm -S llc_vec.c -o "$B/llc_vec.ll"
  llc-14 -march=nvptx64 -mcpu=sm_80 -mattr=+ptx72 "$B/llc_vec.ll" -o "$O/llvm/llc_vec_ptx72.ptx"
  llc-14 -march=nvptx64 -mcpu=sm_86 -mattr=+ptx75 llc_kernel.ll -o "$O/llvm/llc_kernel_ptx75.ptx"
)

# ---------------------------------------------------------------- libdevice (opt + llc)
say "libdevice: libdevice.sm70 (opt-14 O2 + llc-14 sm_70)"
opt-14 -mtriple=nvptx64-nvidia-cuda -mcpu=sm_70 -passes='default<O2>' "$LIBDEVICE_BC" -o "$B/libdevice.opt.bc"
llc-14 -march=nvptx64 -mcpu=sm_70 "$B/libdevice.opt.bc" -o "$O/libdevice/libdevice.sm70.ptx"

# ---------------------------------------------------------------- GCC 12 (nvptx offload)
# gcc_offload NAME MODEL(acc|omp) OUTNAME [accel flags...]
gcc_offload() {
  local name=$1 model=$2 out=$3; shift 3
  local host=(-fopenacc) accel=(-fopenacc -fno-openmp)
  if [ "$model" = omp ]; then host=(-fopenmp); accel=(-fopenmp -mgomp); fi
  if [ ! -e "$B/$name.$model.host.o" ]; then
    gcc-12 "${host[@]}" -foffload=nvptx-none -fcommon -O2 "-ffile-prefix-map=$ROOT/=" \
      -c "$SRC/gcc/$name.c" -o "$B/$name.$model.host.o"
  fi
  x86_64-linux-gnu-accel-nvptx-none-gcc-12 -xlto -m64 -fPIC -foffload-abi=lp64 -O2 \
    "${accel[@]}" "$@" -S "$B/$name.$model.host.o" -o "$B/$out.raw.s"
  nvptx-none-as --no-verify "$B/$out.raw.s" -o "$O/gcc/$out.ptx"
}
say "gcc: g_math g_acc g_omp g_debug g_warp_sm80 g_warp_ptx31"
gcc_offload g_math  acc g_math
gcc_offload g_acc   acc g_acc
gcc_offload g_omp   omp g_omp
gcc_offload g_debug acc g_debug -g
gcc_offload g_warp  acc g_warp_sm80  -misa=sm_80 -mptx=7.0
gcc_offload g_warp  acc g_warp_ptx31 -misa=sm_30 -mptx=3.1
# raw lto1 output before nvptx-none-as: NOT valid PTX (declarations after use, .file in bodies)
cp "$B/g_debug.raw.s" "$O/gcc-raw/g_debug.s"

# ---------------------------------------------------------------- NVRTC 12.9
nvrtc() { python3 scripts/nvrtc_nvvm.py nvrtc "$SRC/nvrtc/$1.cu" "$O/nvrtc/$2.ptx" "${@:3}"; }
say "nvrtc: rt_lib rt_kernels rt_fnptr rt_debug rt_debug2 rt_lineinfo rt_cluster rt_prog_a rt_prog_b"
nvrtc rt_lib      rt_lib      -rdc=true -arch=compute_80
nvrtc rt_kernels  rt_kernels  -rdc=true -arch=compute_80
nvrtc rt_fnptr    rt_fnptr    -rdc=true -arch=compute_80
nvrtc rt_debug    rt_debug    -rdc=true -arch=compute_80 -G
nvrtc rt_debug2   rt_debug2   -rdc=true -arch=compute_80 -G
nvrtc rt_lineinfo rt_lineinfo -rdc=true -arch=compute_80 -lineinfo
nvrtc rt_cluster  rt_cluster  -rdc=true -arch=compute_90
nvrtc rt_prog_a   rt_prog_a   -rdc=true -arch=compute_80
nvrtc rt_prog_b   rt_prog_b   -rdc=true -arch=compute_80

# ---------------------------------------------------------------- libNVVM 12.9
nvvm() { local d=$1 n=$2; shift 2; python3 scripts/nvrtc_nvvm.py nvvm "$SRC/nvvm/$n.ll" "$O/$d/$n.ptx" "$@"; }
say "nvvm: nv_common nv_libdev nv_aggr nv_alias (+ nvvm-invalid/nv_alias_fwd)"
nvvm nvvm nv_common -arch=compute_80
nvvm nvvm nv_libdev --libdevice "$LIBDEVICE_BC" -arch=compute_80
nvvm nvvm nv_aggr   -arch=compute_80
nvvm nvvm nv_alias  -arch=compute_80
nvvm nvvm-invalid nv_alias_fwd -arch=compute_80

# ---------------------------------------------------------------- GPU programs (fixtures/gpu)
# Small multi-producer programs with kernels that scripts/gpu_test.py runs (docs/testing.md,
# "GPU test"). Sources and PTX sit together in fixtures/gpu/<program>/.
GPU_CU=(-x cuda --cuda-device-only --cuda-gpu-arch=sm_70 -nocudainc -nocudalib -fgpu-rdc
        -I "$ROOT/$SRC/llvm" -include prelude.h -O2 -ffp-contract=off)
GPU_C=(-x c --target=nvptx64-nvidia-cuda -fcommon -march=sm_70 -O2)
G=fixtures/gpu
mkdir -p "$O/gpu"/{wave,hash,rules}
say "gpu: wave (clang CUDA + NVRTC + libdevice)"
( cd "$G/wave" && clang-14 "${GPU_CU[@]}" -S wave_kernel.cu -o "$O/gpu/wave/wave_kernel.ptx" )
python3 scripts/nvrtc_nvvm.py nvrtc "$G/wave/wave_lib.cu" "$O/gpu/wave/wave_lib.ptx" -rdc=true -arch=compute_70 -fmad=false
say "gpu: hash (NVRTC + clang C + NVVM)"
python3 scripts/nvrtc_nvvm.py nvrtc "$G/hash/hash_kernel.cu" "$O/gpu/hash/hash_kernel.ptx" -rdc=true -arch=compute_70
( cd "$G/hash" && clang-14 "${GPU_C[@]}" -S hash_c.c -o "$O/gpu/hash/hash_c.ptx" )
python3 scripts/nvrtc_nvvm.py nvvm "$G/hash/hash_nv.ll" "$O/gpu/hash/hash_nv.ptx" -arch=compute_70
say "gpu: rules (clang CUDA + clang C + NVVM + NVRTC + GCC)"
( cd "$G/rules" && clang-14 "${GPU_CU[@]}" -S rules_kernel.cu -o "$O/gpu/rules/rules_kernel.ptx" )
( cd "$G/rules" && clang-14 "${GPU_C[@]}" -S rules_c.c -o "$O/gpu/rules/rules_c.ptx" )
python3 scripts/nvrtc_nvvm.py nvvm "$G/rules/rules_nv.ll" "$O/gpu/rules/rules_nv.ptx" -arch=compute_70
python3 scripts/nvrtc_nvvm.py nvrtc "$G/rules/rules_rt.cu" "$O/gpu/rules/rules_rt.ptx" -rdc=true -arch=compute_70
gcc-12 -fopenacc -foffload=nvptx-none -fcommon -O2 "-ffile-prefix-map=$ROOT/=" -c "$G/rules/rules_g.c" -o "$B/rules_g.host.o"
x86_64-linux-gnu-accel-nvptx-none-gcc-12 -xlto -m64 -fPIC -foffload-abi=lp64 -O2 -fopenacc -fno-openmp \
  -S "$B/rules_g.host.o" -o "$B/rules_g.raw.s"
nvptx-none-as --no-verify "$B/rules_g.raw.s" -o "$O/gpu/rules/rules_g.ptx"

# ---------------------------------------------------------------- install
for d in llvm gcc gcc-raw nvrtc nvvm nvvm-invalid libdevice; do
  rm -rf "fixtures/ptx/$d"
  mkdir -p "fixtures/ptx/$d"
  cp "$O/$d"/* "fixtures/ptx/$d/"
done
for p in wave hash rules; do
  cp "$O/gpu/$p"/*.ptx "fixtures/gpu/$p/"
done
rm -rf "$O/gpu"
say "wrote $(find "$O" -type f | wc -l) files under fixtures/ptx/"

if [ "$CHECK" -eq 1 ]; then
  scripts/check-fixtures.sh
fi
