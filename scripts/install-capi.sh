#!/usr/bin/env bash
# Builds the C API in release mode and installs it under PREFIX (default /usr/local):
# lib/libptxld.so, lib/libptxld.a, include/ptxld.h and lib/pkgconfig/ptxld.pc, so that
# `cc app.c $(pkg-config --cflags --libs ptxld)` builds against it (docs/c-api.md).
# PTXLD_PROFILE=debug installs a debug build instead (the C API's test does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${1:-/usr/local}"
PROFILE="${PTXLD_PROFILE:-release}"
cd "$ROOT"
case "$PROFILE" in
  release) cargo build --release --quiet -p ptxld-capi ;;
  debug) cargo build --quiet -p ptxld-capi ;;
  *) echo "PTXLD_PROFILE is release or debug, not $PROFILE" >&2; exit 1 ;;
esac
version="$(sed -n 's/^version = "\(.*\)"/\1/p' capi/Cargo.toml | head -1)"
install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
install -m 644 "target/$PROFILE/libptxld.a" "$PREFIX/lib/"
install -m 755 "target/$PROFILE/libptxld.so" "$PREFIX/lib/"
install -m 644 capi/include/ptxld.h "$PREFIX/include/"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@VERSION@|$version|" capi/ptxld.pc.in > "$PREFIX/lib/pkgconfig/ptxld.pc"
echo "installed ptxld $version under $PREFIX"
