#include "models/core/channel.h"

#include <algorithm>
#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::core {

SerialChannel::SerialChannel(const sc_core::sc_object* owner, const Names& n, const SerialRate& rate,
                             uint64_t latency_ps)
    : transfers(owner, nullptr, n.transfers.leaf, n.transfers.unit, n.transfers.desc),
      packets(owner, nullptr, n.packets.leaf, n.packets.unit, n.packets.desc),
      payload_bytes(owner, nullptr, n.payload_bytes.leaf, n.payload_bytes.unit, n.payload_bytes.desc),
      busy_ps(owner, nullptr, n.busy_ps.leaf, n.busy_ps.unit, n.busy_ps.desc),
      utilization(owner, n.utilization.leaf, n.utilization.unit, n.utilization.desc,
                  [this] { return utilization_pct(); }),
      m_rate(rate),
      m_latency_ps(latency_ps) {}

void SerialChannel::set_rate(const SerialRate& rate) {
  if (transfers.get() != 0) throw std::logic_error("serial channel: rate changed after traffic");
  m_rate = rate;
}

uint64_t SerialChannel::serialize(uint64_t ready_ps, uint64_t units, uint64_t payload, uint64_t npackets) {
  const uint64_t start = std::max(ready_ps, m_free);
  const uint64_t dur = m_rate.ps(units);
  m_free = start + dur;
  ++transfers;
  packets += npackets;
  payload_bytes += payload;
  busy_ps += dur;
  return start;
}

double SerialChannel::utilization_pct() const { return percent_of_run(busy_ps.get()); }

}  // namespace fabricvp::core
