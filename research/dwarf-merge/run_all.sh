#!/usr/bin/env bash
# Regenerate the inputs, the merges and the checks of REPORT.md (sequential, light: ~1-2 min).
#   bash run_all.sh            -> prints one line per experiment
set -u
cd "$(dirname "$0")"
. ./env.sh
mkdir -p ptx out min fixtures
cp "$PTXLD_ROOT/fixtures/ptx/llvm/c_debug.ptx" "$PTXLD_ROOT/fixtures/ptx/nvrtc/rt_debug.ptx" \
   "$PTXLD_ROOT/fixtures/ptx/nvrtc/rt_lineinfo.ptx" fixtures/
P="$PTXAS -arch=sm_80 -g"
RT() { python3 "$PTXLD_ROOT/scripts/nvrtc_nvvm.py" nvrtc "$@"; }

echo "== 1. inputs"
for m in a b; do
  clang-14 --target=nvptx64-nvidia-cuda -march=sm_80 -gdwarf-2 -O0 -fcommon -S src/$m.c -o ptx/llvm_$m.ptx
  clang-14 --target=nvptx64-nvidia-cuda -march=sm_80 -gdwarf-4 -O0 -fcommon -S src/$m.c -o ptx/llvm_d4O0_$m.ptx
  clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -fgpu-rdc -include "$PTXLD_ROOT/fixtures/src/llvm/prelude.h" \
           -g -O0 -S src/$m.cu -o ptx/llvmcu_$m.ptx
done
sed 's/a_/a2_/g; s/struct pa/struct pa2/; s/b_scale/b2_scale/' src/a.c > src/a2.c
sed 's/b_/b2_/g' src/b.c > src/b2.c
for m in a2 b2 two; do clang-14 --target=nvptx64-nvidia-cuda -march=sm_80 -gdwarf-2 -O0 -fcommon -S src/$m.c -o ptx/llvm_$m.ptx; done
clang-14 --target=nvptx64-nvidia-cuda -march=sm_80 -gdwarf-4 -O2 -S src/d.c -o ptx/llvm_d4O2_d.ptx
clang-14 --target=nvptx64-nvidia-cuda -march=sm_80 -O0 -fcommon -S src/b.c -o ptx/llvmN_b.ptx
for m in a b c e f g; do
  RT src/$m.cu ptx/rtG_$m.ptx -rdc=true --gpu-architecture=compute_80 -G
  RT src/$m.cu ptx/rtL_$m.ptx -rdc=true --gpu-architecture=compute_80 -lineinfo
