// Groq Tensor Streaming Processor (seed 000): 220 MiB SRAM, 11 C2C ports
// (7 local, 4 global), statically scheduled instruction queues.
//
// Timing (docs/isa.md): the chip's clock has period 1/clock_mhz; cycle c is at
// clock.ps(c). The sequencer issues each queue's instructions at their exact
// cycle from one SC_METHOD per chip; bursts (SEND, RECV, ADD) run in their
// units afterwards and their per-vector data operations are applied in time
// order by the chip's Timeline. A burst costs a handful of SystemC events in
// total, never one per vector.
//
// Host access (the `ctrl` socket, TLM-2.0 generic payload):
//   debug transport, untimed:
//     [0, 220 MiB)                    SRAM, byte address = linear vector * 320 + byte
//     kImemBase + q * kImemStride     instruction memory of queue q (32-byte instructions, END-terminated)
//   b_transport, timed (the PCIe host interface, docs/isa.md "Host interface"):
//     a write of whole vectors into SRAM, ready at now + delay, serialized on
//     the chip's PCIe link; the delay returned is when its last vector is
//     readable.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/c2c/protocol.h"
#include "models/clock/hac_counter.h"
#include "models/clock/oscillator.h"
#include "models/core/channel.h"
#include "models/core/module.h"
#include "models/core/timebase.h"
#include "models/tsp/isa.h"
#include "models/tsp/mxm.h"
#include "models/tsp/port.h"
#include "models/tsp/sram.h"
#include "models/tsp/timeline.h"

namespace fabricvp::tsp {

constexpr uint64_t kImemBase = 0x10000000ULL;
constexpr uint64_t kImemStride = 0x01000000ULL;

class Tsp;

/// The chip's side of the HAC network (models/hac, `sys.hac`): link control
/// codes between chips. TRANSMIT hands a notification to it; it tells the
/// network when the chip has work scheduled, so the HAC exchange keeps running
/// while programs run and the simulation still ends when they are done.
class HacLink {
 public:
  virtual ~HacLink() = default;
  /// TRANSMIT issued on `port` of `chip` at local `cycle`.
  virtual void transmit(Tsp& chip, uint32_t port, uint64_t cycle) = 0;
  /// The chip started (+1) or ran out of (-1) scheduled work.
  virtual void activity(Tsp& chip, int delta) = 0;
};

/// One synchronization event of a chip (DESKEW, TRANSMIT, POLL, RUNTIME_DESKEW,
/// NOTIFY), for tests and reports. `cycle` is the local cycle at which the
/// next instruction issues (DESKEW, POLL: the epoch boundary; RUNTIME_DESKEW:
/// the end of the stall) or the issue cycle (TRANSMIT, NOTIFY).
struct SyncEvent {
  Op op;
  uint32_t queue, port;
  uint64_t issue_cycle, cycle;
  int64_t value;  ///< RUNTIME_DESKEW: SAC - HAC; POLL: epochs polled
};

class Tsp : public core::Module, public c2c::Producer {
 public:
  SC_HAS_PROCESS(Tsp);
  explicit Tsp(const sc_core::sc_module_name& nm);
  ~Tsp() override;

  core::Param<double> clock_mhz;
  core::Param<double> clock_ppm;
  core::Param<double> clock_ppm_spread;
  core::Param<std::string> clock_ppm_distribution;
  core::Param<double> clock_jitter_ps;
  core::Param<uint32_t> poll_timeout_epochs;
  core::Param<uint32_t> send_latency;
  core::Param<uint32_t> recv_latency;
  core::Param<uint32_t> add_latency;
  core::Param<uint32_t> fly_latency;
  core::Param<uint32_t> mxm_planes;
  core::Param<uint32_t> mxm_latency;
  core::Param<uint32_t> lw_vectors_per_cycle;
  core::Param<uint32_t> lw_latency;
  core::Param<uint32_t> sxm_units;
  core::Param<uint32_t> sxm_vectors_per_cycle;
  core::Param<uint32_t> sxm_latency;
  core::Param<uint32_t> notify_latency;
  core::Param<uint32_t> queues;
  core::Param<uint32_t> vxm_alus;
  core::Param<uint32_t> rx_buffer_vectors;
  core::Param<uint32_t> tx_buffer_vectors;
  core::Param<uint32_t> local_ports;
  core::Param<uint32_t> global_ports;
  core::Param<uint32_t> imem_instructions;
  core::Param<uint64_t> drain_interval_ns;
  core::Param<double> pcie_gts;
  core::Param<uint32_t> pcie_lanes;
  core::Param<uint32_t> pcie_max_payload;
  core::Param<uint32_t> pcie_tlp_overhead;
  core::Param<uint64_t> pcie_latency_ns;

