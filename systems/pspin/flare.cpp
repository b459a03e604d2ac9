#include "systems/pspin/flare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "models/core/context.h"
#include "models/core/dtype.h"
#include "models/core/output_file.h"
#include "systems/pspin/scenario.h"

namespace fabricvp::pspin {

namespace fs = std::filesystem;

namespace {
constexpr uint8_t kInt32 = 0, kFp32 = 1;  // flare.h FLARE_INT32, FLARE_FP32
constexpr uint8_t kSum = 0, kMin = 1, kMax = 2;

using flare::combine;
}  // namespace

FlareSystem::FlareSystem(const sc_core::sc_module_name& nm)
    : core::Module(nm, "flare.system"),
      topology(this, "topology", "flare", "", "hosts on the ports of one PsPIN switch (Flare)", {"flare"}),
      hosts(this, "hosts", 8, "hosts", "hosts, one per switch port", 2u, 256u),
      link_latency_ns(this, "link_latency_ns", 500.0, "ns",
                      "latency of each host link (each direction), after serialization", 0.0, 1e9),
      switch0("switch0"),
      host_actions("host_actions") {
  if (switch0.ports.get() != hosts.get())
    throw core::ConfigError(fmt::format("{}.ports = {}: a Flare switch has one port per host ({}.hosts = {})",
                                        switch0.name(), switch0.ports.get(), name(), hosts.get()));
  for (uint32_t h = 0; h < hosts.get(); ++h)
    host.push_back(std::make_unique<flare::Host>(fmt::format("host{}", h).c_str(), h, switch0.port_Gbps.get(),
                                                 link_latency_ns.get(), host_actions,
                                                 [this](Packet p) { switch0.inject(std::move(p)); }));
  switch0.set_egress_sink([this](EgressPacket&& p) { host[p.port]->deliver(std::move(p)); });
}

FlareScenario::FlareScenario() : m_sys(std::make_unique<FlareSystem>("sys")) {}

std::string FlareScenario::headline() const {
  const Switch& s = m_sys->switch0;
  return fmt::format("Flare: {} hosts on a PsPIN switch of {} clusters x {} cores, {:.0f} Gbit/s ports",
                     m_sys->host.size(), s.nclusters(), s.ncores(), s.port_Gbps.get());
}

std::string FlareScenario::description() const {
  return fmt::format("allreduce ({}, {}) of {} bytes per host in {}-byte blocks, handler {} of {}",
                     core::dtype_name(m_dtype), m_params.op.get(), m_job.elems * m_job.esize,
                     m_params.block_bytes.get(), m_handler_name, m_handler_file);
}

void FlareScenario::prepare(const systems::RunOptions& opt) {
  for (const char* option : {"src", "dst", "group", "collective", "programs"})
    opt.refuse(option, "a Flare platform runs one allreduce of --bytes over all its hosts (docs/flare.md)");
  if (opt.workload != "allreduce")
    throw core::ConfigError(
        fmt::format("--workload {}: a Flare platform runs an allreduce in the switch", opt.workload));
  m_out_dir = opt.out_dir;
  m_seed = opt.seed;
  m_dtype = opt.dtype;
  if (m_dtype != core::Dtype::int32 && m_dtype != core::Dtype::fp32)
    throw core::ConfigError(
        fmt::format("--dtype {}: the Flare kernels reduce int32 and fp32", core::dtype_name(m_dtype)));
  const uint32_t esize = 4;
  const uint64_t bytes = opt.bytes ? opt.bytes : uint64_t(1) << 20;
  if (bytes % esize)
    throw core::ConfigError(fmt::format("--bytes {}: not a whole number of {}-byte elements", bytes, esize));
  if (m_params.block_bytes.get() % esize)
    throw core::ConfigError(
        fmt::format("flare.block_bytes {}: not a whole number of {}-byte elements", m_params.block_bytes.get(), esize));
  m_job.reduction = 1;
  m_job.hosts = static_cast<uint32_t>(m_sys->host.size());
  m_job.dtype = m_dtype == core::Dtype::int32 ? kInt32 : kFp32;
  const std::string& op = m_params.op.get();
  m_job.op = op == "sum" ? kSum : op == "min" ? kMin : kMax;
  m_job.esize = esize;
  m_job.elems = bytes / esize;
  m_job.block_elems = m_params.block_bytes.get() / esize;
  m_job.window = m_params.window.get();
  m_job.stagger = m_params.stagger.get();
  if (m_job.blocks() > UINT32_MAX) throw core::ConfigError(fmt::format("--bytes {}: more than 2^32 blocks", bytes));

  // Switch memory: the blocks open at once (up to 2 windows: a host may start
  // the next group while the last one is answered) need a buffer each.
  const Switch& s = m_sys->switch0;
  m_tree = m_params.algorithm.get() == "tree";
  m_ring = m_params.algorithm.get() == "ring";
  m_job.ring = m_ring;
  const uint32_t slot_bytes = m_tree ? flare::tree_slot_bytes(m_job.hosts) : flare::kSlotBytes;
  const uint64_t slots = uint64_t(s.nclusters()) * (s.scratchpad_KiB.get() * 1024u / slot_bytes);
  if (!m_ring && 2 * uint64_t(m_job.window) > slots)
    throw core::ConfigError(fmt::format(
        "flare.window {}: up to {} blocks are open at once, the switch holds {} block buffers ({} clusters x {} KiB "
        "of scratchpad / {} B): lower the window or raise {}.scratchpad_KiB",
        m_job.window, 2 * m_job.window, slots, s.nclusters(), s.scratchpad_KiB.get(), slot_bytes, s.name()));
  const uint64_t log_bytes = m_job.blocks() * m_job.hosts * 2;
  if (!m_ring && log_bytes > s.host_mem_MiB.get() << 20)
    throw core::ConfigError(
        fmt::format("--bytes {}: the order log ({} B: 2 per host per block) does not fit "
                    "{}.host_mem_MiB ({} MiB)",
                    bytes, log_bytes, s.name(), s.host_mem_MiB.get()));

  auto it = opt.kind_options.find("handlers");
  m_handler_file = it != opt.kind_options.end() ? it->second
                                                : std::string(FABRICVP_HANDLER_DIR) + (m_ring   ? "/flare/forward.c"
                                                                                       : m_tree ? "/flare/tree.c"
                                                                                                : "/flare/dense.c");
  if (!fs::exists(m_handler_file)) throw core::ConfigError(fmt::format("--handlers {}: no such file", m_handler_file));
  m_image = handler_image(m_handler_file, m_out_dir, s);
  auto ph = opt.kind_options.find("ph");
  find_handler(m_image, ph != opt.kind_options.end() ? ph->second : "", "ph", "_ph", true, m_handler_name);
}

uint64_t FlareScenario::host_bytes(std::string& what) const {
  // Inputs and results of every host, and the packets in flight.
  const uint64_t v = m_job.elems * m_job.esize;
  what = fmt::format("{} hosts' inputs and results of {} bytes", m_job.hosts, v);
  return 2 * v * m_job.hosts + m_job.blocks() * m_job.hosts * 96;
}

void FlareScenario::load() {
  Handlers h;
  h.ph = find_handler(m_image, m_handler_name, "ph", "_ph", true, h.ph_name);
  try {
    sw().load(m_image, h);
  } catch (const std::exception& e) {
    throw core::ConfigError(e.what());
  }
  const uint64_t bytes = m_job.elems * m_job.esize;
  for (uint32_t i = 0; i < m_job.hosts; ++i) {
    std::vector<uint8_t> in(bytes);
    core::random_elements(m_dtype, m_seed * 1000003 + i, in.data(), bytes, 0, m_job.hosts);
    m_sys->host[i]->start(m_job, std::move(in));
  }
}

double FlareScenario::fraction_done() const {
  uint64_t got = 0, all = 0;
  for (const auto& h : m_sys->host) {
    got += h->blocks_received();
    all += h->blocks_expected();
  }
  return all ? double(got) / double(all) : 1.0;
}

void FlareScenario::finish() {
  // host0's result (the check compares every host's with the reference)
  const std::vector<uint8_t>& r = m_sys->host[0]->result();
  core::write_file((fs::path(m_out_dir) / "result.bin").string(),
                   std::string_view(reinterpret_cast<const char*>(r.data()), r.size()), "allreduce result", true);
  for (const Fault& f : sw().fault_log()) {
    core::HardwareError e;
    e.where = f.core;
    e.time_ps = f.time_ps;
    e.message = fmt::format("handler {} faulted: {} at pc 0x{:08x}, address 0x{:08x}", f.handler, f.what, f.pc, f.addr);
    core::Context::get().hw_error(e);
  }
  for (const auto& h : m_sys->host)
    if (!h->done()) {
      core::HardwareError e;
      e.where = h->name();
      e.time_ps = sc_core::sc_time_stamp().value();
      e.message = fmt::format("{} of {} {} never received ({} in flight)", h->blocks_expected() - h->blocks_received(),
                              h->blocks_expected(), m_ring ? "ring packets" : "blocks", h->in_flight());
      core::Context::get().hw_error(e);
    }
}

systems::Outcome FlareScenario::check() {
  systems::Outcome out;
  out.checked = true;
  // The order the switch applied each block's contributions in (the kernel's log in host memory).
  std::map<uint64_t, const std::vector<uint8_t>*> logged;
  for (const HostWrite& w : sw().host_write_log()) logged[w.addr] = &w.data;
  const uint64_t base = sw().host_mem_addr.get();
  const uint32_t n = m_job.hosts;
  uint64_t bad = 0, bad_order = 0;
  if (m_ring) {  // segment s: the chain from host s around the ring, op(own, received) at each host
    for (uint32_t s = 0; s < n; ++s) {
      const uint64_t lo = uint64_t(s) * m_job.elems / n, hi = uint64_t(s + 1) * m_job.elems / n;
      for (uint64_t e = lo; e < hi; ++e) {
        uint32_t acc;
        std::memcpy(&acc, &m_sys->host[s]->input()[e * 4], 4);
        for (uint32_t k = 1; k < n; ++k) {
          uint32_t own;
          std::memcpy(&own, &m_sys->host[(s + k) % n]->input()[e * 4], 4);
          acc = combine(m_job.dtype, m_job.op, own, acc);
        }
        for (const auto& h : m_sys->host)
          if (std::memcmp(&h->result()[e * 4], &acc, 4) != 0) ++bad;
      }
    }
  }
  std::vector<uint32_t> ref(m_job.block_elems);
  std::vector<uint16_t> order(n);
  for (uint64_t b = 0; b < m_job.blocks() && !m_ring; ++b) {
    const uint64_t first = b * m_job.block_elems;
    const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(m_job.block_elems, m_job.elems - first));
    for (uint32_t e = 0; e < count && m_tree; ++e) {  // the fixed tree (flare/tree.c)
      std::vector<uint32_t> v(n);
      for (uint32_t h = 0; h < n; ++h) std::memcpy(&v[h], &m_sys->host[h]->input()[(first + e) * 4], 4);
      for (uint32_t d = 1; d < n; d *= 2)
        for (uint32_t i = 0; i + d < n; i += 2 * d) v[i] = combine(m_job.dtype, m_job.op, v[i], v[i + d]);
      ref[e] = v[0];
    }
    auto it = logged.find(base + b * n * 2);
    if (!m_tree) {  // the order the switch applied them in (flare/dense.c's log)
      bool perm = it != logged.end() && it->second->size() == size_t(n) * 2;
      if (perm) {
        std::memcpy(order.data(), it->second->data(), size_t(n) * 2);
        std::vector<uint8_t> seen(n, 0);
        for (uint16_t h : order) perm = perm && h < n && !seen[h]++;
      }
      if (!perm) {  // no usable log: the reference takes the hosts in order (exact for int32)
        ++bad_order;
        for (uint32_t h = 0; h < n; ++h) order[h] = static_cast<uint16_t>(h);
      }
      for (uint32_t e = 0; e < count; ++e) {
        uint32_t acc;
        std::memcpy(&acc, &m_sys->host[order[0]]->input()[(first + e) * 4], 4);
        for (uint32_t k = 1; k < n; ++k) {
          uint32_t v;
          std::memcpy(&v, &m_sys->host[order[k]]->input()[(first + e) * 4], 4);
          acc = combine(m_job.dtype, m_job.op, acc, v);
        }
        ref[e] = acc;
      }
    }
    for (const auto& h : m_sys->host)
      for (uint32_t e = 0; e < count; ++e)
        if (std::memcmp(&h->result()[(first + e) * 4], &ref[e], 4) != 0) ++bad;
  }
  uint64_t errors = 0;
  for (const auto& h : m_sys->host) errors += h->protocol_errors.get();
  m_stats.mismatched_elements.set(bad);
  out.verified = bad == 0 && errors == 0 && sw().fault_log().empty();
  if (bad_order)
    m_sys->log(core::Level::warn,
               "{} blocks without an order log in the switch's host memory: their reference takes "
               "the hosts in order",
               bad_order);
  m_stats.verified.set(out.verified);
  return out;
}

