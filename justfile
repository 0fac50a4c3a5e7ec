# ptxld tasks. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Link a shipped example (LLVM + NVVM + GCC + libdevice) and assemble it with ptxas.
example: tools
    cargo run --release --quiet -- -o target/example.ptx fixtures/ptx/llvm/cu_lib.ptx fixtures/ptx/nvvm/nv_common.ptx fixtures/link/real-libdevice-three-producers/g_nvlib.ptx fixtures/ptx/libdevice/libdevice.sm70.ptx
    .tools/nv/nvidia/cuda_nvcc/bin/ptxas -arch=sm_80 target/example.ptx -o target/example.cubin
    @echo "target/example.ptx assembles as a whole program (target/example.cubin)"

# Install the NVIDIA tools and PTX producers the tests use (idempotent).
tools:
    bash scripts/install-tools.sh

# Everything CI runs: tools, formatting, lints, docs, all tests, the package as crates.io would get it, the fuzz target build.
test: tools
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
    cargo test --workspace
    scripts/check-package.sh
    scripts/test-python.sh
    python3 scripts/gpu_test.py --dry-run
    cargo build --manifest-path fuzz/Cargo.toml --quiet
    @echo "fuzz target builds"

# Run linked multi-producer programs on a GPU (CUDA driver: PTX JIT, ptxld's PTX and SASS fatbins, nvJitLink's cubin); skips loudly without one. ARGS: --dry-run, program names.
test-gpu *ARGS: tools
    cargo build --quiet
    python3 scripts/gpu_test.py {{ARGS}}
    scripts/test-python.sh --gpu

# The mutation differential test with N mutants (CI runs 300): the table is printed and kept in target/mutants-report.txt.
mutants N="2000": tools
    PTXLD_MUTANTS={{N}} cargo test --test it mutants:: -- --nocapture

# Parse and link throughput against `cat` (libdevice, 170 MB set, 105-420 MB link sets, 2 GB module), and what the statement check costs.
bench: unchecked
    PTXLD_BENCH_UNCHECKED="$PWD/target/unchecked-target/release/ptxld" cargo bench --bench parse
    cargo bench --bench front_end

# Only the cross-referencing link sets (x1, x2, x4), the targets and the statement check's cost (~1 min).
bench-cross: unchecked
    PTXLD_BENCH_UNCHECKED="$PWD/target/unchecked-target/release/ptxld" cargo bench --bench parse -- cross

# This source built without its statement check (src/lex/grammar.rs, `CHECKED`), which the benchmarks time against this build.
unchecked:
    RUSTFLAGS="--cfg ptxld_unchecked_statements" CARGO_TARGET_DIR=target/unchecked-target cargo build --release --quiet

# --split-kernels against one ptxas, same rounds: a libdevice-heavy set (~1 min) and, with
# SETS=libdevice,cross, the 105 MB cross set (made by bench-cross; tens of minutes on 2 cores).
bench-split SETS="libdevice" PARTS="2,4,16" ROUNDS="3": tools
    cargo build --release --quiet
    bash -c 'source scripts/tools.env && python3 scripts/split_bench.py --sets {{SETS}} --parts {{PARTS}} --rounds {{ROUNDS}}'

# bench-cross with another revision's ptxld timed in the same rounds (default: the last commit).
bench-against REV="HEAD":
    #!/usr/bin/env bash
    set -euo pipefail
    dir=target/baseline-src
    rm -rf "$dir" && git worktree prune
    git worktree add --detach "$dir" "{{REV}}" >/dev/null
    (cd "$dir" && CARGO_TARGET_DIR=../baseline-target cargo build --release --quiet)
    git worktree remove --force "$dir"
    PTXLD_BENCH_BASELINE="$PWD/target/baseline-target/release/ptxld" cargo bench --bench parse -- cross

# Regenerate fixtures/ptx from fixtures/src (and the PTX of fixtures/gpu) with the real producers.
fixtures: tools
    bash scripts/regen-fixtures.sh

# Regenerate fixtures/containers with NVIDIA's fatbinary/nvcc 13.5 (installed outside the repo).
containers: tools
    bash scripts/regen-containers.sh

# Run every fuzz target for SECONDS each (cargo-fuzz; seeds from the fixtures).
fuzz SECONDS="120":
    #!/usr/bin/env bash
    set -euo pipefail
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    mkdir -p fuzz/corpus/parse fuzz/corpus/link fuzz/corpus/containers
    for f in fixtures/ptx/*/*.ptx fixtures/ptx/hand/bad/*.ptx; do cp "$f" "fuzz/corpus/parse/$(echo "$f" | tr / _)"; done
    # Link seeds: the inputs of each link case, separated by NUL bytes.
    for d in fixtures/link/*/; do
        inputs=$(sed -n 's/^inputs: //p' "$d/case.txt")
        ( cd "$d" && for f in $inputs; do cat "$f"; printf '\0'; done ) > "fuzz/corpus/link/$(basename "$d")"
    done
    # DWARF merge seeds: the real -g pairs tests/it/dwarf.rs links.
    for pair in "llvm/c_debug2 llvm/c_debug" "nvrtc/rt_debug2 nvrtc/rt_debug" "nvrtc/rt_debug llvm/c_debug nvrtc/rt_lineinfo"; do
        ( for f in $pair; do cat "fixtures/ptx/$f.ptx"; printf '\0'; done ) > "fuzz/corpus/link/dwarf-$(echo $pair | tr ' /' '__')"
    done
    for f in fixtures/containers/*.fatbin fixtures/containers/*.o fixtures/containers/bad/*; do
        cp "$f" "fuzz/corpus/containers/$(echo "$f" | tr / _)"
    done
    for t in parse link containers; do
        echo "== $t"
        RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -max_total_time={{SECONDS}} -max_len=65536 2>&1 | grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs|ERROR|panicked" | tail -n 3
    done