done
RT src/a.cu ptx/rtN_a.ptx -rdc=true --gpu-architecture=compute_80
RT src/b.cu ptx/rtN_b.ptx -rdc=true --gpu-architecture=compute_80
for f in ptx/*.ptx; do
  $P -c "$f" -o /dev/null 2>/dev/null && echo "  alone -g -c OK   $f" || echo "  alone -g -c FAIL $f"
done

asm() {  # asm NAME -> prints ptxas result for -c and full
  local r1 r2
  r1=$($P -c out/$1.ptx -o out/$1.cubin 2>&1 | grep -v 'section not found' | head -1); r1=${r1:-ok}
  r2=$($P out/$1.ptx -o out/$1.full.cubin 2>&1 | grep -v 'section not found' | head -1); r2=${r2:-ok}
  echo "  $1: -c: $r1 | full: $r2"
}

echo "== 2. naive merges (one block per name, +N, labels renamed, .file renumbered; NO abbrev union)"
for p in llvm llvmcu rtG rtL; do python3 merge.py out/${p}_i.ptx ptx/${p}_a.ptx ptx/${p}_b.ptx; asm ${p}_i; done
python3 merge.py out/rtG_ae_plain.ptx ptx/rtG_a.ptx ptx/rtG_e.ptx; asm rtG_ae_plain
python3 merge.py out/aa2.ptx ptx/llvm_a.ptx ptx/llvm_a2.ptx; asm aa2   # identical abbrev tables: passes
python3 merge.py --separate out/rtG_sep.ptx ptx/rtG_a.ptx ptx/rtG_b.ptx; asm rtG_sep
python3 merge.py --separate --no-offsets out/rtG_sep0.ptx ptx/rtG_a.ptx ptx/rtG_b.ptx; asm rtG_sep0

echo "== 3. minimal reproductions (gen_min.py)"
python3 gen_min.py min >/dev/null
for f in min/*.ptx; do r=$($P -c $f -o ${f%.ptx}.cubin 2>&1 | head -1); echo "  $f: ${r:-ok}"; done

echo "== 4. abbrev-table probes (single module, union re-encode with test hooks)"
python3 merge.py --union-abbrev --code-base 50 out/single_cb50.ptx ptx/llvm_a.ptx; asm single_cb50
python3 merge.py --union-abbrev --abbrev-reverse out/single_rev.ptx ptx/llvm_a.ptx; asm single_rev
python3 merge.py --union-abbrev --code-base 50 out/single_rtGa_cb50.ptx ptx/rtG_a.ptx; asm single_rtGa_cb50
python3 merge.py --union-abbrev out/single_rtGa_u.ptx ptx/rtG_a.ptx; asm single_rtGa_u
$P -c ptx/rtG_a.ptx -o out/rtG_a.cubin
tsz() { readelf -SW "$1" 2>/dev/null | awk '{for(i=1;i<=NF;i++) if($i==".text.a_kernel") print $(i+4)}'; }
echo "  .text.a_kernel size: alone $(tsz out/rtG_a.cubin) / union codes 1..n $(tsz out/single_rtGa_u.cubin) / codes 51.. $(tsz out/single_rtGa_cb50.cubin)"

echo "== 5. working merges (--union-abbrev) + verify.py"
run() { n=$1; shift; python3 merge.py --union-abbrev $EXTRA out/$n.ptx "$@"; asm $n
        python3 verify.py out/$n.ptx "$@" 2>/dev/null | tail -1 | sed "s/^/  $n verify: /"; }
EXTRA=""
run llvm_u ptx/llvm_a.ptx ptx/llvm_b.ptx
run llvmcu_u ptx/llvmcu_a.ptx ptx/llvmcu_b.ptx
run rtG_u ptx/rtG_a.ptx ptx/rtG_b.ptx
run rtL_u ptx/rtL_a.ptx ptx/rtL_b.ptx
run mix_u ptx/llvm_a.ptx ptx/rtG_b.ptx
run three_u ptx/rtG_a.ptx ptx/llvm_b.ptx ptx/rtG_c.ptx
run d4mix ptx/llvm_d4O0_a.ptx ptx/llvm_d4O0_b.ptx ptx/llvm_d4O2_d.ptx ptx/rtG_c.ptx
run rtG_aef ptx/rtG_a.ptx ptx/rtG_e.ptx ptx/rtG_f.ptx ptx/rtG_b.ptx
run rtL_fg ptx/rtL_f.ptx ptx/rtL_g.ptx
run li1 ptx/rtL_f.ptx ptx/rtG_g.ptx ptx/llvm_b.ptx
run nd1 ptx/llvm_a.ptx ptx/llvmN_b.ptx
run nd3 ptx/rtN_a.ptx ptx/rtG_b.ptx
run nd6 ptx/rtG_e.ptx ptx/rtN_a.ptx ptx/llvm_b.ptx
run fx fixtures/rt_debug.ptx fixtures/c_debug.ptx fixtures/rt_lineinfo.ptx
run chain out/three_u.ptx ptx/rtG_e.ptx
EXTRA="--dummy-abbrevs 300"
run dum300 ptx/llvm_d4O0_a.ptx ptx/rtG_e.ptx ptx/llvm_b.ptx
EXTRA="--code-base 50"
run rtG_cb50 ptx/rtG_a.ptx ptx/rtG_b.ptx
