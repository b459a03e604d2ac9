// One direction of a serializing link: the one model of "transfers leave a
// serializer one after another at a fixed rate" that every link of fabricvp
// builds on (the C2C link, models/c2c; the NPU fabric link, models/npu; the
// switch ports and optical links to come).
//
// A transfer of n units (packets or bytes: the unit of the rate) ready at
// time r starts at s = max(r, free), where `free` is the end of the previous
// transfer; it occupies the serializer for ser(n) = rate.ps(n) and its unit i
// leaves at s + ser(i + 1). A fixed latency (pipelines, propagation) follows.
// Whole transfers, exact to the picosecond; no event per unit.
//
// Statistics of one direction, named by the owning link (the leaf names carry
// the direction, e.g. "a_to_b.packets"): transfers, packets, payload bytes,
// busy time, and utilization = busy time / the run's statistics end
// (core::stats_end_ps(), the one definition of utilization in fabricvp).
#pragma once

#include <cstdint>

#include "models/core/stats.h"
#include "models/core/timebase.h"

namespace fabricvp::core {

/// Leaf name, unit and description of one statistic.
struct StatName {
  const char* leaf;
  const char* unit;
  const char* desc;
};

class SerialChannel {
 public:
  struct Names {
    StatName transfers, packets, payload_bytes, busy_ps, utilization;
  };
  SerialChannel(const sc_core::sc_object* owner, const Names& names, const SerialRate& rate, uint64_t latency_ps);

  const SerialRate& rate() const { return m_rate; }
  /// Change the rate; only before the first transfer (std::logic_error after).
  void set_rate(const SerialRate& rate);
  /// Fixed latency from the end of serialization to the receiver.
  uint64_t latency_ps() const { return m_latency_ps; }
  /// Time the serializer becomes free (end of the last transfer).
  uint64_t free_ps() const { return m_hot.free; }
  /// Transfers so far.
  uint64_t transfer_count() const { return m_hot.transfers; }

  /// Serialize a transfer of `units` ready at `ready_ps` carrying `payload`
  /// bytes in `npackets` packets; returns its start. It ends at start + rate.ps(units).

  /// Busy share of the run so far, in percent (see the top of this file).
  double utilization_pct() const;

  uint64_t serialize(uint64_t ready_ps, uint64_t units, uint64_t payload, uint64_t npackets) {
    const uint64_t start = ready_ps > m_hot.free ? ready_ps : m_hot.free;
    const uint64_t dur = m_rate.ps(units);
    m_hot.free = start + dur;
    ++m_hot.transfers;
    m_hot.packets += npackets;
    m_hot.payload_bytes += payload;
    m_hot.busy_ps += dur;
    return start;
  }

 private:
  struct Hot {  // what every transfer updates, together
    uint64_t free = 0, transfers = 0, packets = 0, payload_bytes = 0, busy_ps = 0;
  } m_hot;
  uint64_t m_latency_ps;
  SerialRate m_rate;  // its memo in m_hot's cache line

 public:
  CounterRef transfers, packets, payload_bytes, busy_ps;
  Derived utilization;
};

}  // namespace fabricvp::core
