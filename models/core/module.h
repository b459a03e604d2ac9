// The one base class of every fabricvp model.
//
// A Module is an sc_module with a kind (its schema name in stats.json), a log
// level parameter, deterministic per-instance random streams and a way to raise
// hardware errors. Members are constructed with a name equal to their C++
// member name, so the hierarchical name (sys.node0.tsp3.c2c2) is at once the log
// prefix, the statistics key and the configuration key.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <vector>

#include <cstdint>
#include <string>
#include <string_view>
#include <systemc>

#include "models/core/context.h"
#include "models/core/log.h"
#include "models/core/param.h"
#include "models/core/stats.h"

namespace fabricvp::core {

class Module : public sc_core::sc_module {
 public:
  Module(const sc_core::sc_module_name& nm, const char* kind);

  /// Schema kind, e.g. "tsp", "c2c.link".
  const char* kind() const override { return m_kind; }

  bool logging(Level l) const { return static_cast<int>(l) <= static_cast<int>(m_level); }
  template <typename... A>
  void log(Level l, fmt::format_string<A...> f, A&&... args) const {
    if (logging(l)) report(l, name(), fmt::format(f, std::forward<A>(args)...));
  }

  /// Seed of this instance's random stream `purpose` (derived from the run seed
  /// and the hierarchical name, so adding modules never shifts other streams).
  uint64_t seed_for(std::string_view purpose) const;

  /// Raise a hardware error at simulated time `time_ps` (and core `cycle`).
  void hw_error(const std::string& where_suffix, uint64_t time_ps, int64_t cycle, const std::string& message) const;

 private:
  const char* m_kind;
  Param<std::string> m_log_level;
  Level m_level;
};

/// The global default log level (parameter `log.level`).
Level default_log_level();

/// Destroy owned children newest first. SystemC's port, export and module
/// registries search from their most recent entry, so this keeps teardown
/// linear; the default (oldest first) is quadratic with 10^5 ports.
template <typename T>
void destroy_newest_first(std::vector<std::unique_ptr<T>>& children) {
  while (!children.empty()) children.pop_back();
}

}  // namespace fabricvp::core
