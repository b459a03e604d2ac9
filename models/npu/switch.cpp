#include "models/npu/switch.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fabricvp::npu {

FabricSwitch::FabricSwitch(const sc_core::sc_module_name& nm, core::ActionQueue& actions, std::vector<uint32_t> npus,
                           std::function<uint32_t(uint32_t)> route)
    : core::Module(nm, "npu.switch"),
      messages(this, nullptr, "messages", "messages", "messages forwarded"),
      bytes(this, nullptr, "bytes", "bytes", "payload bytes forwarded"),
      m_npus(std::move(npus)),
      m_route(std::move(route)),
      m_rx_if(*this),
      m_actions(actions) {
  for (uint32_t p = 0; p < m_npus.size(); ++p) {
    m_port_of.emplace(m_npus[p], p);
    m_tx.push_back(std::make_unique<AfiInitiator>(fmt::format("tx{}", p).c_str()));
    m_rx.push_back(std::make_unique<AfiTarget>(fmt::format("rx{}", p).c_str()));
    m_tx.back()->bind(m_bw);
    m_rx.back()->bind(m_rx_if);
  }
}

FabricSwitch::~FabricSwitch() = default;

void FabricSwitch::Rx::b_transport(Message& m, sc_core::sc_time&) {
  FabricSwitch& s = m_sw;
  auto it = s.m_port_of.find(m.dst);
  uint32_t port = 0;
  if (it != s.m_port_of.end())
    port = it->second;
  else if (s.m_route)
    port = s.m_route(m.dst);
  else
    throw std::logic_error(fmt::format("{}: a message for npu{}, which is on none of its ports", s.name(), m.dst));
  const uint32_t id = s.m_held.adopt(m);
  s.m_held[id].tx_port = port;
  // Store and forward: it leaves when it is complete here.
  s.m_actions.post(s.m_held[id].arrival_ps, s, 0, id);
}

void FabricSwitch::act(uint32_t, uint64_t arg) {
  const uint32_t id = static_cast<uint32_t>(arg);
  Message& m = m_held[id];
  ++messages;
  bytes += m.bytes;
  m.ready_ps = core::ActionQueue::now();
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  (*m_tx[m.tx_port])->b_transport(m, d);
  m_held.give(id);
}

}  // namespace fabricvp::npu
