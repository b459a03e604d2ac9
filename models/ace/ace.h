// ACE: the collective communication accelerator at the NPU endpoint (seed 002
// §IV), at transaction level, with its reduction datapath as a DatapathModel:
// the C++ cycle-accurate Datapath (ace.model=tlm) or the verilated RTL
// (ace.model=rtl). Both give the same bits at the same cycles, so a platform
// gives identical results and timing with either.
//
//   NPU --command (cmd socket)--> ACE --completion interrupt (irq socket)--> NPU
//   NPU memory <--DMA (dma socket)--> SRAM <--> AFI output / input buffers (afi_tx, afi_rx)
//                                       \--> ALU (DatapathModel) for every reduction
//
// The ACE executes the collectives it is given with its own engine
// (models/npu/engine.h: the FSMs of seed 002 step every chunk through its
// plan's phases), many at once. It knows the NPU only through these sockets.
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
//   The verilated RTL runs every beat; the C++ model takes a reduction's
//   burst in one call (DatapathModel::reduce_burst: the beats' cycles and
//   its state after them), and the ACE adds the burst's elements in one pass.
// - Terminal: after the last phase the chunk waits for room in the terminal
//   partition and is written to NPU memory by the DMA; the last chunk of a
//   collective raises the completion interrupt.
// - Configuration: the partitions are set for the phases and chunk size of
//   the first collective of a busy period; a collective that needs more
//   phases or larger chunks waits until the ACE is idle and reconfigures it.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/ace/datapath.h"
#include "models/core/module.h"
#include "models/core/timebase.h"
#include "models/core/timed_queue.h"
#include "models/npu/engine.h"
#include "models/npu/npu.h"

namespace fabricvp::ace {

class Ace final : public core::Module, public npu::CommBackend {
 public:
  /// Builds one datapath slice named `name` (a child of the ACE when it is a module).
  using DatapathFactory = std::function<std::unique_ptr<DatapathModel>(const std::string& name)>;
  /// `npu`: id of the NPU it serves (messages carry it); `model`: "tlm" or
  /// "rtl", reported; `make`: the datapath slices, of geometry rtl_geometry().
  /// `actions`: the queue it runs on (its NPU's, one per fabric).
  Ace(const sc_core::sc_module_name& nm, uint32_t npu, const std::string& model, DatapathFactory make,
      core::ActionQueue& actions);
  ~Ace() override;

  core::Param<uint32_t> sram_kib;
  core::Param<uint32_t> alu_lanes;
  core::Param<uint32_t> alu_units;
  core::Param<double> clock_mhz;
  core::Param<uint32_t> fsms;
  core::Param<uint32_t> sram_bytes_per_cycle;

  tlm_utils::simple_target_socket<Ace> cmd;  ///< collective commands from the NPU
  npu::GpInitiator irq;                      ///< completion interrupts to the NPU
  npu::GpInitiator dma;                      ///< the NPU's memory
  npu::AfiInitiator afi_tx;                  ///< messages out through the NPU's AFI ports
  npu::AfiTarget afi_rx;                     ///< messages in from the NPU's AFI ports

  // CommBackend
  void admit(uint32_t coll, const npu::Collective& c) override;
  bool try_enter(npu::ChunkRef c, uint32_t phase) override;
  void leave(npu::ChunkRef c, uint32_t phase) override;
  void load(npu::ChunkRef c) override;
  void send_local(npu::ChunkRef c, uint32_t msg, const npu::Span& span, uint64_t elems) override;
  void receive(npu::TaskRef t, uint32_t in, const npu::Step& step, uint32_t fwd, uint64_t start) override;
  void finish(npu::ChunkRef c) override;

  /// Statistics refer to [0, ps].
  void set_end(uint64_t ps);
  uint32_t slices() const { return static_cast<uint32_t>(m_dp.size() * m_dp[0].size()); }
  /// Host seconds spent inside the datapath models (the RTL's evaluation; 0 for tlm).
  double datapath_host_seconds() const;
  const npu::CollectiveEngine& engine() const { return *m_engine; }

 private:
  /// What the ACE keeps per collective.
  struct Coll {
    core::Dtype dt = core::Dtype::fp32;
    uint32_t es = 4;
    uint64_t address = 0;
    bool timing_only = false;  ///< no payload: sizes and times only (CollectiveRequest::timing_only)
    uint32_t last_phase = 0;
    std::vector<int32_t> slot_of;  // per chunk: SRAM slot, -1
    std::vector<int32_t> fsm_of;   // per chunk: FSM holding it, -1
  };
  class AfiIn : public npu::AfiBlockingTarget {
   public:
    explicit AfiIn(Ace& a) : m_ace(a) {}
    void b_transport(npu::Message& m, sc_core::sc_time& delay) override;

