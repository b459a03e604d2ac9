// The ACE datapath RTL (rtl/ace/ace_datapath.sv), verilated once into a C++
// model (--cc) and driven cycle by cycle behind the same transaction interface
// as the C++ model (DatapathModel, models/ace/datapath.h).
//
// The module owns the clock: each cycle it sets the inputs, evaluates with the
// clock low (combinational outputs settle: in_ready, cpl_valid, out_valid),
// samples the handshakes and raises the clock. No SystemC event per cycle; the
// RTL runs only as far as next() needs. Cycle 0 is the first cycle after the
// reset (two cycles, not counted; in a VCD they come first). A $finish in the RTL (its simulation checks)
// or a watchdog expiry is a hardware error: it is reported with the cycle, the
// model stops and next() returns false.
//
// The sizes are those the RTL library was built with (CMake ACE_LANES,
// ACE_DEPTH, ACE_PARTS, ACE_TAG_BITS): built_geometry().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "models/ace/datapath.h"
#include "models/core/module.h"

class Vace_datapath;
class VerilatedContext;
class VerilatedVcdC;

namespace fabricvp::ace {

class RtlDatapath final : public core::Module, public DatapathModel {
 public:
  static const Geometry& built_geometry() { return rtl_geometry(); }

  /// `vcd`: write a VCD to this file (empty: parameter `vcd`), of the cycles
  /// from `vcd_from` on (0: from the reset).
  explicit RtlDatapath(const sc_core::sc_module_name& nm, const std::string& vcd = "", uint64_t vcd_from = 0);
  ~RtlDatapath() override;

  const Geometry& geometry() const override { return built_geometry(); }
  void configure(uint32_t part, uint32_t base, uint32_t size) override;
  void set_out_ready(ReadyFn ready) override { m_ready = std::move(ready); }
  void submit(const Chunk& c) override;
  bool next(Completion& out) override;
  bool advance(uint64_t cycles) override;
  uint64_t cycle() const override { return m_now; }
  size_t pending() const override { return m_queue.size() + m_flight.size() + m_done.size(); }

  /// The RTL's idle output: no chunk in flight.
  bool idle() const;
  /// A $finish, watchdog expiry or broken handshake stopped the model.
  bool failed() const { return m_failed; }
  const std::string& failure() const { return m_failure; }
  /// Wall-clock seconds spent in next() evaluating the RTL.
  double eval_seconds() const { return m_eval_s; }
  double host_seconds() const override { return m_eval_s; }
  /// Cycles a chunk was offered and not accepted / a result waited for out_ready.
  uint64_t in_stalls() const { return in_stall_cycles.get(); }
  uint64_t out_stalls() const { return out_stall_cycles.get(); }

  /// Pin-level access for protocol tests: one cycle with in_valid, the fields of
  /// `c` and out_ready as given; true if the chunk was accepted. Afterwards the
  /// transaction API refuses to run (the chunks it accepts are not tracked).
  bool raw_cycle(bool in_valid, const Chunk& c, bool out_ready);

 private:
  void drive(const Chunk& c);
  void step();
  void dump_vcd();  // VCD sample at the current half cycle
  void fail(const std::string& why);

  struct Queued {
    Chunk chunk;
    uint64_t horizon = 0;  // cycle() when submitted
  };

  core::Param<double> clock_mhz{this, "clock_mhz", 1000.0, "MHz", "clock of the RTL datapath (VCD time axis)",
                                1.0,  100000.0};
  core::Param<std::string> vcd{this, "vcd", "", "", "write a VCD of the RTL datapath to this file (empty: none)"};
  core::Param<uint64_t> watchdog_cycles{
      this,        "watchdog_cycles", 1000000, "cycles", "cycles next() may wait for a completion before failing",
      uint64_t(1), uint64_t(1) << 40};
  core::Counter cycles{this, nullptr, "cycles", "cycles", "clock cycles simulated after reset"};
  core::Counter chunks{this, nullptr, "chunks", "chunks", "chunks accepted"};
  core::Counter results_sent{this, nullptr, "results_sent", "chunks", "results taken by the send side"};
  core::Counter in_stall_cycles{this, nullptr, "in_stall_cycles", "cycles",
                                "cycles a chunk was offered and not accepted"};
  core::Counter out_stall_cycles{this, nullptr, "out_stall_cycles", "cycles", "cycles a result waited for out_ready"};

  std::unique_ptr<VerilatedContext> m_ctx;
  std::unique_ptr<Vace_datapath> m_top;
  std::unique_ptr<VerilatedVcdC> m_vcd;
  uint64_t m_half_ps = 500;  // half a clock period (VCD time)
  uint64_t m_vcd_time = 0;
  uint64_t m_vcd_from = 0;
  ReadyFn m_ready;
  Ring<Queued> m_queue;           // submitted, not accepted
  std::deque<uint64_t> m_flight;  // accept cycles of chunks in flight
  Ring<Completion> m_done;        // retired, not returned
  bool m_driving = false;         // in_* hold the queue head's fields
  uint64_t m_now = 0;
  uint64_t m_offer_base = 0;  // cycle after the last acceptance
  bool m_raw = false;
  bool m_failed = false;
  std::string m_failure;
  double m_eval_s = 0;
};

}  // namespace fabricvp::ace
