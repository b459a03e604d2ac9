#!/usr/bin/env bash
# Benchmarks of record (results go to docs/benchmarks.md with this command).
#
#   bench/run.sh [path/to/fabricvp] [repetitions]
#
# 1. The 64 MiB fp32 all-reduce on groq-node, repeated: wall time (whole
#    process, /usr/bin/time), peak RSS, simulated ns per wall-second inside
#    sc_start, and realized busbw against 7 x one link's payload rate.
#    Targets: < 2 s wall; busbw >= 95 % of 7 x 100 Gb/s x 320/328.
# 2. Realized bandwidth of every collective at 64 MiB.
# 3. The all-reduce over tensor sizes (Fig 16 style).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin/fabricvp}
reps=${2:-5}
plat=platforms/groq-node.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "## 64 MiB fp32 all-reduce on $plat ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "| run | wall s | setup s | load s | simulate s | check s | peak RSS MiB | simulated ns / wall s | busbw GB/s | % of peak | predicted = simulated |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for i in $(seq 1 "$reps"); do
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" run "$plat" --workload allreduce --bytes 64MiB --dtype fp32 \
    -q -o "$tmp/r"
  read -r wall rss_kb < "$tmp/time"
  s="$tmp/r/stats.json"
  jq -r --arg wall "$wall" --arg rss "$rss_kb" --arg i "$i" \
    '"| \($i) | \($wall) | \(.run.setup_wall_s*100|round/100) | \(.run.load_wall_s*100|round/100) | \(.run.sim_wall_s*100|round/100) | \(.run.check_wall_s*100|round/100) | \(($rss|tonumber)/1024|round) | \(.run.sim_ns_per_wall_s|round) | \(.workload.busbw_GBps*100|round/100) | \(.workload.busbw_pct_of_peak*100|round/100) | \(.workload.predicted_ps == .workload.simulated_ps) |"' "$s"
done

echo
echo "## Every collective, 64 MiB fp32"
echo
echo "| collective | simulated us | algbw GB/s | busbw GB/s | % of peak | wall s | verified |"
echo "|---|---|---|---|---|---|---|"
for w in allreduce allgather reducescatter broadcast; do
  "$bin" run "$plat" --workload "$w" --bytes 64MiB --dtype fp32 -q -o "$tmp/c"
  jq -r --arg w "$w" \
    '"| \($w) | \(.workload.simulated_ps/1e6*1000|round/1000) | \(.workload.algbw_GBps*100|round/100) | \(.workload.busbw_GBps*100|round/100) | \(.workload.busbw_pct_of_peak*100|round/100) | \(.run.wall_s*100|round/100) | \(.workload.verified) |"' "$tmp/c/stats.json"
done

echo
echo "## All-reduce vs tensor size (fp32)"
echo
echo "| bytes | simulated us | algbw GB/s | busbw GB/s | % of peak |"
echo "|---|---|---|---|---|"
for b in 320 4KiB 32KiB 256KiB 1MiB 8MiB 64MiB; do
  "$bin" run "$plat" --workload allreduce --bytes "$b" --dtype fp32 -q -o "$tmp/s"
  jq -r --arg b "$b" \
    '"| \($b) | \(.workload.simulated_ps/1e6*1000|round/1000) | \(.workload.algbw_GBps*100|round/100) | \(.workload.busbw_GBps*100|round/100) | \(.workload.busbw_pct_of_peak*100|round/100) |"' "$tmp/s/stats.json"
done