void FlareScenario::report(const systems::Outcome&) {
  uint64_t end = 0, up = 0, down = 0;
  for (const auto& h : m_sys->host) {
    end = std::max(end, h->completion_ps.get());
    up += h->tx.payload_bytes.get();
    down += h->bytes_received.get();
  }
  const double bytes = double(m_job.elems * m_job.esize);
  const uint32_t n = m_job.hosts;
  m_stats.simulated_ps.set(end);
  m_stats.algbw_GBps.set(end ? bytes / (end / 1000.0) : 0.0);
  m_stats.busbw_GBps.set(m_stats.algbw_GBps.get() * 2.0 * (n - 1) / n);
  m_stats.wire_bytes_up.set(up);
  m_stats.wire_bytes_down.set(down);
  m_stats.blocks.set(m_job.blocks());
  const HandlerStats& ph = sw().handler_stats(1);
  if (ph.runs) {
    const double tau = double(ph.cycles) / double(ph.runs);
    m_stats.ph_cycles_mean.set(tau);
    // K cores each take tau cycles per contribution; a host's block is one of n contributions.
    const double contributions_per_s = double(sw().nclusters()) * sw().ncores() * sw().clock_MHz.get() * 1e6 / tau;
    m_stats.model_GBps.set(contributions_per_s / n * m_params.block_bytes.get() / 1e9);
  }
  core::set_stats_end(end);
}

