// A PsPIN-like programmable switch (ISCA'21; ../shared/pspin-abi.md;
// docs/pspin.md): packets arrive on ports at line rate, land in the L2
// packet buffer, are scheduled per message (header handler once, payload
// handlers concurrently, completion handler once) onto clusters of RISC-V
// cores (home cluster = message id mod clusters, else the least occupied),
// copied into the cluster's L1 and run by the first idle core (FCFS) as C
// handlers on the instruction-set simulator. Handlers issue commands (send a
// packet, write or DMA to host memory, cluster DMA); a packet's feedback
// leaves when its handler and the handler's commands are done.
//
// Time: the switch runs on one ActionQueue (one SC_METHOD). A cluster runs
// its busy cores a quantum of cycles at a time, each hart on its own cycle
// counter (temporal decoupling); whatever a core does at cycle c (a command,
// the end of a handler) takes effect at c exactly. Bank conflicts between
// the cores of a cluster are resolved in the order the cores run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/riscv/elf.h"
#include "models/riscv/hart.h"
#include "models/riscv/memory.h"

namespace fabricvp::pspin {

// ---- memory map (PsPIN's; docs/pspin.md)
constexpr uint32_t kL1Base = 0x10000000u;
constexpr uint32_t kL1Stride = 0x00400000u;
constexpr uint32_t kL1RuntimeOffset = 0x400u;  // stacks
constexpr uint32_t kL1RuntimeBytes = 0x4000u;
constexpr uint32_t kL1PacketOffset = 0x4400u;
constexpr uint32_t kHandlerMemBase = 0x1c000000u;  // L2 handler memory (4 MiB)
constexpr uint32_t kHandlerMemBytes = 0x400000u;
constexpr uint32_t kHandlerDataBase = 0x1c300000u;  // execution context handler memory
constexpr uint32_t kL2PacketBase = 0x1c400000u;
constexpr uint32_t kProgBase = 0x1d000000u;
constexpr uint32_t kProgBytes = 0x8000u;
constexpr uint32_t kL1LocalAlias = 0x1b000000u;  // the executing cluster's own L1
constexpr uint32_t kTerminate = 0x1b200000u;
constexpr uint32_t kDmaRegs = 0x1b204400u;
constexpr uint32_t kHpuRegs = 0x1b205000u;
constexpr uint32_t kTaskRegs = kHpuRegs + 0x08;  // task_t, as PsPIN (up to 4 clusters)
// With more than 4 clusters task_t (a scratchpad pointer and size per cluster)
// would run into PsPIN's doorbell and command registers: it moves here.
constexpr uint32_t kTaskRegsWide = 0x1b207000u;
constexpr uint32_t kConsole = 0x1b206000u;
constexpr uint32_t kMaxClusters = 32;
constexpr uint32_t kMaxCores = 32;

/// One packet offered to the switch.
struct Packet {
  uint32_t msg = 0;    // message id
  uint32_t index = 0;  // packet number in its message
  bool eom = false;    // the last packet of its message
  uint32_t port = 0;
  uint64_t offered_ps = 0;     // when its first bit reaches the port
  std::vector<uint8_t> bytes;  // headers included
};

/// The handlers of the execution context (addresses in program memory; 0 = none).
struct Handlers {
  uint32_t hh = 0, ph = 0, th = 0;
  std::string hh_name, ph_name, th_name;
};

struct HostWrite {
  uint64_t time_ps = 0;
  uint64_t addr = 0;
  std::vector<uint8_t> data;
  std::string source;  // core
};

struct EgressPacket {
  uint64_t time_ps = 0;  // the last bit left the port
  uint32_t port = 0;
  uint32_t nid = 0, fid = 0;
  std::vector<uint8_t> bytes;
};

struct Fault {
  uint64_t time_ps = 0;
  std::string core, handler;
  uint32_t pc = 0, addr = 0, cause = 0;
  std::string what;
};

/// Per-handler (hh / ph / th) execution statistics.
struct HandlerStats {
  uint64_t runs = 0;
  uint64_t instructions = 0, cycles = 0;
  uint64_t min_cycles = UINT64_MAX, max_cycles = 0;
  uint64_t min_instructions = UINT64_MAX, max_instructions = 0;
};

class Switch;
struct Task;

/// First-fit allocator of byte ranges (the packet buffers: frees come in any order).
class Ranges {
 public:
  explicit Ranges(uint32_t size);
  std::optional<uint32_t> alloc(uint32_t n);
  void free(uint32_t at, uint32_t n);
  uint32_t used() const { return m_used; }
  uint32_t size() const { return m_size; }