  tlm_utils::simple_target_socket<Tsp> ctrl;
  /// Chip-to-host writes (HOSTW) over PCIe: a TLM write of whole vectors at
  /// host byte address (host vector) x 320, issued when the last vector lands
  /// in host memory. Unbound on a chip without a host (a HOSTW is then a
  /// hardware error).
  tlm_utils::simple_initiator_socket_optional<Tsp> host_out;

  uint32_t port_count() const { return static_cast<uint32_t>(m_ports.size()); }
  Port& port(uint32_t i) { return *m_ports.at(i); }
  /// The chip's own oscillator: its cycles are the chip's local time.
  const clock::Oscillator& clock() const { return m_clock; }
  /// The host-to-chip direction of the PCIe link: one packet per 320-byte vector.
  const core::SerialChannel& pcie() const { return *m_pcie; }
  /// The chip-to-host direction (HOSTW): same rate and latency.
  const core::SerialChannel& pcie_out() const { return *m_pcie_out; }
  /// PCIe packet of one vector: its TLPs' payload and overhead, in bytes.
  uint32_t pcie_vector_bytes() const;
  /// The nominal clock (clock_mhz, no offset, no jitter): what a compiler assumes.
  const core::Clock& nominal_clock() const { return m_nominal; }
  /// Hardware and software aligned counters (seed 000 §3.1, §3.3).
  clock::HacCounter& hac() { return m_hac; }
  void attach_hac(HacLink* link) { m_hac_link = link; }
  /// A TRANSMIT notification from the peer on `port` is sampled into this
  /// chip's clock domain at local cycle `cycle` (called by the HAC network).
  void notification(uint32_t port, uint64_t cycle);
  /// DESKEW, TRANSMIT, POLL, RUNTIME_DESKEW and NOTIFY events so far (the first 4,096).
  const std::vector<SyncEvent>& sync_log() const { return m_sync_log; }
  /// Program cycle = local cycle - shift: RUNTIME_DESKEW moves a chip's
  /// program time back onto the aligned (global) time.
  int64_t program_shift() const { return m_shift; }
  Sram& sram() { return m_sram; }
  uint32_t trace_pid() const { return m_pid; }

  /// Apply every data operation up to `horizon_ps` (never beyond the current time).
  void drain(uint64_t horizon_ps) override;
  /// End of run: apply everything, then report undelivered vectors and parked
  /// queues, and capture the SRAM statistics.
  void finish();
  /// After the results are read: give the SRAM's host memory back.
  void release_sram() { m_sram.release(); }
  /// Timing only (a run that sizes, not checks: `--timing-only`): LW, MXM and
  /// host writes over PCIe keep their timing, hazard checks and statistics
  /// but compute and move no data (the SRAM vectors they would write keep
  /// their contents); each costs the host O(1), not O(vectors).
  void set_timing_only(bool on) { m_timing_only = on; }
  bool timing_only() const { return m_timing_only; }
  /// Time of the last SRAM write by RECV or ADD (ps), 0 if none.
  uint64_t last_write_ps() const { return m_last_write; }
  /// Cycle after the last instruction issued by any queue.
  uint64_t end_cycle() const { return m_end_cycle; }

  /// A SEND burst whose vectors travel as references to this chip's SRAM.
  struct Sending {
    c2c::Channel* channel;
    uint64_t first;  ///< stream index of its first vector
    uint32_t addr, n;
    uint32_t read;  ///< vectors handed to the link so far
  };
  /// Call before writing SRAM vector v: in-flight copies of it are kept first.
  void before_write(uint32_t v) {
    if (!m_sending.empty()) guard(v);
  }
  /// A RECV into SRAM vector `addr` takes a vector the PHY flagged as lost:
  /// raise a machine check (the run stops; the runtime may replay it).
  void machine_check(const c2c::Channel& ch, uint32_t addr, uint64_t t_ps);