void FlareScenario::summarize(const systems::Outcome& outcome, systems::Summary& out) {
  if (m_ring)
    out.line("allreduce", fmt::format("{} hosts x {} B of {} ({}): the host-based ring baseline, 2 x {} steps through "
                                      "the switch, packets of up to {} B",
                                      m_job.hosts, m_job.elems * m_job.esize, core::dtype_name(m_dtype),
                                      m_params.op.get(), m_job.hosts - 1, m_params.block_bytes.get()));
  else
    out.line("allreduce", fmt::format("{} hosts x {} B of {} ({}, {}), {} blocks of {} B, window {}{}", m_job.hosts,
                                      m_job.elems * m_job.esize, core::dtype_name(m_dtype), m_params.op.get(),
                                      m_params.algorithm.get(), m_job.blocks(), m_params.block_bytes.get(),
                                      m_job.window, m_job.stagger ? ", staggered" : ""));
  out.line("result", outcome.verified
                         ? (m_ring   ? "every host's result equals the reference (bit for bit, the ring's order)"
                            : m_tree ? "every host's result equals the reference (bit for bit, fixed tree order)"
                                     : "every host's result equals the reference (bit for bit, in the switch's order)")
                         : fmt::format("NOT verified: {} mismatched elements", m_stats.mismatched_elements.get()));
  out.line("completion",
           fmt::format("{:.3f} us: algbw {:.2f} GB/s, busbw {:.2f} GB/s", m_stats.simulated_ps.get() / 1e6,
                       m_stats.algbw_GBps.get(), m_stats.busbw_GBps.get()));
  out.line("wire", fmt::format("{} B up, {} B down (all host links)", m_stats.wire_bytes_up.get(),
                               m_stats.wire_bytes_down.get()));
  if (m_stats.ph_cycles_mean.get() > 0)
    out.line("switch",
             m_ring ? fmt::format("forwarding handler tau {:.1f} cycles; L2 packet buffer peak {} B",
                                  m_stats.ph_cycles_mean.get(), sw().l2_peak_bytes.get())
                    : fmt::format("handler tau {:.1f} cycles: the cores aggregate {:.2f} GB/s per host "
                                  "(K / tau); L2 packet buffer peak {} B",
                                  m_stats.ph_cycles_mean.get(), m_stats.model_GBps.get(), sw().l2_peak_bytes.get()));
}