 private:
  uint32_t m_size;
  uint32_t m_used = 0;
  std::map<uint32_t, uint32_t> m_free;  // offset -> bytes
};

class Core : public core::Module {
 public:
  Core(const sc_core::sc_module_name& nm, uint32_t cluster, uint32_t index);

  core::Counter handlers, instructions, busy_cycles, stall_cycles, commands, faults;

 private:
  friend class Switch;
  friend class Cluster;
  uint32_t m_cluster, m_index;
  std::unique_ptr<riscv::Hart> m_hart;
  std::vector<riscv::UserRange> m_ranges;
  Task* m_task = nullptr;
  std::vector<uint32_t> m_task_words;  // the running task's descriptor (task_t)
  enum class State { Idle, Running, Blocked, Draining } m_state = State::Idle;
  uint64_t m_start_cycle = 0, m_start_instret = 0;
  uint32_t m_inflight = 0;  // commands not completed
  bool m_done = false;      // the handler returned (doorbell)
  uint32_t m_words[7] = {};
  uint32_t m_info = 0;
  uint32_t m_test_handle = 0;
  uint32_t m_cmd_busy = 0;  // bit per handle 0..3
  std::string m_line;       // console output being assembled
  uint32_t m_dma_src = 0, m_dma_dst = 0, m_dma_len = 0, m_dma_test = 0;
  uint32_t m_dma_next = 0, m_dma_busy = 0;
  std::vector<uint32_t> m_dma_pending;
  uint64_t m_block_cycle = 0;
};

/// An ingress port: its own counters (sys.switch0.port<p>.*).
class Port : public core::Module {
 public:
  explicit Port(const sc_core::sc_module_name& nm);
  core::Counter packets_in, bytes_in, packets_dropped, pause_ps;
};

class Cluster : public core::Module {
 public:
  Cluster(const sc_core::sc_module_name& nm, uint32_t index);

  core::Counter tasks, l1_peak_bytes, bank_conflicts, bank_stall_cycles;

 private:
  friend class Switch;
  uint32_t m_index;
  std::vector<Core*> m_cores;
  riscv::AddressMap m_map;
  std::unique_ptr<riscv::Banks> m_banks;
  std::deque<Task*> m_ready;          // copied into L1, waiting for a core (FCFS)
  uint32_t m_occupancy = 0;           // tasks assigned and not finished
  std::string m_occ_name, m_l1_name;  // trace counter names
  bool m_quantum_posted = false;
  uint64_t m_quantum_at = 0;
  std::deque<Task*> m_l1_wait;  // tasks waiting for L1 packet buffer space
};

class Switch : public core::Module, public core::Actor {
 public:
  explicit Switch(const sc_core::sc_module_name& nm);
  ~Switch() override;

  // ---- parameters (defaults: PsPIN's, docs/pspin.md)
  core::Param<uint32_t> clusters;
  core::Param<uint32_t> cores_per_cluster;
  core::Param<double> clock_MHz;
  core::Param<uint32_t> l1_KiB;
  core::Param<uint32_t> l1_banks;  // 0: 8 per core
  core::Param<uint32_t> l1_packet_buffer_KiB;
  core::Param<uint32_t> l2_packet_buffer_KiB;
  core::Param<uint32_t> remote_l1_cycles, l2_cycles, prog_cycles;
  core::Param<uint32_t> ports;
  core::Param<double> port_Gbps;
  core::Param<std::string> l2_full;  // drop | pause
  core::Param<uint32_t> hers_per_cluster;
  core::Param<uint32_t> copy_bytes;  // bytes copied L2 -> L1 per packet (0: the whole packet)
  core::Param<uint32_t> axi_bytes_per_cycle;
  core::Param<uint32_t> dispatch_cycles;
  core::Param<uint32_t> quantum_cycles;
  core::Param<uint64_t> watchdog_cycles;
  core::Param<double> host_latency_ns;
  core::Param<double> host_GBps;
  core::Param<double> egress_Gbps;  // 0: the port rate
  core::Param<std::string> isa;
  // execution context (PsPIN's generic driver, EC0)
  core::Param<uint32_t> handler_mem_KiB;
  core::Param<uint32_t> scratchpad_KiB;
  core::Param<uint64_t> host_mem_addr;
  core::Param<uint64_t> host_mem_MiB;

  // ---- statistics
  core::Counter packets_in, bytes_in, packets_dropped, pause_ps, feedbacks, packets_out, bytes_out, host_writes,
      host_write_bytes, l2_peak_bytes, l2_peak_packets, handler_faults, watchdog_kills, tasks_total, l1_waits;
  core::Value<double> l2_mean_bytes, l2_mean_packets;
  core::Counter lat_min_ps, lat_max_ps, lat_sum_ps;