  /// Decode and check the instruction memory (once: what load() decoded is
  /// what start() runs). Throws core::ConfigError naming chip, queue,
  /// instruction and source line.
  void load();
  /// load(), then start every queue at the chip's current cycle (cycle 0 at
  /// time 0) in the next delta, or with at_epoch at its next HAC epoch
  /// boundary with program time starting there (WAIT counts from it): a
  /// launch by the host runtime, every chip of a program on the same
  /// boundary (seed 000 §3.2). Started again after its program ended, it runs
  /// the same program again from its first instruction. A chip that is never
  /// started stays idle.
  void start(bool at_epoch = false);
  /// When the program last started (its cycle 0 of program time), ps.
  uint64_t program_start_ps() const { return m_program_start_ps; }
  /// A HOSTW issued: its host vector, vectors and when the whole write is in host memory (ps).
  struct HostWriteDone {
    uint64_t host_vec;
    uint32_t n;
    uint64_t done_ps;
  };
  /// Every HOSTW so far, in issue order (timed also when timing only).
  const std::vector<HostWriteDone>& host_writes() const { return m_host_writes; }
  /// Called for every HOSTW as it is issued (the host runtime learns when its output will be in memory).
  void set_host_write_hook(std::function<void(const HostWriteDone&)> hook) { m_host_write_hook = std::move(hook); }

 private:
  enum class QState : uint8_t { run, sync, done };
  struct Queue {
    std::vector<Instr> prog;
    size_t pc = 0;
    uint64_t next = 0;        // cycle of the next issue
    uint64_t sync_cycle = 0;  // cycle the queue parked in SYNC
    uint64_t polls = 0;       // epochs polled by the POLL at pc (0: not polling)
    // LOOP (docs/isa.md): the iteration k the queue runs (0 from its start),
    // and what it adds to WAIT targets (k * P cycles) and HOSTW host vectors (k * s).
    uint32_t iter = 0;
    uint64_t wait_offset = 0;
    uint64_t host_offset = 0;
    QState st = QState::done;
  };
  struct Notify {
    uint64_t issued, deliver;
  };

