// Process-wide simulation context: configuration, seed, parameter and
// statistics registries, trace writer and the list of hardware errors.
// SystemC elaborates once per process, so one context per process is enough.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/core/config.h"
#include "models/core/named.h"
#include "models/core/trace.h"

namespace fabricvp::core {

class ParamBase;
class StatBase;

/// A fault the hardware would raise (buffer overflow/underflow, structural
/// hazard, ...). The run fails; the report names where and when.
struct HardwareError {
  std::string where;  ///< hierarchical name (chip, port, queue)
  std::string message;
  uint64_t time_ps = 0;
  int64_t cycle = -1;  ///< core cycle of the chip, -1 if not applicable
  /// A machine check: data the hardware itself flagged as lost (uncorrectable
  /// FEC codeword). The runtime may replay the program (seed 000 §4.5).
  bool machine_check = false;
  std::string source;  ///< machine check: the link direction that flagged the data
};

class Context {
 public:
  static Context& get();

  Config& config() { return m_config; }
  uint64_t seed() const { return m_seed; }
  void set_seed(uint64_t s) { m_seed = s; }
  /// Deterministic seed for a named random stream (hierarchical name + purpose).
  uint64_t stream_seed(std::string_view stream) const;

  Registry<ParamBase>& params() { return m_params; }
  /// While noting (systems::elaborate sets it around a platform's
  /// elaboration), the names of the parameters an exception destroys: what the
  /// keys of a platform that failed to elaborate were meant for.
  const std::vector<std::string>& unwound_params() const { return m_unwound_params; }
  bool noting_unwound_params() const { return m_noting_unwound; }
  void set_noting_unwound_params(bool on) { m_noting_unwound = on; }
  void note_unwound_param(std::string name) { m_unwound_params.push_back(std::move(name)); }
  Registry<StatBase>& stats() { return m_stats; }

  Trace& trace() { return m_trace; }

  /// Replay attempt of this run (0 = first; seed 000 §4.5 software replay):
  /// transient PHY faults draw new errors on every attempt.
  uint32_t attempt() const { return m_attempt; }
  void set_attempt(uint32_t a) { m_attempt = a; }

  /// Simulated time the statistics refer to, once the run driver set it (core::stats_end_ps()).
  const std::optional<uint64_t>& stats_end() const { return m_stats_end; }
  void set_stats_end(uint64_t ps) { m_stats_end = ps; }

  /// Record a hardware error, print it, and stop the simulation.
  void hw_error(HardwareError e);
  const std::vector<HardwareError>& hw_errors() const { return m_errors; }
  /// Set by the first hardware error; the data path stops applying operations.
  const bool& halted() const { return m_halted; }

  /// A ConfigError thrown while the simulation runs (an input found wrong only
  /// when it is used): kept, the simulation stopped, and rethrown by the run
  /// driver as the input error it is (SystemC would report any exception from
  /// a process as its own, without the type).
  void config_failure(const ConfigError& e);
  const std::optional<ConfigError>& config_failure() const { return m_config_failure; }

 private:
  Config m_config;
  uint64_t m_seed = 1;
  Registry<ParamBase> m_params;
  std::vector<std::string> m_unwound_params;
  bool m_noting_unwound = false;
  Registry<StatBase> m_stats;
  Trace m_trace;
  std::vector<HardwareError> m_errors;
  bool m_halted = false;
  uint32_t m_attempt = 0;
  std::optional<uint64_t> m_stats_end;
  std::optional<ConfigError> m_config_failure;
};

uint64_t fnv1a64(std::string_view s);
/// SplitMix64 finalizer of x + golden gamma: draw i of a stream is splitmix64(seed + i * gamma).
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace fabricvp::core
