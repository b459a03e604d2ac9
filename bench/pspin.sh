#!/usr/bin/env bash
# PsPIN switch speed (docs/benchmarks.md, "PsPIN switch"): 128 packets of
# 1 KiB (4 messages x 32) through the integer-reduce handler compiled at -O3,
# as PsPIN's RTL simulation is benchmarked: whole-process wall time (the
# handler ELF is compiled once, beforehand) and the time inside the
# simulation. Usage: bench/pspin.sh [build-dir] [runs]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
make -s -C sw/handlers OUT="$out" "$out/reduce.elf"
for i in $(seq "$runs"); do
  /usr/bin/time -f "process wall %e s, peak RSS %M KB" "$build/bin/fabricvp" run platforms/pspin-switch.yaml \
    --handlers "$out/reduce.elf" --messages 4 --packets 32 -o "$out/run" 2>&1 |
    grep -E "process wall|host +wall|throughput|feedbacks"
done