  /// Loads the handler program (code into program memory, data into L2).
  void load(const riscv::ElfImage& image, const Handlers& handlers);
  /// Offers packets (in order of offered_ps); call before sc_start.
  void offer(std::vector<Packet> packets);
  /// A packet whose first bit reaches its port at max(now, offered_ps), during
  /// the run (hosts on links): the port receives it after the ones before it,
  /// at line rate. Its bytes are released when it is fed back.
  void inject(Packet p);
  /// Where egress packets go (a packet leaves when its last bit has left the
  /// port: time_ps, in the future of the call); without one they are kept
  /// (egress()). Called once per port a packet leaves on.
  void set_egress_sink(std::function<void(EgressPacket&&)> sink) { m_egress_sink = std::move(sink); }
  /// The nid of a NIC send that leaves on every port (the command unit's multicast);
  /// 0xfffe0000 | n: on ports 0 .. n-1.
  static constexpr uint32_t kNidAll = 0xffffffffu;
  /// Bytes the handlers find at `addr` in L2 handler memory (their variables
  /// there, found by symbol; after load()).
  void write_handler_memory(uint32_t addr, const void* data, uint32_t bytes);

  const std::vector<HostWrite>& host_write_log() const { return m_host_writes; }
  const std::vector<EgressPacket>& egress() const { return m_egress; }
  const std::vector<Fault>& fault_log() const { return m_faults; }
  const HandlerStats& handler_stats(int kind) const { return m_hstats[kind]; }
  /// Handler runs for messages of id `from` on are left out of handler_stats() (the cores' own counters still
  /// count them): Flare's kernels forward host-to-host packets that are not the aggregation work tau measures.
  void leave_out_of_handler_stats(uint32_t from) { m_hstats_below = from; }
  const Handlers& handlers() const { return m_handlers; }
  uint64_t period_ps() const { return m_period_ps; }
  uint64_t last_feedback_ps() const { return m_last_feedback_ps; }
  /// Every feedback's time, in the order they left (ps).
  const std::vector<uint64_t>& feedback_times() const { return m_feedback_times; }
  uint64_t first_arrival_ps() const { return m_first_arrival_ps; }
  /// Per message (by id, those below `below`): when its first packet was in L2 and when its last was fed back (ps).
  std::vector<std::pair<uint64_t, uint64_t>> message_spans(uint32_t below = UINT32_MAX) const;
  /// Bytes of cluster c's L1 (the whole 1 MiB of PsPIN's TCDM).
  std::vector<uint8_t> l1_image(uint32_t c) const;
  uint32_t scratchpad_offset() const { return kL1PacketOffset + l1_packet_buffer_KiB.get() * 1024u; }
  bool all_done() const;
  uint32_t nclusters() const { return m_nclusters; }
  uint32_t ncores() const { return m_ncores; }
  const std::vector<Cluster*>& cluster_list() const { return m_clusters; }
  const std::vector<std::string>& console() const { return m_console; }
  bool terminated() const { return m_terminated; }

 private:
  friend class Core;
  friend class Cluster;
  struct Message;

  // packet path
  struct Ingress {
    std::deque<size_t> queue;  // packets not yet received, in order
    bool busy = false;         // receiving one, or waiting for L2 space for it
  };
  void port_next(uint32_t port);
  void admit(size_t i, uint32_t port, uint64_t since);
  void retry_l2();
  void packet_in_l2(size_t i, uint32_t l2_addr, uint32_t alloc, uint64_t arrived);
  void dispatch(Task* t);
  bool place(Task* t);
  void to_l1(Cluster& c, Task* t);
  void wake(Cluster& c);
  /// Runs a core's handler up to cycle `until` (or until it ends: handle_stop), stopping it at its watchdog.
  void run_core(Core& k, uint64_t until);
  /// Starts `c`'s next ready task on its idle core free first from `now_cycle` on, if that is before cycle
  /// `before`; returns the core, or null (no ready task or no such core).
  Core* start_next(Cluster& c, uint64_t now_cycle, uint64_t before);
  void post_quantum(Cluster& c, uint64_t t_ps);
  /// core::Actor: kQuantum runs cluster `arg`'s quantum (post_quantum), unless an earlier one took its place.
  enum : uint32_t { kQuantum };
  void act(uint32_t what, uint64_t arg) override;
  void run_cluster(Cluster& c);
  void start(Core& core, Task* t, uint64_t cycle);
  void handle_stop(Core& core, riscv::Stop stop);
  void fault(Core& core, const std::string& what, uint32_t addr);
  void end_handler(Core& core);
  void finish_core(Core& core, uint64_t t_ps);
  void task_done(Task* t, uint64_t t_ps);
  void feedback(Task* t, uint64_t t_ps);

