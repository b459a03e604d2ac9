#!/usr/bin/env bash
# Run a libFuzzer target of tests/fuzz (built by `make test` in build-asan, or
# by cmake -DCMAKE_CXX_COMPILER=clang++ -DFABRICVP_SANITIZE=ON -DFABRICVP_FUZZ=ON).
#
#   scripts/fuzz.sh <fuzz binary> <seed corpus dir> [--seconds S | --runs N] [--work DIR]
#   scripts/fuzz.sh --all <build dir> [--seconds S | --runs N]     every target, one summary line each
#
# The committed seed corpus is only read; inputs the fuzzer finds go to
# <work>/corpus, a crashing input to <work>/crash-* (reproduce it with
# `<fuzz binary> <that file>`). Exit status: 0 if nothing was found.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
limit=(-max_total_time=30)
work=""

if [ "${1:-}" = "--all" ]; then
  build=$(realpath "${2:?"--all needs the build directory"}")
  shift 2
  status=0
  printf '%-10s %12s %10s %10s %8s  %s\n' target execs "exec/s" seconds corpus result
  for src in "$root"/tests/fuzz/corpus/*/; do
    t=$(basename "$src")
    log=$(mktemp)
    start=$(date +%s)
    if "$0" "$build/bin/fuzz_$t" "$src" "$@" --work "$build/tests/fuzz/work/$t" >"$log" 2>&1; then
      result=ok
    else
      result="FOUND (see $log)"
      status=1
    fi
    secs=$(($(date +%s) - start))
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
    corpus=$(find "$build/tests/fuzz/work/$t/corpus" -type f | wc -l)
    printf '%-10s %12s %10s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$secs" "$corpus" "$result"
    [ "$result" = ok ] && rm -f "$log"
  done
  exit $status
fi

bin=${1:?"usage: scripts/fuzz.sh <fuzz binary> <seed corpus dir> [--seconds S | --runs N] [--work DIR]"}
seeds=${2:?"usage: scripts/fuzz.sh <fuzz binary> <seed corpus dir> [--seconds S | --runs N] [--work DIR]"}
shift 2
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$(realpath "$bin")
seeds=$(realpath "$seeds")
name=$(basename "$bin")
name=${name#fuzz_}
work=$(realpath -m "${work:-$(dirname "$bin")/../tests/fuzz/work/$name}")
rm -rf "$work"
mkdir -p "$work/corpus"
dict=()
[ -f "$root/tests/fuzz/$name.dict" ] && dict=(-dict="$root/tests/fuzz/$name.dict")
# The project's own inputs seed the targets that read them as they are.
more=()
case "$name" in
  platform) more=("$root/platforms") ;;
  asm) more=("$root/docs/examples") ;;
  sweep) more=("$root/sweeps") ;;
esac

# Leaks are findings too; one input at most 10 s and 2.5 GB; a fixed seed so a
# smoke run repeats.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$work"
exec "$bin" "${limit[@]}" -seed=1 -timeout=10 -rss_limit_mb=2560 -max_len=16384 -print_final_stats=1 \
  -artifact_prefix="$work/" "${dict[@]}" "$work/corpus" "$seeds" "${more[@]}"
