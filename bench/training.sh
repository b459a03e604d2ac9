#!/usr/bin/env bash
# Issue 11's speed targets (results go to docs/benchmarks.md with this command).
#
#   bench/training.sh [path/to/fabricvp] [all|quick]
#
# Timing-only, congestion-aware 64 MiB all-reduces on Ring fabrics described
# as ASTRA-sim 2.x network files (50 GB/s, 500 ns per dimension) and
# converted with `fabricvp convert astra`, with ASTRA-sim-style chunking
# (16 chunks, 4 chunks, and ASTRA-sim's example system file for rings,
# Ring_4chunks.json, given with --system: 4 chunks, LIFO, one active chunk per
# dimension; the issue's targets compare with ASTRA-sim run on its own
# inputs); ResNet-50 DATA for one iteration on npu-3d-64; the ACE torus's
# 64 MiB all-reduce with and without data. Prints one table row per run:
# wall seconds and peak RSS (/usr/bin/time), simulated time, messages.
# `quick` skips the 4096- and 1024-NPU runs and the runs with data.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin/fabricvp}
mode=${2:-all}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

net() {  # name, then npus per dimension
  local name=$1
  shift
  local topo="" npus="" bw="" lat=""
  for x in "$@"; do
    topo+="${topo:+, }Ring"
    npus+="${npus:+, }$x"
    bw+="${bw:+, }50"
    lat+="${lat:+, }500"
  done
  printf 'topology: [ %s ]\nnpus_count: [ %s ]\nbandwidth: [ %s ]  # GB/s\nlatency: [ %s ]  # ns\n' \
    "$topo" "$npus" "$bw" "$lat" > "$tmp/$name.yml"
  "$bin" convert astra --network "$tmp/$name.yml" -o "$tmp/$name.yaml" > /dev/null 2>&1
}

# The values of ASTRA-sim's example system file examples/system/native_collectives/Ring_4chunks.json.
cat > "$tmp/ring_4chunks.json" << 'EOF'
{
  "scheduling-policy": "LIFO",
  "endpoint-delay": 10,
  "active-chunks-per-dimension": 1,
  "preferred-dataset-splits": 4,
  "all-reduce-implementation": ["ring"],
  "all-gather-implementation": ["ring"],
  "reduce-scatter-implementation": ["ring"],
  "all-to-all-implementation": ["ring"],
  "collective-optimization": "localBWAware",
  "local-mem-bw": 1600,
  "boost-mode": 0,
  "roofline-enabled": 1,
  "peak-perf": 900
}
EOF

row() {  # label, then fabricvp run arguments
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" run "$@" -q -o "$tmp/r"
  read -r wall rss_kb < "$tmp/time"
  jq -r --arg l "$label" --arg wall "$wall" --arg rss "$rss_kb" \
    '"| \($l) | \($wall) | \(($rss|tonumber)/1024|round) | \(.run.sim_wall_s*100|round/100) | \((.workload.simulated_ps // .workload.total_ps)/1e6*1000|round/1000) |"' \
    "$tmp/r/stats.json"
}

echo "## Issue 11 speed targets ($(nproc) cores, $(date -u +%Y-%m-%d), $(git describe --always --dirty))"
echo
echo "| run | wall s | peak RSS MiB | simulate s | simulated us |"
echo "|---|---:|---:|---:|---:|"
net ring3d4 4 4 4
row "4x4x4 Ring, 64 NPUs, 64 MiB all-reduce (target < 1 s)" "$tmp/ring3d4.yaml" --bytes 64MiB --timing-only \
  -p collective.chunks=16
net ring256 256
row "1-D Ring of 256, 64 MiB all-reduce" "$tmp/ring256.yaml" --bytes 64MiB --timing-only -p collective.chunks=16
row "ResNet-50 DATA, npu-3d-64, 1 iteration (target < 5 s)" platforms/npu-3d-64.yaml \
  --workload sw/workloads/resnet50.yaml
row "ACE torus 64 MiB all-reduce, ACE, timing only" platforms/ace-torus-4x4x4.yaml --bytes 64MiB --timing-only
row "ACE torus 64 MiB all-reduce, NPU cores, timing only" platforms/ace-torus-4x4x4.yaml --bytes 64MiB \
  --timing-only -p ace.model=none
if [ "$mode" = all ]; then
  net ring3d16 16 16 16
  row "16x16x16 Ring, 4096 NPUs, 64 MiB all-reduce, 16 chunks (target < 20 s)" "$tmp/ring3d16.yaml" --bytes 64MiB \
    --timing-only -p collective.chunks=16
  net ring1024 1024
  row "1-D Ring of 1024, 64 MiB all-reduce, 16 chunks" "$tmp/ring1024.yaml" --bytes 64MiB --timing-only \
    -p collective.chunks=16
  row "16x16x16 Ring, 4096 NPUs, 64 MiB all-reduce, 4 chunks" "$tmp/ring3d16.yaml" --bytes 64MiB --timing-only \
    -p collective.chunks=4
  row "1-D Ring of 1024, 64 MiB all-reduce, 4 chunks" "$tmp/ring1024.yaml" --bytes 64MiB --timing-only \
    -p collective.chunks=4
  # ASTRA-sim's inputs as they are: its network file converted, its example system file.
  row "16x16x16 Ring, 4096 NPUs, 64 MiB all-reduce, Ring_4chunks.json (target < 20 s)" "$tmp/ring3d16.yaml" \
    --bytes 64MiB --timing-only --system "$tmp/ring_4chunks.json"
  row "1-D Ring of 1024, 64 MiB all-reduce, Ring_4chunks.json (target < 10 s)" "$tmp/ring1024.yaml" --bytes 64MiB \
    --timing-only --system "$tmp/ring_4chunks.json"
  row "ACE torus 64 MiB all-reduce, ACE, real data checked" platforms/ace-torus-4x4x4.yaml --bytes 64MiB
fi