void FlareScenario::tables(systems::Summary& out) {
  std::string t =
      fmt::format("  {:<8} {:>12} {:>12} {:>10} {:>14}\n", "host", "bytes up", "bytes down", "peak win", "done us");
  for (const auto& h : m_sys->host)
    t += fmt::format("  {:<8} {:>12} {:>12} {:>10} {:>14.3f}\n", h->basename(), h->tx.payload_bytes.get(),
                     h->bytes_received.get(), h->peak_in_flight.get(), h->completion_ps.get() / 1e6);
  out.text(t);
}

int FlareScenario::topology(const std::string& platform, uint32_t, nlohmann::json& json) {
  fmt::print("{}: {}\n", platform, headline());
  const Switch& s = m_sys->switch0;
  json = {{"platform", platform},           {"hosts", m_sys->host.size()},
          {"clusters", s.nclusters()},      {"cores", s.nclusters() * s.ncores()},
          {"port_Gbps", s.port_Gbps.get()}, {"link_latency_ns", m_sys->link_latency_ns.get()}};
  json["schema"] = {{"hosts", {{"unit", "hosts"}, {"description", "hosts, one per switch port"}}},
                    {"clusters", {{"unit", "clusters"}, {"description", "core clusters of the switch"}}},
                    {"cores", {{"unit", "cores"}, {"description", "RISC-V cores of the switch"}}},
                    {"port_Gbps", {{"unit", "Gbit/s"}, {"description", "line rate of each port and host link"}}},
                    {"link_latency_ns", {{"unit", "ns"}, {"description", "latency of each host link"}}}};
  return 0;
}

namespace {
const bool flare_registered = systems::register_kind(
    systems::Kind{"flare",
                  "Flare: hosts run an in-network allreduce on a PsPIN-like switch's C kernels (seed 004)",
                  {"flare"},
                  false,
                  [](const systems::RunOptions&) { return std::make_unique<FlareScenario>(); },
                  {"handlers", "ph"}});
}  // namespace

}  // namespace fabricvp::pspin
