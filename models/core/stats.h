// Statistics: hierarchical name + unit + description, read at the end of a run.
//
// A statistic is a member of the object it measures:
//   core::Counter tx_vectors{this, "tx_vectors", "vectors", "vectors transmitted"};
// Counters are plain integers (no allocation, no lookup on update). The
// registry writes every statistic into stats.json under its hierarchical name,
// and its unit and description into the "schema" section, keyed by the kind of
// the owning module ("tsp.tx_vectors").
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "models/core/named.h"

namespace fabricvp::core {

class StatBase : public Named {
 public:
  /// Statistic of a module, or (owner == nullptr) of the group `prefix` (e.g. "run").
  StatBase(const sc_core::sc_object* owner, const char* prefix, const char* leaf, const char* unit, const char* desc);
  virtual ~StatBase();
  StatBase(const StatBase&) = delete;
  StatBase& operator=(const StatBase&) = delete;

  /// Kind of the owner ("tsp", "c2c.link", "run"), used as the schema key prefix.
  std::string kind() const;
  virtual nlohmann::json value() const = 0;

 private:
  size_t m_slot;
};

/// Monotonic event/quantity counter.
class Counter : public StatBase {
 public:
  using StatBase::StatBase;
  Counter& operator+=(uint64_t n) {
    m_v += n;
    return *this;
  }
  Counter& operator++() {
    ++m_v;
    return *this;
  }
  /// Keep the maximum of the values seen (for peaks).
  void note_max(uint64_t v) {
    if (v > m_v) m_v = v;
  }
  void set(uint64_t v) { m_v = v; }
  uint64_t get() const { return m_v; }
  nlohmann::json value() const override { return m_v; }

 private:
  uint64_t m_v = 0;
};

/// A counter whose value is a plain integer its owner keeps elsewhere: the
/// counters a per-message path updates then sit side by side in one or two
/// cache lines of the owner instead of one line each.
class CounterRef : public StatBase {
 public:
  CounterRef(const sc_core::sc_object* owner, const char* leaf, const char* unit, const char* desc, const uint64_t& v)
      : StatBase(owner, nullptr, leaf, unit, desc), m_v(&v) {}
  uint64_t get() const { return *m_v; }
  nlohmann::json value() const override { return *m_v; }

 private:
  const uint64_t* m_v;
};

/// A value set once (strings, flags, measured quantities).
template <typename T>
class Value : public StatBase {
 public:
  using StatBase::StatBase;
  void set(const T& v) { m_v = v; }
  const T& get() const { return m_v; }
  nlohmann::json value() const override { return m_v; }

 private:
  T m_v{};
};

/// A value computed when statistics are written (utilizations, averages).
class Derived : public StatBase {
 public:
  Derived(const sc_core::sc_object* owner, const char* leaf, const char* unit, const char* desc,
          std::function<nlohmann::json()> fn)
      : StatBase(owner, nullptr, leaf, unit, desc), m_fn(std::move(fn)) {}
  nlohmann::json value() const override { return m_fn(); }

 private:
  std::function<nlohmann::json()> m_fn;
};

/// The simulated time the run's statistics refer to: what the run driver set
/// with set_stats_end() (e.g. a collective's completion), else the current
/// simulation time.
uint64_t stats_end_ps();
void set_stats_end(uint64_t ps);
/// 100 x busy_ps / stats_end_ps(), 0 while no time has passed: the one
/// definition of a utilization in percent.
double percent_of_run(uint64_t busy_ps);

/// All statistics as one JSON object: nested by hierarchical name, module objects
/// carry "kind", plus a top-level "schema" with unit and description per kind.stat.
/// Streamed, so it costs a sorted list of names rather than a JSON tree.
void write_stats_json(std::ostream& out);

}  // namespace fabricvp::core
