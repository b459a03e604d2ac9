// Compile-time schedule builder (seed 000 §4: scheduled, not routed).
//
// The engine places every burst of every tensor on every cable at an exact
// time: each directed cable keeps its reserved serializer intervals, each chip
// its ALU intervals, and a new burst takes the earliest free slot after its
// data is ready. A tensor crossing several cables is forwarded by every chip on
// the way as soon as each vector lands in its SRAM (virtual cut-through), and
// the last chip receives it in chunks at the addresses the collective chose.
// Timing follows docs/isa.md exactly, so the engine knows when every vector is
// readable; the simulation must agree to the picosecond.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "models/tsp/isa.h"
#include "sw/asm/program.h"
#include "sw/sched/machine.h"
#include "sw/sched/routing.h"

namespace fabricvp::sched {

/// Time at which each vector of a region is readable, ps (empty: all ready at 0).
using Ready = std::vector<uint64_t>;

class Engine {
 public:
  explicit Engine(const Machine& m);

  /// Where the last chip writes consecutive vectors of a tensor (one RECV each).
  struct Chunk {
    uint32_t addr, count;
  };

  /// Move n vectors from (route source, src_addr) along `route`: vector i is
  /// read no earlier than ready[i] (and the first SEND issues no earlier than
  /// min_ps); intermediate chips forward through scratch SRAM; the destination
  /// receives them into `dst` (chunks covering n vectors in order). Returns the
  /// time each vector is readable at the destination.
  Ready send(const Route& route, uint32_t src_addr, const std::vector<Chunk>& dst, uint32_t n, const Ready& ready,
             uint64_t min_ps = 0);

  /// When the last of n vectors would be readable at the route's end if
  /// send() were called now with the same arguments (nothing is booked):
  /// lets a compiler choose among routes by what is already scheduled.
  uint64_t lands(const Route& route, uint32_t n, const Ready& ready, uint64_t min_ps = 0) const;

  /// ADD.dt dst = a + b over n vectors on `chip`, at the first cycle >= min_cycle
  /// with a free ALU. Returns the issue cycle.
  uint64_t add(uint32_t chip, uint64_t min_cycle, core::Dtype dt, uint32_t dst, uint32_t a, uint32_t b, uint32_t n);
  /// COPY dst = src over n vectors (through an ALU, same timing as ADD).
  uint64_t copy(uint32_t chip, uint64_t min_cycle, uint32_t dst, uint32_t src, uint32_t n);
  /// Any VXM instruction (MUL, SUB, RSQRT, SPLAT, NARROW, WIDEN; docs/isa.md) on
  /// `chip` at the first cycle >= min_cycle with a free ALU for in.count
  /// cycles: step i reads at c + i, its result lands add_latency cycles later.
  /// Returns the issue cycle c.
  uint64_t vxm(uint32_t chip, uint64_t min_cycle, const tsp::Instr& in) { return alu(chip, min_cycle, in); }
  /// A fly-by (docs/isa.md "Fly-by"): stages[0] reads its first operand
  /// (field b) from SRAM, each later stage takes the previous result (its b
  /// is ignored), only the last writes (its a; the others' a are ignored);
  /// one ALU per stage for in.count cycles from the first cycle c >=
  /// min_cycle at which that many are free. Every SRAM operand is read at
  /// c + i; the last stage's result i lands at c + i + add_latency +
  /// (stages - 1) * fly_latency. The flags and unused fields are set here.
  /// Returns c. One stage is vxm().
  uint64_t flyby(uint32_t chip, uint64_t min_cycle, std::vector<tsp::Instr> stages);
  /// When a fly-by of `stages` instructions issued at cycle c lands its result i: the cycle.
  uint64_t flyby_lands(uint32_t chip, uint64_t c, uint32_t stages, uint32_t i) const {
    return c + i + m_m.chips[chip].add_latency + (stages - 1) * uint64_t(m_m.chips[chip].fly_latency);
  }