   private:
    Ace& m_ace;
  };
  class GpNoBw : public tlm::tlm_bw_transport_if<> {
   public:
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
      return tlm::TLM_COMPLETED;
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
  };

  void command(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  /// Whether a collective fits the current partitioning (or the ACE is idle and can be set up for it).
  bool fits(const npu::CollectivePlan& plan) const;
  void configure(const npu::CollectivePlan& plan);
  void completed(const npu::Collective& c);
  /// DMA between NPU memory and `buf` over `span` of collective `coll`, issued
  /// `after` ps from now; returns when it is done.
  uint64_t dma_transfer(uint32_t coll, const npu::Span& span, uint8_t* buf, bool write, npu::Client client,
                        uint64_t after);
  /// Run the reduction of `span` of chunk c (incoming elements `in`, span
  /// order); results into the SRAM and `out` if given. Returns the time the last result is out (ps).
  uint64_t reduce(npu::ChunkRef c, const npu::Span& span, const uint8_t* in, uint8_t* out);
  /// reduce()'s beats, one at a time through every slice of datapath `unit`
  /// (the RTL's way): `n` elements of `local` (the sums written over them) and `in`.
  void run_beats(uint32_t unit, core::Dtype dt, uint32_t es, uint64_t n, uint8_t* local, const uint8_t* in,
                 BurstCycles& cycles);
  /// The same reduction's timing without data (timing-only collectives):
  /// the burst's closed form (datapath.h reduce_burst_cycles).
  uint64_t reduce_timing(npu::ChunkRef c, uint64_t elems);
  /// Count a burst of `rows` store/add pairs; returns when its last sum is out (ps).
  uint64_t count_burst(uint64_t c_now, uint64_t first_accept, uint64_t last_accept, uint64_t last_retire,
                       uint64_t rows);
  /// Bytes of `span` of the chunk in the SRAM, copied out / in (span order).
  void sram_read(npu::ChunkRef c, const npu::Span& span, uint8_t* out);
  void sram_write(npu::ChunkRef c, const npu::Span& span, const uint8_t* in);
  uint8_t* slot_at(npu::ChunkRef c, uint64_t elem);
  void try_terminal();
  void occupancy(int64_t delta_bytes);
  void fsm_busy(uint32_t f, bool busy);
  /// The SRAM port: DMA loads and stores, sends, received stores and the
  /// reductions' partial reads and sum writes share sram_bytes_per_cycle.
  /// Returns when `bytes` issued at `now` have moved.
  uint64_t sram_port(uint64_t now, uint64_t bytes);

  uint32_t m_npu_id;
  AfiIn m_afi_in;
  npu::AfiNoBw m_afi_bw;
  GpNoBw m_gp_bw;
  core::ActionQueue& m_actions;
  Geometry m_geo;                                                 // of one slice
  std::vector<std::vector<std::unique_ptr<DatapathModel>>> m_dp;  // [unit][slice]
  std::vector<uint32_t> m_stage_row;                              // [unit] next staging row
  std::vector<uint64_t> m_unit_horizon;                           // [unit] cycle after its last burst's last retire
  std::vector<uint8_t> m_sram;
  core::Clock m_clock;
  core::SerialRate m_sram_rate;
  uint64_t m_sram_free = 0;
  std::unique_ptr<npu::CollectiveEngine> m_engine;
  std::vector<Coll> m_colls;                                        // by engine index
  std::deque<std::shared_ptr<npu::Collective>> m_waiting_commands;  // wait for an idle ACE to reconfigure
  bool m_configured = false;
  uint32_t m_phases = 0;  // phase partitions configured
  uint32_t m_slots = 0;
  uint64_t m_slot_bytes = 0;
  std::vector<uint32_t> m_part_size, m_part_used;  // per phase, then terminal
  std::vector<uint32_t> m_free_slots;              // sorted, lowest first
  std::vector<uint32_t> m_fsm_phase;
  std::vector<bool> m_fsm_is_busy;
  std::vector<uint64_t> m_fsm_since, m_fsm_busy_ps;
  uint32_t m_trace_pid = 0;  // Perfetto process (created at the first traced span)
  std::deque<npu::ChunkRef> m_terminal_wait;
  uint32_t m_tag = 0;
  Chunk m_beat;
  std::vector<Completion> m_cpl;
  std::vector<uint8_t> m_local;
  int64_t m_used_bytes = 0;
  uint64_t m_occ_since = 0;
  unsigned __int128 m_occ_area = 0;
  std::vector<std::pair<uint64_t, uint64_t>> m_occ_series;  // (time, bytes) at every change
  uint64_t m_end = 0;

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
