#include "models/npu/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace fabricvp::npu {

const char* client_name(Client c) {
  switch (c) {
    case Client::compute: return "compute";
    case Client::afi_rx_write: return "afi_rx_write";
    case Client::afi_tx_read: return "afi_tx_read";
    case Client::reduce_read: return "reduce_read";
    case Client::reduce_write: return "reduce_write";
    case Client::ace_load_read: return "ace_load_read";
    case Client::ace_store_write: return "ace_store_write";
  }
  return "?";
}

namespace {
const char* kClientStat[kClients] = {"compute_bytes",        "afi_rx_write_bytes", "afi_tx_read_bytes",
                                     "reduce_read_bytes",    "reduce_write_bytes", "ace_load_read_bytes",
                                     "ace_store_write_bytes"};
const char* kClientDesc[kClients] = {
    "bytes read or written by compute kernels",
    "baseline: bytes the AFI RX DMA wrote (received messages)",
    "baseline: bytes the AFI TX DMA read (messages to send)",
    "baseline: bytes the reduction kernels read (2 operands per reduce step)",
    "baseline: bytes the reduction kernels wrote (1 sum per reduce step)",
    "ACE: bytes its DMA read into the ACE SRAM",
    "ACE: bytes its DMA wrote back from the terminal partition",
};
bool is_read(Client c) { return c == Client::afi_tx_read || c == Client::reduce_read || c == Client::ace_load_read; }
}  // namespace

Memory::Memory(const sc_core::sc_module_name& nm)
    : core::Module(nm, "npu.memory"),
      GBps(this, "GBps", 900.0, "GB/s", "memory bandwidth shared by compute, DMA and reductions", 0.001, 1e6),
      comm_share(this, "comm_share", 1.0, "",
                 "share of the bandwidth communication may use (seed 002 BaselineCommOpt / BaselineCompOpt)", 0.001,
                 1.0),
      compute_share(this, "compute_share", 1.0, "",
                    "share of the bandwidth set aside for compute kernels (timing: roofline); with comm_share "
                    "at most 1 when below 1",
                    0.001, 1.0),
      size_mib(this, "size_mib", 32768, "MiB", "capacity (the collective's buffer must fit)", 1, uint64_t(1) << 30),
      dma("dma"),
      m_comm_limited(comm_share.get() < 1.0),
      m_all(8, 1, GBps.get() * 8.0),
      m_comm(8, 1, GBps.get() * 8.0 * comm_share.get()),
      m_compute(8, 1, GBps.get() * 8.0 * compute_share.get()),
      requests(this, "requests", "requests", "memory requests served", m_hot.requests),
      busy_ps(this, "busy_ps", "ps", "time the memory was transferring", m_hot.busy_ps),
      comm_bytes_total(this, "comm_bytes", "bytes", "bytes moved for communication (every client except compute)",
                       m_hot.comm_bytes),
      read_bytes(this, "read_bytes", "bytes", "bytes read", m_hot.read_bytes),
      write_bytes(this, "write_bytes", "bytes", "bytes written", m_hot.write_bytes),
      utilization_pct(this, "utilization", "%", "busy share of the simulated time",
                      [this] { return core::percent_of_run(m_hot.busy_ps); }) {
  for (uint32_t i = 0; i < kClients; ++i)
    m_bytes.push_back(
        std::make_unique<core::CounterRef>(this, kClientStat[i], "bytes", kClientDesc[i], m_hot.by_client[i]));
  dma.register_b_transport(this, &Memory::dma_transport);
  if (compute_share.get() < 1.0 && comm_share.get() + compute_share.get() > 1.0 + 1e-9)
    throw core::ConfigError(
        fmt::format("{}.compute_share: {} set aside for compute and comm_share {} for "
                    "communication add up to more than the memory's bandwidth",
                    name(), compute_share.get(), comm_share.get()));
}

namespace {
void check_range(const Memory& m, uint64_t addr, uint64_t len) {
  if (addr + len > m.size_mib.get() << 20)
    throw std::out_of_range(
        fmt::format("{}: bytes [{}, {}) are past its {} MiB", m.name(), addr, addr + len, m.size_mib.get()));
}
}  // namespace

uint8_t* Memory::at(uint64_t addr, uint64_t len) {
  check_range(*this, addr, len);
  m_data.grow(addr + len);
  return m_data.data() + addr;
}

void Memory::write(uint64_t addr, const uint8_t* in, uint64_t len) { std::memcpy(at(addr, len), in, len); }

void Memory::read(uint64_t addr, uint8_t* out, uint64_t len) const {
  check_range(*this, addr, len);
  const uint64_t have = addr < m_data.size() ? std::min<uint64_t>(len, m_data.size() - addr) : 0;
  if (have) std::memcpy(out, m_data.data() + addr, have);
  if (have < len) std::memset(out + have, 0, len - have);
}