  void sequencer();
  void ticker();
  void issue(uint32_t q, Queue& queue, uint64_t cycle);
  void extend(uint64_t end_ps);
  void ctrl_dbg_access(tlm::tlm_generic_payload& gp, bool& ok);
  unsigned int ctrl_dbg(tlm::tlm_generic_payload& gp);
  void ctrl_b(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void load_queues();
  [[noreturn]] void program_error(uint32_t q, size_t pc, const Instr& in, const std::string& msg) const;
  void error(const std::string& where, uint64_t cycle, const std::string& msg);

  void guard(uint32_t v);
  /// MXM planes of unit u for type dt (fp16: 2u, 2u + 1; int8: u); false if none.
  bool unit_planes(core::Dtype dt, uint32_t u, uint32_t& first, uint32_t& count) const;
  /// Stream check: a read of vectors [addr, addr + n), vector i at read_ps(i),
  /// must not come before a result issued earlier (MXM, VXM, SXM) has landed
  /// there (the results are still on their stream), nor between the start of
  /// a host write over PCIe and its landing. Fails the chip; false if so.
  /// `pace`: how fast the reader goes through the vectors; it lets the check
  /// look at one vector of an overlap where the reader's and the writer's
  /// paces make it the worst one (Pace::any: every vector is checked).
  enum class Pace {
    slow,  ///< at most one vector per two clock periods (a link's pace, checked by the caller)
    one,   ///< one vector per cycle
    many,  ///< at least one vector per cycle
    any    ///< no guarantee
  };
  template <typename ReadPs>
  bool results_landed(uint32_t q, uint64_t c, const char* what, uint32_t addr, uint32_t n, ReadPs read_ps,
                      bool fast_reader = true, Pace pace = Pace::one);
  /// Pace::slow if a link that sends one vector every `vector_ps` is that slow against this chip's clock
  /// (jitter included), else Pace::any.
  Pace link_pace(uint64_t vector_ps) const;
  /// The same check for reads in any order: step i < n reads vector vec(i) at
  /// read_ps(i) (non-decreasing), each checked on its own (strided MXM
  /// inputs, the second operand of MUL and SUB with BCAST or SPREAD); every
  /// vec(i) lies in [lo, hi), and only results in flight to that range count.
  template <typename Vec, typename ReadPs>
  bool each_landed(uint32_t q, uint64_t c, const char* what, uint32_t n, Vec vec, ReadPs read_ps, uint64_t lo,
                   uint64_t hi);
  void issue_lw(uint32_t q, const Instr& in, uint64_t c);
  void issue_mxm(uint32_t q, const Instr& in, uint64_t c);
  /// HOSTW to host vector `host_vec` (its immediate plus the queue's LOOP offset).
  void issue_hostw(uint32_t q, const Instr& in, uint64_t c, uint64_t host_vec);
  void issue_transpose(uint32_t q, const Instr& in, uint64_t c);
  /// The fly-by headed by the instruction at queue.pc (docs/isa.md "Fly-by"):
  /// its instructions issue together; queue.pc is left on the last of them.
  /// False after a hardware error (nothing issued).
  bool issue_flyby(uint32_t q, Queue& queue, uint64_t c);
  void log_sync(Op op, uint32_t q, uint32_t port, uint64_t issue, uint64_t cycle, int64_t value);
  static clock::Oscillator make_oscillator(const Tsp& t);
  core::Clock m_nominal;
  clock::Oscillator m_clock;
  clock::HacCounter m_hac;
  HacLink* m_hac_link = nullptr;
  std::vector<std::pair<uint32_t, uint64_t>> m_notified;  // (port, sample cycle) not yet polled, by cycle
  std::vector<SyncEvent> m_sync_log;
  int64_t m_shift = 0;
  uint64_t m_program_start_ps = 0;
  std::vector<HostWriteDone> m_host_writes;
  std::function<void(const HostWriteDone&)> m_host_write_hook;
  bool m_active = false;
  std::vector<std::unique_ptr<Port>> m_ports;
  std::vector<std::unique_ptr<Sending>> m_sending;
  Sram m_sram;
  Timeline m_timeline;
  std::vector<std::vector<uint8_t>> m_imem;
  std::vector<Queue> m_queues;
  std::deque<Notify> m_notifies;
  std::vector<uint64_t> m_alu_free;  // cycle each ALU becomes free
  std::vector<uint64_t> m_sxm_free;  // cycle each SXM transpose unit becomes free
  struct MxmPlane {
    uint64_t busy_until = 0;  // end of the MXM streaming through it
    uint64_t load_until = 0;  // end of the LW loading it
    struct Buffer {
      core::Dtype dt = core::Dtype::none;
      uint32_t unit = 0;        // the unit that loaded it
      uint64_t ready = 0;       // cycle from which an MXM may use it
      uint64_t read_until = 0;  // end of the last MXM reading it
    } buf[2];
  };
  std::vector<MxmPlane> m_planes;
  std::vector<WeightTile> m_tiles;  // [first plane of the unit][buffer]
  // Results of the MXM, the VXM (single instructions and fly-bys) and the
  // SXM, and host DMA vectors, on their way to SRAM (the stream check).
  struct InFlight {
    uint32_t dst, n;
    uint64_t c0, lat;    // step i's per vectors land at cycle c0 + i + lat
    uint64_t start = 0;  // DMA (dma): vector i lands at start + pcie ser(i + 1) + latency
    bool dma = false;
    uint32_t per;     // vectors a step writes: MXM 4, VXM 1 (WIDEN 2), TRANSPOSE 1 (DMA: unused)
    const char* who;  // the writer (messages): an op_name, "fly-by" or "host"
    uint64_t lands(const Tsp& t, uint64_t v) const;  // ps
    uint64_t vectors() const { return dma ? n : uint64_t(n) * per; }
    uint64_t last_ps = 0;  // when its last vector lands (in_flight sets it)
  };
  std::vector<InFlight> m_inflight;
  /// Register a result on its way to SRAM (the stream check), its last landing computed once.
  void in_flight(InFlight f);
  sc_core::sc_event m_kick;
  bool m_ticking = false;
  sc_core::sc_event m_start;
  bool m_draining = false;
  uint64_t m_drained_to = 0;
  uint64_t m_end_ps = 0;  // end of the last registered burst
  uint64_t m_last_write = 0;
  bool m_timing_only = false;
  uint64_t m_end_cycle = 0;
  uint32_t m_pid = 0;

 public:
  core::Counter instructions, sends, recvs, adds, copies, nops, waits, loops, syncs, notifies;
  core::Counter deskews, transmits, runtime_deskews, polls, rdhacs, deskew_stall_cycles;
  core::Counter vectors_sent, vectors_received, vectors_added, alu_busy_cycles, data_ops;
  core::Counter vxm_ops, vxm_chained, weight_loads, weight_vectors, mxm_ops, mxm_subops, mxm_plane_cycles;
  core::Counter sxm_ops, sxm_vectors;
  /// Hand a HOSTW's vectors to the host (host_out), at the time the last one lands.
  void deliver_to_host(uint64_t host_vec, const uint8_t* data, uint64_t len, uint64_t t_ps);

 private:
  std::unique_ptr<core::SerialChannel> m_pcie, m_pcie_out;
  core::Counter sram_pages, sram_bytes;
  core::Derived last_write;
};

}  // namespace fabricvp::tsp
