// A packet switch of an NPU fabric (the Switch dimension of an N-dimensional
// fabric, ASTRA-sim's congestion-aware analytical network): every port is
// joined to one NPU by a npu::FabricLink; a message arriving on a port is
// forwarded, store and forward, on the port of its destination NPU when it is
// complete in the switch, and the output link serializes it (waiting in the
// output queue while the link is busy). No event per byte: one action per
// message (on the fabric's action queue), no allocation per message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/core/module.h"
#include "models/core/stats.h"
#include "models/core/timed_queue.h"
#include "models/npu/afi.h"

namespace fabricvp::npu {

class FabricSwitch : public core::Module, public core::Actor {
 public:
  /// `npus[p]`: the NPU on port p. `route(dst)`: the port toward an NPU on
  /// none of its ports (multi-dimension fabrics; empty: such a message is an error).
  FabricSwitch(const sc_core::sc_module_name& nm, core::ActionQueue& actions, std::vector<uint32_t> npus,
               std::function<uint32_t(uint32_t)> route = {});
  ~FabricSwitch() override;
  uint32_t ports() const { return static_cast<uint32_t>(m_npus.size()); }
  AfiInitiator& tx(uint32_t p) { return *m_tx[p]; }
  AfiTarget& rx(uint32_t p) { return *m_rx[p]; }
  uint32_t npu(uint32_t p) const { return m_npus[p]; }
  void act(uint32_t what, uint64_t arg) override;

  core::Counter messages, bytes;

 private:
  class Rx : public AfiBlockingTarget {
   public:
    explicit Rx(FabricSwitch& s) : m_sw(s) {}
    void b_transport(Message& m, sc_core::sc_time& delay) override;

   private:
    FabricSwitch& m_sw;
  };
  std::vector<uint32_t> m_npus;
  std::unordered_map<uint32_t, uint32_t> m_port_of;  // NPU id -> port (lookups only)
  std::function<uint32_t(uint32_t)> m_route;
  std::vector<std::unique_ptr<AfiInitiator>> m_tx;
  std::vector<std::unique_ptr<AfiTarget>> m_rx;
  Rx m_rx_if;
  AfiNoBw m_bw;
  core::ActionQueue& m_actions;
  MessagePool m_held;  // messages until they are complete here
};

}  // namespace fabricvp::npu
