#!/usr/bin/env bash
# Builds the C API in release mode and installs it under PREFIX (default /usr/local):
# lib/libptxld.so, lib/libptxld.a, include/ptxld.h and lib/pkgconfig/ptxld.pc, so that
# `cc app.c $(pkg-config --cflags --libs ptxld)` builds against it (docs/c-api.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${1:-/usr/local}"
cd "$ROOT"
cargo build --release --quiet -p ptxld-capi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' capi/Cargo.toml | head -1)"
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 644 target/release/libptxld.a "$PREFIX/lib/"
install -m 755 target/release/libptxld.so "$PREFIX/lib/"
install -m 644 capi/include/ptxld.h "$PREFIX/include/"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$version|" capi/ptxld.pc.in > "$PREFIX/lib/pkgconfig/ptxld.pc"
echo "installed ptxld $version under $PREFIX"
