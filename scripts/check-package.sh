#!/usr/bin/env bash
# The crate as crates.io would get it: `cargo package` (which builds the packaged
# crate on its own) and `cargo publish --dry-run`, failing on any warning of either
# but two that cargo always prints here:
# - "ignoring test `it` / `parse_once`": the integration tests stay in the repository
#   (they need its fixtures, scripts, example crate and the NVIDIA tools), and cargo
#   has no way to say that a test is left out on purpose (rust-lang/cargo#14290);
# - "aborting upload due to dry run".
# --allow-dirty lets a working tree with edits package too; CI's clone is clean.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo package --allow-dirty -p ptxld 2>&1 | tee "$log"
cargo publish --dry-run --no-verify --allow-dirty -p ptxld 2>&1 | tee -a "$log"
expected='^warning: (ignoring test `(it|parse_once)` as `tests/(it/main|parse_once)\.rs` is not included in the published package|aborting upload due to dry run)$'
if grep -E '^(warning|error)' "$log" | grep -Ev "$expected"; then
    echo "cargo package / publish --dry-run: the warnings above are new" >&2
    exit 1
fi
echo "the package builds and would publish: $(cargo package --list --allow-dirty -p ptxld 2>/dev/null | wc -l) files"
