#!/usr/bin/env bash
# Issue 15's speed targets (results go to docs/benchmarks.md with this command).
#
#   bench/compute.sh [path/to/fabricvp] [all|quick]
#
# Matrix multiplications on TSPs with real data, checked: simulated MXM
# sub-operations per wall second of simulation (one TSP, [2304 x 4096] x
# [4096 x 3200], fp16 and int8) and the Fig 14 point with the most TSPs,
# [800 x 32576] x [32576 x 8192] on 104 TSPs (target < 60 s wall), and the
# Fig 15 point at N = 650,000 on 100 TSPs (blocks of rows, LOOP). One table
# row per run: wall seconds and peak RSS (/usr/bin/time), the driver's
# simulate and check seconds, sub-operations per simulate-second.
# Cholesky: n = 4096 on one TSP (LW-bound: one tile install per sub-operation)
# and n = 5120 on 16 TSPs of two Dragonfly nodes.
# BERT: one checked BERT-Large encoder (hidden 1024, 16 heads, ffn 4096, 384
# positions) on one TSP, and BERT-Large (24 encoders) on 4 TSPs and 96
# encoders on 16 TSPs timed without data (the Fig 17 / 18 configurations).
# `quick` skips the 104-TSP, the Cholesky and the BERT runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin/fabricvp}
mode=${2:-all}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

row() {  # label, then fabricvp run arguments
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" run "$@" -q -o "$tmp/r"
  read -r wall rss_kb < "$tmp/time"
  jq -r --arg l "$label" --arg wall "$wall" --arg rss "$rss_kb" \
    '"| \($l) | \($wall) | \(($rss|tonumber)/1024|round) | \(.run.sim_wall_s*100|round/100) | \(.run.check_wall_s*100|round/100) | \((.workload.subops / .run.sim_wall_s / 1e3)|round) | \(.workload.verified and (.workload.simulated_ps == .workload.predicted_ps)) |"' \
    "$tmp/r/stats.json"
}

echo "## Issue 15 speed targets ($(nproc) cores, $(date -u +%Y-%m-%d), $(git describe --always --dirty))"
echo
echo "| run | wall s | peak RSS MiB | simulate s | check s | k sub-ops / simulate s | verified, = predicted |"
echo "|---|---:|---:|---:|---:|---:|---|"
row "[2304 x 4096] x [4096 x 3200] fp16, 1 TSP" platforms/groq-node.yaml --workload matmul \
  --shape 2304x4096x3200 --dtype fp16
row "[2304 x 4096] x [4096 x 3200] int8, 1 TSP" platforms/groq-node.yaml --workload matmul \
  --shape 2304x4096x3200 --dtype int8
if [ "$mode" = all ]; then
  row "[800 x 32576] x [32576 x 8192] fp16, 104 TSPs (col 8 x row 13; target < 60 s)" \
    platforms/groq-dragonfly-264.yaml --workload matmul --shape 800x32576x8192 --split col=8,row=13
  row "[650000 x 650000] x [650000 x 650000] fp16 on 100 TSPs, widest share, 78 blocks, timing only" \
    platforms/groq-dragonfly-10440.yaml --workload matmul --shape 650000x650000x650000 --split col=100 \
    --timing-only --widest-share -p sys.racks=5 -p sched.matmul_inputs=host -p sched.matmul_outputs=host \
    -p 'sys.*.*.tsp*.imem_instructions=524288'
  row "Cholesky n = 4096, 1 TSP" platforms/groq-node.yaml --workload cholesky --n 4096 --tsps 1 \
    -p 'sys.node0.tsp*.imem_instructions=524288'
  row "Cholesky n = 5120, 16 TSPs (2 nodes)" platforms/groq-dragonfly-264.yaml --workload cholesky --n 5120 \
    --tsps 16 -p 'sys.node*.tsp*.imem_instructions=524288'
  row "BERT-Large, 1 encoder, 1 TSP, checked" platforms/groq-node.yaml --workload bert --encoders 1 --tsps 1
  row "BERT-Large, 24 encoders, 4 TSPs, timing only" platforms/groq-node.yaml --workload bert --encoders 24 --tsps 4 \
    --timing-only
  row "BERT-Large, 96 encoders, 16 TSPs (2 nodes), 3 inferences, timing only" platforms/groq-dragonfly-264.yaml \
    --workload bert --encoders 96 --tsps 16 --inferences 3 --timing-only -p 'sys.node*.tsp*.imem_instructions=524288'
fi