void Memory::dma_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const DmaRequest* req = nullptr;
  gp.get_extension(req);
  if (!req) {
    gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  uint64_t total = 0;
  for (const auto& r : req->ranges) total += r.second;
  if (total != gp.get_data_length()) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  uint8_t* p = gp.get_data_ptr();
  for (const auto& [addr, len] : req->ranges) {
    if (req->no_data) {
      check_range(*this, addr, len);
      continue;
    }
    if (gp.is_write())
      write(addr, p, len);
    else
      read(addr, p, len);
    p += len;
  }
  const uint64_t issued = sc_core::sc_time_stamp().value() + delay.value();
  const uint64_t done = access(issued, total, req->client);
  delay = sc_core::sc_time::from_value(done - sc_core::sc_time_stamp().value());
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

uint64_t Memory::access(uint64_t now_ps, uint64_t bytes, Client c) {
  Hot& h = m_hot;
  const bool comm = c != Client::compute;
  const uint64_t start = std::max({now_ps, h.free, comm ? h.comm_free : uint64_t(0)});
  const uint64_t t = m_all.ps(bytes);
  h.free = start + t;
  uint64_t done = h.free;
  if (comm) {
    // Communication holds to its share of the bandwidth.
    h.comm_free = m_comm_limited ? start + m_comm.ps(bytes) : h.free;
    done = std::max(done, h.comm_free);
    h.comm_bytes += bytes;
  }
  ++h.requests;
  h.busy_ps += t;
  h.by_client[static_cast<uint32_t>(c)] += bytes;
  (is_read(c) ? h.read_bytes : h.write_bytes) += bytes;
  return done;
}

Compute::Compute(const sc_core::sc_module_name& nm)
    : core::Module(nm, "npu.compute"),
      tensor_tflops(this, "tensor_tflops", 120.0, "TFLOPS", "peak matrix (tensor core) throughput", 0.001, 1e6),
      vector_tflops(this, "vector_tflops", 15.0, "TFLOPS", "peak vector (element-wise) throughput", 0.001, 1e6),
      sms(this, "sms", 80, "SMs", "cores (streaming multiprocessors)", 1u, 100000u),
      comm_sms(this, "comm_sms", 8, "SMs",
               "cores the baseline gives communication kernels (seed 002 BaselineCommOpt / BaselineCompOpt)", 1u,
               100000u),
      launch_ns(this, "launch_ns", 0, "ns", "fixed cost of launching a kernel", uint64_t(0), uint64_t(1) << 40),
      efficiency(this, "efficiency", 1.0, "", "achieved share of tensor_tflops in workload kernels (timing: roofline)",
                 0.001, 1.0),
      timing(this, "timing", "workload", "",
             "time of a workload pass: workload (its compute_ns, measured on the whole NPU) or roofline (from its "
             "flops and mem_bytes on the SMs and memory share compute is left)",
             {"workload", "roofline"}),
      m_memo_ps(launch_ns.get() * 1000),  // vector_ps(0)
      kernels(this, "kernels", "kernels", "kernels run", m_hot.kernels),
      flops(this, "flops", "flop", "floating-point (or integer) operations", m_hot.flops),
      busy_ps(this, "busy_ps", "ps", "arithmetic time of the kernels (summed over concurrent kernels)", m_hot.busy_ps) {
  if (comm_sms.get() > sms.get())
    throw core::ConfigError(std::string(name()) + ".comm_sms: more SMs for communication than the NPU has");
  m_roofline = timing.get() == "roofline";
}

namespace {
/// An arithmetic time in ps, refused past what the 64-bit clock holds (a workload's flops at a very low rate).
uint64_t arith_ps(const Compute& c, double flops, double rate) {
  const double ps = std::ceil(flops / rate * 1e12);
  if (!(ps < 9.2e18))
    throw core::ConfigError(
        fmt::format("{}: {:g} operations at {:g} per second take {:g} ps, past the 64-bit "
                    "picosecond clock",
                    c.name(), flops, rate, ps));
  return static_cast<uint64_t>(ps);
}
}  // namespace

uint64_t Compute::kernel_ps(uint64_t f, uint64_t memory_ps) const {
  const uint32_t s = compute_sms();
  if (s == 0)
    throw core::ConfigError(fmt::format("{}: comm_sms ({}) leaves no SMs to the workload's kernels ({} SMs)", name(),
                                        comm_sms.get(), sms.get()));
  const double rate = tensor_tflops.get() * efficiency.get() * 1e12 * s / sms.get();
  const uint64_t arith = arith_ps(*this, static_cast<double>(f), rate);
  return launch_ns.get() * 1000 + std::max(arith, memory_ps);
}

uint64_t Compute::vector_ps(uint64_t f, uint32_t use_sms) const {
  const double rate = vector_tflops.get() * 1e12 * use_sms / sms.get();  // flop/s
  return launch_ns.get() * 1000 + arith_ps(*this, static_cast<double>(f), rate);
}

uint64_t Compute::tensor_ps(uint64_t f, uint32_t use_sms) const {
  const double rate = tensor_tflops.get() * 1e12 * use_sms / sms.get();
  return launch_ns.get() * 1000 + arith_ps(*this, static_cast<double>(f), rate);
}

}  // namespace fabricvp::npu
