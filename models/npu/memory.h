// NPU memory (HBM) with a finite bandwidth shared by compute, DMA and
// reductions, and the NPU's compute model (roofline).
//
// Memory: one FIFO server. A request of b bytes issued at time t (the
// current simulated time, so requests are served in time order) starts at
// max(t, free) and occupies the memory for ser(b) = ceil(b / bandwidth).
// Communication traffic (DMA, reduction kernels) may use at most
// `comm_share` of the bandwidth (seed 002: BaselineCommOpt / BaselineCompOpt
// give communication more or less of the NPU's memory bandwidth and SMs): it
// is further held to ser(b) / comm_share after its start. Whole requests,
// exact to the picosecond; no event per byte.
//
// Contents: real bytes, grown to the highest address written. Other modules
// (the ACE's DMA) reach it through the `dma` target socket: a generic-payload
// read or write whose DmaRequest extension lists the byte ranges (a
// scatter-gather descriptor, served as one request of their total size) and
// the client; the data move at once and the annotated delay returns when the
// request is done (loosely timed: the time the request is issued is now plus
// the delay given).
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/core/module.h"
#include "models/core/timebase.h"
#include "models/core/zero_pages.h"

namespace fabricvp::npu {

/// Who accesses memory (statistics are kept per client).
enum class Client : uint8_t {
  compute,          ///< compute kernels
  afi_rx_write,     ///< baseline: AFI RX DMA writes a received message
  afi_tx_read,      ///< baseline: AFI TX DMA reads a message to send
  reduce_read,      ///< baseline: reduction kernel reads both operands
  reduce_write,     ///< baseline: reduction kernel writes the sum
  ace_load_read,    ///< ACE: DMA reads a chunk into the ACE SRAM
  ace_store_write,  ///< ACE: DMA writes a finished chunk from the terminal partition
};
constexpr uint32_t kClients = 7;
const char* client_name(Client c);

/// Extension of a DMA transaction to NPU memory (see the top of this file).
struct DmaRequest : tlm::tlm_extension<DmaRequest> {
  Client client = Client::compute;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  ///< (byte address, bytes), data back to back in that order
  bool no_data = false;  ///< timing only: the request costs its time, no bytes move (the data pointer may be null)
  tlm::tlm_extension_base* clone() const override { return new DmaRequest(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const DmaRequest&>(e); }
};

class Memory : public core::Module {
 public:
  explicit Memory(const sc_core::sc_module_name& nm);

  core::Param<double> GBps;
  core::Param<double> comm_share;
  core::Param<double> compute_share;
  core::Param<uint64_t> size_mib;

  /// DMA from other modules (the ACE).
  tlm_utils::simple_target_socket_optional<Memory> dma;

  /// Serve a request of `bytes` issued now (at `now_ps`); returns when it is done.
  uint64_t access(uint64_t now_ps, uint64_t bytes, Client c);
  /// Bytes moved by client c.
  uint64_t bytes_of(Client c) const { return m_hot.by_client[static_cast<uint32_t>(c)]; }
  /// Bytes moved for communication (every client except compute).
  uint64_t comm_bytes() const { return m_hot.comm_bytes; }
  /// A compute kernel's `bytes` (Compute::timing roofline) at the bandwidth
  /// compute kernels are given: compute_share x GBps, set aside for them (seed
  /// 002's static split of the memory between compute and communication; not
  /// queued with the requests above). Counted under client compute; returns
  /// the transfer time.
  uint64_t compute_traffic_ps(uint64_t bytes) {
    m_hot.by_client[static_cast<uint32_t>(Client::compute)] += bytes;
    return m_compute.ps(bytes);
  }

  /// Contents (host loads, checks and the NPU's own kernels): bytes [addr,
  /// addr + len); never-written bytes read as zero. std::out_of_range past size_mib.
  void write(uint64_t addr, const uint8_t* in, uint64_t len);
  void read(uint64_t addr, uint8_t* out, uint64_t len) const;
  uint8_t* at(uint64_t addr, uint64_t len);  ///< for writing in place; grows the contents as needed
  /// Bytes held (the highest address written).
  uint64_t held_bytes() const { return m_data.size(); }

