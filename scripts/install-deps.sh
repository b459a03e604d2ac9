#!/usr/bin/env bash
# Install fabricvp's build and test dependencies from Debian packages.
# Idempotent: packages that are already installed are skipped, so a second run
# does nothing and needs no network.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config
  libsystemc-dev        # SystemC 2.3 + TLM-2.0 kernel
  libyaml-cpp-dev       # platform files
  nlohmann-json3-dev    # stats.json, trace.json
  libcli11-dev          # command line
  libfmt-dev            # formatting
  libgtest-dev          # unit tests
  verilator             # RTL co-simulation (ACE datapath)
  time                  # /usr/bin/time for benchmarks (peak RSS)
  jq                    # benchmarks read stats.json
  clang-format          # style check in make test (scripts/check-format.sh)
  git                   # the style check lists tracked files
  libelf-dev            # RV32 ELF loading (instruction-set simulator)
  gcc-riscv64-unknown-elf       # RISC-V cross compiler: ISA tests, programs, packet handlers
  picolibc-riscv64-unknown-elf  # C library for handlers
  qemu-system-misc      # qemu-system-riscv32: the reference the ISS is tested against
  libprotobuf-dev       # Chakra execution traces (ASTRA-sim 2.x workloads)
  protobuf-compiler     # protoc for the Chakra schema
  libsqlite3-dev        # sweep results (fabricvp sweep)
  sqlite3               # the sqlite3 shell: docs/sweeps.md's queries, tests
  python3-matplotlib    # fabricvp plot (PNG from a sweep's database)
  slurm-wlm             # fabricvp sweep --slurm; the test runs a single-node Slurm (scripts/slurm-local.sh)
  munge                 # Slurm's authentication
  clang                 # the sanitizer build of make test, and the fuzz targets
  libclang-rt-dev       # libFuzzer and clang's sanitizer runtimes (tests/fuzz)
  libglpk-dev           # integer programs: exact SiP-Ring and SiP-OCS allocations (sw/optical)
  liblemon-dev          # network simplex: SiP-Ring wavelength planning (sw/optical)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