  /// Matrix unit (docs/isa.md "LW and MXM"): units of type dt on `chip`
  /// (fp16: mxm_planes / 2, int8: mxm_planes).
  uint32_t mxm_units(uint32_t chip, core::Dtype dt) const;
  /// LW.dt unit.buf from `tile` (n vectors) at the first cycle >= min_cycle at
  /// which the unit's load path is free and no MXM still reads the buffer.
  /// Returns the first cycle an MXM may use the weights.
  uint64_t lw(uint32_t chip, uint64_t min_cycle, core::Dtype dt, uint32_t unit, uint32_t buf, uint32_t tile,
              uint32_t n);
  /// MXM.dt unit.buf: n sub-operations, inputs from `src`, 4 result vectors
  /// each from `dst` (accumulated onto dst if acc), at the first cycle >=
  /// min_cycle at which the unit is free and the buffer's weights installed.
  /// Sub-operation i reads input vector src + i * stride (docs/isa.md "MXM").
  /// Returns the issue cycle c: result i lands at cycle c + i + mxm_latency.
  uint64_t mxm(uint32_t chip, uint64_t min_cycle, core::Dtype dt, uint32_t unit, uint32_t buf, uint32_t dst,
               uint32_t src, uint32_t n, bool acc, uint32_t stride = 1);

  /// SXM TRANSPOSE.dt (docs/isa.md "TRANSPOSE"): vector dst gets element
  /// `lane` of vectors src + k * stride, k < n (zeros from n on), on one of
  /// the chip's sxm_units at the first cycle c >= min_cycle at which that unit
  /// is free for ceil(n / sxm_rate) cycles. Vector k is read at cycle
  /// c + k / sxm_rate; the result is readable at cycle
  /// c + (n - 1) / sxm_rate + sxm_latency. Returns c.
  uint64_t transpose(uint32_t chip, uint64_t min_cycle, core::Dtype dt, uint32_t dst, uint32_t src, uint32_t n,
                     uint32_t lane, uint32_t stride);

  /// A host write of n vectors over the chip's PCIe link, ready at ready_ps,
  /// after the writes booked before it (the link is a FIFO). Returns when
  /// each vector is readable.
  Ready host_write(uint32_t chip, uint32_t n, uint64_t ready_ps);
  /// The same write booked without listing its vectors: returns its start on
  /// the link; vector i lands at host_lands(chip, start, i).
  uint64_t host_write_start(uint32_t chip, uint32_t n, uint64_t ready_ps);
  uint64_t host_lands(uint32_t chip, uint64_t start, uint32_t i) const;
  /// HOSTW (docs/isa.md): n vectors from `src` on `chip` to host vector
  /// `host_vec` over the chip-to-host PCIe direction, issued at the first
  /// cycle c >= min_cycle at which that direction is idle (the writes booked
  /// before it first). Vector i is read at ps(c) + pcie.ps(i); the write is
  /// in host memory at ps(c) + pcie.ps(n) + latency (its completion).
  /// Returns c.
  uint64_t to_host(uint32_t chip, uint64_t min_cycle, uint32_t src, uint32_t n, uint64_t host_vec);

  /// Forwarding buffers are taken from this vector address upwards on every chip.
  void set_scratch_base(uint32_t vec) { m_scratch_base = vec; }

  /// The last SRAM write of the schedule (ps): its predicted completion.
  uint64_t completion_ps() const { return m_completion; }
  /// Per-chip programs (queues sorted by cycle, WAITs inserted); checks instruction memory.
  std::vector<sw::Program> programs() const;

  uint64_t bursts() const { return m_bursts; }
  uint64_t forwarded_vectors() const { return m_forwarded; }
  /// Most scratch vectors any chip needed for forwarding.
  uint64_t scratch_peak() const { return m_scratch_peak; }

