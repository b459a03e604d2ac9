// What every `fabricvp run` reports, whatever the platform: the run manifest
// (run.* in stats.json), the effective configuration, and host time and memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "models/core/stats.h"
#include "systems/kind.h"

namespace fabricvp::runtime {

using WallClock = std::chrono::steady_clock;
/// Host seconds since t.
double since(WallClock::time_point t);
/// Peak resident memory of this process, MiB.
double peak_rss_mib();

/// Host memory this process may still take, in bytes: the least of the
/// kernel's MemAvailable, the cgroup's memory.max less its usage, and
/// RLIMIT_AS less the address space in use. `limit` names the one that binds.
uint64_t host_memory_available(std::string& limit);

/// Effective configuration: every parameter with its value, unit, meaning and
/// origin, loadable as a platform file. Returns its hash (FNV-1a 64 of the values).
uint64_t write_effective_config(const std::string& path, const systems::RunOptions& opt);
/// The hash write_effective_config returns, without writing anything.
uint64_t effective_config_hash();

/// run.* — the manifest every run writes (each kind adds its counts next to it).
struct RunManifest {
  core::Value<std::string> version{nullptr, "run", "version", "", "fabricvp version"};
  core::Value<std::string> config_hash{nullptr, "run", "config_hash", "", "FNV-1a 64 of the effective configuration"};
  core::Value<std::string> platform{nullptr, "run", "platform", "", "platform file"};
  core::Value<uint64_t> seed{nullptr, "run", "seed", "", "random seed of the run"};
  core::Value<std::string> status{nullptr, "run", "status", "",
                                  "ok | hardware_error | machine_check | mismatch | timing_mismatch"};
  core::Value<uint64_t> hardware_errors{nullptr, "run", "hardware_errors", "errors", "hardware errors raised"};
  core::Value<uint64_t> links{nullptr, "run", "links", "links", "links (cables) in the platform"};
  core::Value<uint64_t> sim_time_ps{nullptr, "run", "sim_time_ps", "ps", "simulated time at the end of the run"};
  core::Value<double> wall_s{nullptr, "run", "wall_s", "s", "host wall-clock time of the whole run"};
  core::Value<double> setup_wall_s{nullptr, "run", "setup_wall_s", "s",
                                   "host time to elaborate, compile or schedule, and load programs"};
  core::Value<double> load_wall_s{nullptr, "run", "load_wall_s", "s",
                                  "host time to generate inputs, load them and compute the reference"};
  core::Value<double> sim_wall_s{nullptr, "run", "sim_wall_s", "s", "host wall-clock time inside sc_start"};
  core::Value<double> check_wall_s{nullptr, "run", "check_wall_s", "s", "host time to check every result"};
  core::Value<double> sim_ns_per_wall_s{nullptr, "run", "sim_ns_per_wall_s", "ns/s",
                                        "simulated ns per host second in sc_start"};
  core::Value<double> peak_rss_mib{nullptr, "run", "peak_rss_mib", "MiB", "peak resident memory of the process"};
  core::Value<double> host_estimate_mib{nullptr, "run", "host_estimate_mib", "MiB",
                                        "host memory the run was estimated to need before it allocated (checked "
                                        "against the memory available; 0: too small to estimate)"};

  /// Sets every field but status, hardware_errors and links.
  void set(const systems::RunOptions& opt, uint64_t config_hash, uint64_t sim_end_ps, WallClock::time_point wall0,
           double setup, double load, double sim, double check);
};

}  // namespace fabricvp::runtime
