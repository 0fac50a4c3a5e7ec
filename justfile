# ptxld tasks. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Check a shipped example: parse real PTX from four producers and list its symbols.
example:
    cargo run --release --quiet -- --print-symbols fixtures/ptx/llvm/*.ptx fixtures/ptx/gcc/*.ptx fixtures/ptx/nvrtc/*.ptx fixtures/ptx/nvvm/*.ptx
    cargo run --release --quiet -- --syntax-only fixtures/ptx/libdevice/*.ptx && echo "libdevice parses cleanly"

# Install the NVIDIA tools and PTX producers the tests use (idempotent).
tools:
    bash scripts/install-tools.sh

# Everything CI runs: tools, formatting, lints, docs, all tests, the fuzz target build.
test: tools
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
    cargo test --all-targets
    cargo build --manifest-path fuzz/Cargo.toml --quiet
    @echo "fuzz target builds"

# Parse throughput against `cat` of the same files (libdevice, ~170 MB generated set).
bench:
    cargo bench --bench parse

# Regenerate fixtures/ptx from fixtures/src with the real producers.
fixtures: tools
    bash scripts/regen-fixtures.sh
