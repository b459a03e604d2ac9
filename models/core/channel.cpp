#include "models/core/channel.h"

#include <algorithm>
#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::core {

SerialChannel::SerialChannel(const sc_core::sc_object* owner, const Names& n, const SerialRate& rate,
                             uint64_t latency_ps)
    : m_latency_ps(latency_ps),
      m_rate(rate),
      transfers(owner, n.transfers.leaf, n.transfers.unit, n.transfers.desc, m_hot.transfers),
      packets(owner, n.packets.leaf, n.packets.unit, n.packets.desc, m_hot.packets),
      payload_bytes(owner, n.payload_bytes.leaf, n.payload_bytes.unit, n.payload_bytes.desc, m_hot.payload_bytes),
      busy_ps(owner, n.busy_ps.leaf, n.busy_ps.unit, n.busy_ps.desc, m_hot.busy_ps),
      utilization(owner, n.utilization.leaf, n.utilization.unit, n.utilization.desc,
                  [this] { return utilization_pct(); }) {}

void SerialChannel::set_rate(const SerialRate& rate) {
  if (m_hot.transfers != 0) throw std::logic_error("serial channel: rate changed after traffic");
  m_rate = rate;
}

double SerialChannel::utilization_pct() const { return percent_of_run(m_hot.busy_ps); }

}  // namespace fabricvp::core