 private:
  struct Timed {
    uint64_t cycle;
    tsp::Instr in;
  };
  /// One cable of a train: when its SEND issues, when the burst starts (ps),
  /// the receiver's RECV cycle per destination chunk, the transit buffer.
  struct Leg {
    Hop hop;
    uint64_t send_cycle = 0, start = 0;
    std::vector<uint64_t> recv_cycles;
    uint32_t buffer = 0;
  };
  /// send()'s placement in time, without booking: fills legs, returns when
  /// each vector is readable at the destination.
  Ready place(const Route& route, const std::vector<Chunk>& dst, uint32_t n, const Ready& ready, uint64_t min_ps,
              std::vector<Leg>& legs) const;
  /// Earliest cycle >= c0 at which chip can start an n-packet burst on port.
  uint64_t slot(uint32_t chip, uint32_t port, uint64_t c0, uint32_t n) const;
  /// A forwarding buffer of n vectors on `chip`, live from t0 to t1 (ps).
  uint32_t scratch(uint32_t chip, uint32_t n, uint64_t t0, uint64_t t1);
  /// Issue an ALU instruction (ADD/COPY/VXM) at the first cycle >= c with a free ALU.
  uint64_t alu(uint32_t chip, uint64_t c, const tsp::Instr& in);
  /// k instructions (a fly-by, or one) on k ALUs free for [c', c' + count) from the first such c' >= c,
  /// emitted together into the first ALU's queue. Returns c'.
  uint64_t book_alus(uint32_t chip, uint64_t c, const tsp::Instr* stages, uint32_t k);
  void emit(uint32_t chip, uint32_t queue, uint64_t cycle, const tsp::Instr& in);
  void complete(uint64_t t) {
    if (t > m_completion) m_completion = t;
  }

  const Machine& m_m;
  // [chip][port]: serializer reservations, start -> end (ps)
  std::vector<std::vector<std::map<uint64_t, uint64_t>>> m_busy;
  // [chip][lane]: ALU reservations, first cycle -> end cycle
  std::vector<std::vector<std::map<uint64_t, uint64_t>>> m_alu;
  // [chip][port]: receive take windows, first -> last take (ps)
  std::vector<std::vector<std::map<uint64_t, uint64_t>>> m_takes;
  std::vector<std::vector<std::vector<Timed>>> m_queues;  // [chip][queue]
  struct Unit {  // one MXM unit's reservations (the compiler issues its work in order)
    uint64_t busy_until = 0, load_until = 0;
    uint64_t ready[2] = {0, 0}, read_until[2] = {0, 0};
    std::set<uint64_t> issued;  // cycles its queue already issues at
  };
  std::vector<std::map<std::pair<uint8_t, uint32_t>, Unit>> m_units;  // [chip][(dtype, unit)]
  std::vector<uint64_t> m_pcie_free;                                  // [chip]: end of the last host write
  // [chip][SXM unit]: TRANSPOSE reservations, first cycle -> end cycle
  std::vector<std::vector<std::map<uint64_t, uint64_t>>> m_sxm;
  /// The unit's instruction queue: after the C2C and ALU queues.
  uint32_t unit_queue(uint32_t chip, uint32_t unit) const;
  /// An SXM unit's instruction queue: after the MXM units' queues (as many as int8 units, mxm_planes).
  uint32_t sxm_queue(uint32_t chip, uint32_t unit) const;
  /// The queue issuing a chip's HOSTWs: after the SXM units' queues.
  uint32_t pcie_queue(uint32_t chip) const;
  std::vector<uint64_t> m_pcie_out_free;  // [chip]: end of the last HOSTW's serialization (ps)
  struct Lease {
    uint32_t addr, len;
    uint64_t t0, t1;
  };
  std::vector<std::vector<Lease>> m_leases;  // forwarding buffers per chip
  uint32_t m_scratch_base = 0;
  uint64_t m_scratch_peak = 0;
  uint64_t m_completion = 0;
  uint64_t m_bursts = 0, m_forwarded = 0;
};

}  // namespace fabricvp::sched
