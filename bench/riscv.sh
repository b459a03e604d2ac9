#!/usr/bin/env bash
# ISS speed (docs/benchmarks.md, "RISC-V ISS"): instructions per host second
# of `fabricvp riscv` on the handler-loop program (an integer-reduce
# handler's inner loop, ~400 M instructions) and on the checksum program,
# N runs each. Usage: bench/riscv.sh [build-dir] [runs]
set -euo pipefail
build=${1:-build}
runs=${2:-5}
for prog in handler_loop checksum; do
  for i in $(seq "$runs"); do
    "$build/bin/fabricvp" riscv "$build/riscv/$prog.elf" 2>&1 >/dev/null | sed -n 's/^.*elf: /'"$prog"': /p'
  done
done
