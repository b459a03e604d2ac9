#!/usr/bin/env bash
# Style checks of every tracked C++ file of the host (run by `make test` as the test
# FormatCheck):
#   1. clang-format with the repository's .clang-format leaves it unchanged;
#   2. project headers are included by their full path from the source root
#      ("models/core/module.h"), never relative ("../x.h") or by bare name:
#      the build gives each layer only the headers of the layers below it, and
#      a relative include would walk around that.
# Usage: scripts/check-format.sh [--fix]   (--fix rewrites files in place)
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1
status=0
# Software for the simulated RISC-V cores (sw/riscv, sw/handlers) is C and
# assembly for another target, with PsPIN's include conventions: not checked.
mapfile -t files < <(git ls-files '*.cpp' '*.h' ':!sw/riscv' ':!sw/handlers' 2>/dev/null ||
  find . \( -name '*.cpp' -o -name '*.h' \) -not -path './sw/riscv/*' -not -path './sw/handlers/*')
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
else
  # One clang-format for every file; it names each misformatted one (file:line:col: error: ...).
  while read -r f; do
    echo "$f: not formatted (scripts/check-format.sh --fix, or clang-format -i $f)"
    status=1
  done < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error:.*/\1/p' | sort -u)
fi
# Quoted includes: full paths below a top-level folder, or generated/verilated headers.
while IFS=: read -r file line text; do
  inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$text")
  case "$file" in tests/*) [[ "$inc" != */* ]] && continue ;; esac  # the tests' own helpers
  case "$inc" in
    ../*|./*) echo "$file:$line: relative include \"$inc\": include project headers by their full path"; status=1 ;;
    */*) top=${inc%%/*}
         if [ ! -d "$top" ]; then echo "$file:$line: \"$inc\" is not below a top-level folder"; status=1; fi ;;
    fabricvp_version.h|V*.h|verilated*.h) ;;
    *) echo "$file:$line: bare include \"$inc\": include project headers by their full path"; status=1 ;;
  esac
done < <(grep -n '^[[:space:]]*#[[:space:]]*include "' "${files[@]}" || true)
exit $status
