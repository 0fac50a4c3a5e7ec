#!/usr/bin/env bash
# Assemble every fixture (fixtures/ptx, fixtures/gpu) alone with `ptxas -arch=sm_XX -c` (XX = max(80, the file's .target)).
#   * fixtures/ptx/**/*.ptx must be accepted, except:
#   * fixtures/ptx/gcc-raw/*.s, fixtures/ptx/nvvm-invalid/*.ptx and fixtures/ptx/hand/bad/*.ptx
#     must be rejected.
# Prints one line per file; exits 1 on any unexpected verdict.
set -uo pipefail
export LC_ALL=C
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools.env
source scripts/tools.env
[ -x "$PTXAS" ] || { echo "check-fixtures: $PTXAS not executable; run scripts/install-tools.sh" >&2; exit 1; }

fail=0
tmp="$(mktemp)"; trap 'rm -f "$tmp"' EXIT
while IFS= read -r f; do
  case "$f" in
    fixtures/ptx/gcc-raw/*|fixtures/ptx/nvvm-invalid/*|fixtures/ptx/hand/bad/*) want=reject ;;
    *) want=accept ;;
  esac
  sm=$(grep -a -m1 -oE '^[[:space:]]*\.target[[:space:]]+sm_[0-9]+' "$f" | grep -oE '[0-9]+$' || true)
  [ -n "$sm" ] && [ "$sm" -gt 80 ] || sm=80
  if "$PTXAS" -arch="sm_$sm" -c "$f" -o /dev/null >"$tmp" 2>&1; then got=accept; else got=reject; fi
  nwarn=$(grep -c 'warning' "$tmp" || true)
  msg=$(grep -m1 -E 'error|fatal' "$tmp" | sed 's/^ptxas //' || true)
  if [ "$got" = "$want" ]; then verdict=ok; else verdict=UNEXPECTED; fail=1; fi
  printf '%-10s %-7s sm_%-3s warn=%-3s %s %s\n' "$verdict" "$got" "$sm" "$nwarn" "$f" "${msg:+| $msg}"
done < <(find fixtures/ptx fixtures/gpu -type f \( -name '*.ptx' -o -name '*.s' \) | sort)
exit $fail
