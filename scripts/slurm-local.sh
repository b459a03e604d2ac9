#!/usr/bin/env bash
# A single-node Slurm cluster in a folder, for tests and trying `fabricvp
# sweep --slurm` on one machine (Debian's slurm-wlm and munge).
#
#   scripts/slurm-local.sh start DIR   # munged, slurmctld, slurmd; prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm-local.sh stop DIR
#
# Everything (key, sockets, state, logs) lives in DIR; the machine's own Slurm
# and munge configuration are not touched. Runs as the current user (root
# in CI). The node has this machine's CPUs and one partition, `fabricvp`;
# SLURM_LOCAL_CPUS=N declares N CPUs instead (more than the machine has:
# array tasks that mostly wait on Slurm's own start-up then overlap).
# Scheduling runs on every event with no minimum interval, so an array of
# short tasks is not paced by the scheduler's timers (100 points of
# sweeps/npu-3d-64-collectives.yaml: 145 s before, 52 s now; 13 s with
# SLURM_LOCAL_CPUS=8 on 2 cores).
set -euo pipefail
cmd=${1:?start or stop}
dir=$(realpath -m "${2:?folder}")

stop() {
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    if [ -s "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  sleep 0.5
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    if [ -s "$f" ]; then kill -9 "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; fi
  done
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 1; }

for t in munged slurmctld slurmd sinfo; do
  command -v "$t" > /dev/null || { echo "slurm-local: $t not found (scripts/install-deps.sh installs slurm-wlm and munge)" >&2; exit 1; }
done
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 700 "$dir/munge"
if [ ! -s "$dir/munge/munge.key" ]; then
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
fi
munged 9>&- --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"

host=$(hostname -s)
cpus=${SLURM_LOCAL_CPUS:-$(nproc)}
overrides=""
if [ "$cpus" -gt "$(nproc)" ]; then overrides="SlurmdParameters=config_overrides"; fi
# Ports: two free ones in a row. Starts on this machine take turns (a lock
# held until this script exits, when the daemons listen), so two clusters
# started at once never pick the same or overlapping ports.
exec 9> "${TMPDIR:-/tmp}/fabricvp-slurm-local.lock"
flock 9
listening() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
base=$((20000 + 2 * ($$ % 10000)))
while listening "$base" || listening $((base + 1)); do base=$((base + 2)); done
user=$(id -un)
cat > "$dir/slurm.conf" <<CONF
ClusterName=fabricvp
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$base
SlurmdPort=$((base + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0,default_queue_depth=1000
$overrides
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=fabricvp Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" 9>&-
slurmd -f "$SLURM_CONF" -N "$host" 9>&-
for _ in $(seq 1 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^idle'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "slurm-local: the node did not come up; logs in $dir/log and $dir/munge" >&2
sinfo >&2 || true
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop
exit 1
