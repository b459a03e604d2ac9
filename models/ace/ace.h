// ACE: the collective communication accelerator at the NPU endpoint (seed 002
// §IV), at transaction level, with its reduction datapath as a DatapathModel:
// the C++ cycle-accurate Datapath (ace.model=tlm) or the verilated RTL
// (ace.model=rtl). Both give the same bits at the same cycles, so a platform
// gives identical results and timing with either.
//
//   NPU --command (TLM generic payload)--> ACE --completion interrupt--> NPU
//   NPU memory <--DMA--> SRAM <--> AFI output / input buffers
//                         \--> ALU (DatapathModel) for every reduction
//
// - SRAM: `sram_kib` of real bytes in chunk slots. A chunk occupies a slot
//   from its load (DMA from NPU memory) to its write-back; the slots are
//   partitioned per phase plus a terminal partition. A chunk enters a phase
//   when that phase's partition has room and one of the FSMs assigned to the
//   phase is free (FSMs round-robin over phases), so chunks pipeline within a
//   phase (up to its FSMs) and across phases. Its data stay in place: a phase
//   change moves ownership, not bytes. Every SRAM access (DMA load and store,
//   send, received store, a reduction's partial read and sum write) goes
//   through one port of `sram_bytes_per_cycle`, served in request order.
// - ALU: `alu_units` reduction datapaths of `alu_lanes` 32-bit lanes. Every
//   reduction runs through one: per SRAM row of alu_lanes elements, a `store`
//   beat stages the local partial in a row of the datapath's buffer (a
//   rotating staging ring) and an `add` beat adds the received elements to it
//   and sends the sum out; the sum goes back to the SRAM and, when the next
//   step forwards it, to the output buffer at the cycle it retires. A chunk
//   uses the datapath of its slot (slot % alu_units). A datapath is cut into
//   alu_lanes / 8 slices of the RTL's width, each its own DatapathModel fed
//   the same beats on its lanes (16-bit elements: the low half of a lane).
// - Terminal: after the last phase the chunk waits for room in the terminal
//   partition and is written to NPU memory by the DMA; the last chunk raises
//   the completion interrupt.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/ace/datapath.h"
#include "models/core/module.h"
#include "models/core/timebase.h"
#include "models/npu/npu.h"

namespace fabricvp::ace {

using Command = npu::AceCommand;

class Ace final : public core::Module, public npu::CommBackend {
 public:
  /// `rtl`: use the verilated datapath.
  Ace(const sc_core::sc_module_name& nm, npu::Npu& npu, bool rtl);
  ~Ace() override;

  core::Param<uint32_t> sram_kib;
  core::Param<uint32_t> alu_lanes;
  core::Param<uint32_t> alu_units;
  core::Param<double> clock_mhz;
  core::Param<uint32_t> fsms;
  core::Param<uint32_t> sram_bytes_per_cycle;

  tlm_utils::simple_target_socket<Ace> cmd;

  // CommBackend
  bool try_enter(uint32_t chunk, uint32_t phase) override;
  void leave(uint32_t chunk, uint32_t phase) override;
  void load(uint32_t chunk) override;
  void send_local(npu::Message m, const npu::Span& span) override;
  void receive(uint32_t task, std::shared_ptr<npu::Message> in, const npu::Span& span, bool reduce,
               const npu::Message* fwd) override;
  void finish(uint32_t chunk) override;

  /// Statistics refer to [0, ps].
  void set_end(uint64_t ps);
  bool rtl() const { return m_rtl; }
  uint32_t slices() const { return static_cast<uint32_t>(m_dp.size() * m_dp[0].size()); }
  /// Wall seconds spent in the RTL (0 for tlm).
  double rtl_eval_seconds() const;

 private:
  void command(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void setup(const npu::CollectiveSpec& spec);
  /// Run `op` over the rows of `span` of the chunk in `slot`; `in`: incoming
  /// elements (span order) for add/store; `out`: results (span order) when
  /// `send`. Returns the time the last result is out (ps).
  uint64_t reduce(uint32_t chunk, const npu::Span& span, const uint8_t* in, uint8_t* out);
  /// Bytes of `span` of the chunk in the SRAM, copied out / in (span order).
  void sram_read(uint32_t chunk, const npu::Span& span, uint8_t* out);
  void sram_write(uint32_t chunk, const npu::Span& span, const uint8_t* in);
  void try_terminal();
  void occupancy(int64_t delta_bytes);
  void fsm_busy(uint32_t f, bool busy);

  npu::Npu& m_npu;
  bool m_rtl;
  Geometry m_geo;                                                 // of one slice
  std::vector<std::vector<std::unique_ptr<DatapathModel>>> m_dp;  // [unit][slice]
  std::vector<uint32_t> m_stage_row;                              // [unit] next staging row
  std::vector<uint8_t> m_sram;
  core::Clock m_clock;
  /// The SRAM port: DMA loads and stores, sends, received stores and the
  /// reductions' partial reads and sum writes share sram_bytes_per_cycle.
  /// Returns when `bytes` issued at `now` have moved.
  uint64_t sram_port(uint64_t now, uint64_t bytes);
  core::SerialRate m_sram_rate;
  uint64_t m_sram_free = 0;
  npu::CollectiveSpec m_spec;
  bool m_configured = false;
  uint32_t m_slots = 0;
  uint64_t m_slot_bytes = 0;
  std::vector<uint32_t> m_part_size, m_part_used;  // per phase, then terminal
  std::vector<uint32_t> m_free_slots;              // sorted, lowest first
  std::vector<int32_t> m_slot_of;                  // per chunk
  std::vector<int32_t> m_fsm_of;                   // per chunk: FSM holding it, -1
  std::vector<uint32_t> m_fsm_phase;
  std::vector<bool> m_fsm_is_busy;
  std::vector<uint64_t> m_fsm_since, m_fsm_busy_ps;
  uint32_t m_trace_pid = 0;  // Perfetto process (created at the first traced span)
  std::vector<uint32_t> m_terminal_wait;
  uint32_t m_tag = 0;
  Chunk m_beat;
  std::vector<Completion> m_cpl;
  std::vector<uint8_t> m_local;
  int64_t m_used_bytes = 0;
  uint64_t m_occ_since = 0;
  unsigned __int128 m_occ_area = 0;
  std::vector<std::pair<uint64_t, uint64_t>> m_occ_series;  // (time, bytes) at every change
  uint64_t m_end = 0;
  uint64_t m_first_cycle_ps = 0;

 public:
  core::Value<std::string> model;
  core::Value<uint64_t> sram_bytes, slot_bytes, slots, datapath_slices;
  core::Counter commands, interrupts, chunks_loaded, chunks_stored, load_bytes, store_bytes;
  core::Counter beats, add_beats, store_beats, dp_stall_cycles, sram_read_bytes, sram_write_bytes;
  core::Counter peak_sram_bytes;
  core::Derived mean_sram_bytes, sram_occupancy, fsm_utilization, fsm_mean_utilization, alu_utilization;
  core::Counter sram_port_busy_ps;
  core::Derived sram_port_utilization;
};

}  // namespace fabricvp::ace