  // devices
  static bool regs_read(void* ctx, riscv::Hart& h, uint32_t off, unsigned size, uint32_t& v);
  static bool regs_write(void* ctx, riscv::Hart& h, uint32_t off, unsigned size, uint32_t v);
  bool hpu_read(Core& k, riscv::Hart& h, uint32_t off, unsigned size, uint32_t& v);
  bool hpu_write(Core& k, riscv::Hart& h, uint32_t off, uint32_t v);
  bool dma_read(Core& k, riscv::Hart& h, uint32_t off, uint32_t& v);
  bool dma_write(Core& k, riscv::Hart& h, uint32_t off, uint32_t v);
  bool console_write(Core& k, riscv::Hart& h, uint32_t v);
  static bool terminate_write(void* ctx, riscv::Hart& h, uint32_t off, unsigned size, uint32_t v);
  Core& core_of(riscv::Hart& h);
  uint32_t task_base() const;
  uint32_t task_bytes() const;
  bool task_read(Core& k, uint32_t rel, unsigned size, uint32_t& v);
  void fill_task_words(Core& k, const Task& t) const;
  uint32_t issue_command(Core& core);
  void command_done(Core& core, uint32_t handle, uint64_t t_ps);
  void resume(Core& core, uint64_t t_ps);
  uint64_t cycle_ps(uint64_t cycle) const { return cycle * m_period_ps; }
  uint64_t ps_cycle(uint64_t ps) const { return (ps + m_period_ps - 1) / m_period_ps; }
  std::vector<uint8_t> read_bytes(Core& core, uint32_t addr, uint32_t len, bool& ok);

  core::ActionQueue m_q;
  uint32_t m_nclusters = 0, m_ncores = 0;
  uint64_t m_period_ps = 1000;
  std::vector<Cluster*> m_clusters;
  std::vector<std::unique_ptr<Port>> m_ports;
  // --trace: the switch's counters and each cluster's handler spans
  void trace_counter(const char* name, uint64_t t_ps, double v);
  void trace_ids();
  uint32_t m_trace_pid = 0;
  std::vector<uint32_t> m_trace_cluster_pid;
  std::vector<std::unique_ptr<uint8_t[]>> m_l1;
  std::unique_ptr<uint8_t[]> m_l2pkt, m_l2hnd, m_prog;
  std::unique_ptr<Ranges> m_l2_alloc;
  std::vector<std::unique_ptr<Ranges>> m_l1_alloc;
  riscv::DecodeCache m_decode;
  Handlers m_handlers;
  bool m_loaded = false;
  bool m_f = false;

  // packets
  std::deque<Packet> m_packets;  // every packet offered or injected (a deque: injection never moves one)
  std::vector<Ingress> m_ingress;
  bool m_release_packets = false;
  std::deque<size_t> m_l2_wait;                                // packets waiting for L2 space (pause)
  std::vector<std::function<void()>> m_l2_retry;               // their admissions, retried when space frees
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> m_eom_l2;  // message -> its EOM packet in L2
  std::map<uint32_t, uint64_t> m_eom_arrived;
  std::vector<std::string> m_console;
  std::map<uint32_t, std::unique_ptr<Message>> m_messages;
  std::deque<Task*> m_unplaced;  // no cluster had room
  std::vector<std::unique_ptr<Task>> m_tasks;

  // outputs
  std::vector<HostWrite> m_host_writes;
  std::vector<EgressPacket> m_egress;
  std::vector<Fault> m_faults;
  HandlerStats m_hstats[3];
  uint32_t m_hstats_below = UINT32_MAX;
  std::vector<uint64_t> m_egress_free_ps;  // per port
  std::function<void(EgressPacket&&)> m_egress_sink;
  uint64_t m_host_free_ps = 0;
  uint64_t m_last_feedback_ps = 0, m_first_arrival_ps = UINT64_MAX;
  // the L2 packet buffer's occupancy integrated over time (byte-ps, packet-ps) up to m_l2_since_ps
  void l2_advance();
  double m_l2_byte_ps = 0, m_l2_packet_ps = 0;
  uint64_t m_l2_since_ps = 0, m_l2_packets = 0;
  std::vector<uint64_t> m_feedback_times;
  uint64_t m_feedbacks_expected = 0;
  bool m_terminated = false;
};

}  // namespace fabricvp::pspin