 private:
  void dma_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  struct Hot {  // what every request updates, together
    uint64_t free = 0, comm_free = 0;
    uint64_t requests = 0, busy_ps = 0, comm_bytes = 0, read_bytes = 0, write_bytes = 0;
    uint64_t by_client[kClients] = {};
  } m_hot;
  bool m_comm_limited = false;  // comm_share < 1
  // Next to m_hot, the rates' memos (SerialRate::ps) first.
  core::SerialRate m_all, m_comm, m_compute;
  core::ZeroPages m_data;  // never-written bytes read as zero
  std::vector<std::unique_ptr<core::CounterRef>> m_bytes;

 public:
  core::CounterRef requests, busy_ps, comm_bytes_total, read_bytes, write_bytes;
  core::Derived utilization_pct;
};

/// Roofline compute model: a kernel of f flops and b memory bytes on s of the
/// NPU's SMs takes max(f / (TFLOPS x s / sms), memory time of b). With
/// timing: roofline, a workload pass that gives its flops and memory bytes is
/// timed so, on the SMs communication leaves it (all of them with an ACE) and
/// at Memory::compute_share of the bandwidth: seed 002's BaselineCommOpt /
/// BaselineCompOpt / ACE / Ideal differ in exactly these resources.
class Compute : public core::Module {
 public:
  explicit Compute(const sc_core::sc_module_name& nm);

  core::Param<double> tensor_tflops;
  core::Param<double> vector_tflops;
  core::Param<uint32_t> sms;
  core::Param<uint32_t> comm_sms;
  core::Param<uint64_t> launch_ns;
  core::Param<double> efficiency;
  core::Param<std::string> timing;

  /// Workload passes timed by the roofline (timing: roofline) rather than by their compute_ns.
  bool roofline() const { return m_roofline; }
  /// The NPU's cores run collectives (no ACE): comm_sms of the SMs are theirs.
  void reserve_comm_sms(bool r) { m_reserved = r; }
  /// SMs left to the workload's kernels.
  uint32_t compute_sms() const { return m_reserved ? sms.get() - comm_sms.get() : sms.get(); }
  /// A workload pass of `flops` tensor operations whose memory traffic takes
  /// `memory_ps`: max(flops / (tensor_tflops x efficiency x compute_sms() / sms), memory_ps).
  uint64_t kernel_ps(uint64_t flops, uint64_t memory_ps) const;

  /// Arithmetic time of `flops` vector operations on `use_sms` SMs, in ps.
  uint64_t vector_ps(uint64_t flops, uint32_t use_sms) const;
  /// Arithmetic time of `flops` tensor operations on `use_sms` SMs, in ps.
  uint64_t tensor_ps(uint64_t flops, uint32_t use_sms) const;
  /// A workload's kernel that kept the NPU busy for `ps` (counted).
  void ran(uint64_t ps) {
    ++m_hot.kernels;
    m_hot.busy_ps += ps;
  }
  /// A reduction kernel of `elems` additions on the comm_sms SMs: counted; returns its arithmetic time.
  uint64_t reduction(uint64_t elems) {
    if (elems != m_memo_elems) {
      m_memo_elems = elems;
      m_memo_ps = vector_ps(elems, comm_sms.get());
    }
    ++m_hot.kernels;
    m_hot.flops += elems;
    m_hot.busy_ps += m_memo_ps;
    return m_memo_ps;
  }

 private:
  struct Hot {
    uint64_t kernels = 0, flops = 0, busy_ps = 0;
  } m_hot;
  uint64_t m_memo_elems = 0, m_memo_ps = 0;
  bool m_roofline = false, m_reserved = false;

 public:
  core::CounterRef kernels, flops, busy_ps;
};

}  // namespace fabricvp::npu
