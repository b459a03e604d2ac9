// The "torus" system kind (seeds 001, 002): NPUs on a hierarchical torus, with
// or without the ACE at every endpoint (systems/torus/system.h). A run issues
// collectives through every NPU's collective service (models/npu/npu.h): one
// (--workload, --bytes, --dtype, --group, --root) or several at once
// (--collective, repeated), each on every communicator of its group, each
// with its own buffer; every member's result is checked bit-exactly against
// the host reference (sw/collectives/torus.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "models/core/context.h"
#include "models/core/units.h"
#include "sw/collectives/torus.h"
#include "systems/kind.h"
#include "systems/torus/system.h"

namespace fabricvp::torus {

namespace {

using collectives::Communicator;
using core::human_bytes;
using core::human_time;
using npu::CollectiveKind;

/// One collective of the run, issued on every communicator of its group.
struct Spec {
  std::string text;  ///< as given (reports)
  CollectiveKind kind = CollectiveKind::allreduce;
  uint64_t bytes = 0;
  core::Dtype dtype = core::Dtype::fp32;
  std::string group = "all";
  std::vector<uint32_t> dims;
  uint32_t root = 0;
  uint64_t at_ps = 0;
  // Set up by prepare().
  uint64_t address = 0;
  uint64_t elems = 0;
  std::vector<Communicator> comms;
  std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>> plans;  // [comm][rank]
  std::vector<std::vector<npu::CollectiveHandle>> handles;                     // [comm][rank]
  // Results.
  uint64_t completion = 0;
  uint64_t mismatched = 0;
  uint32_t members_ok = 0, members = 0;
  struct Bad {
    uint32_t npu;
    uint64_t byte;
    double expected, got;
  };
  std::vector<Bad> first;
  uint32_t size() const { return comms.empty() ? 0 : comms[0].size(); }
  const npu::CollectivePlan& plan0() const { return *plans[0][0]; }
  uint64_t duration() const { return completion > at_ps ? completion - at_ps : 0; }
};

/// "allreduce,bytes=1MiB,dtype=bf16,group=local+vertical,root=3,at=10us"; the
/// defaults come from the single-collective options.
Spec parse_spec(const std::string& text, const systems::RunOptions& opt) {
  Spec s;
  s.text = text;
  s.bytes = opt.bytes;
  s.dtype = opt.dtype;
  std::stringstream ss(text);
  std::string item;
  bool first = true;
  while (std::getline(ss, item, ',')) {
    if (first) {
      if (!npu::parse_collective(item, s.kind))
        throw core::ConfigError(fmt::format(
            "--collective '{}': unknown collective '{}' (allreduce, reducescatter, allgather, alltoall, broadcast)",
            text, item));
      first = false;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      throw core::ConfigError(fmt::format("--collective '{}': expected key=value, got '{}'", text, item));
    if (key == "bytes") {
      s.bytes = core::parse_bytes(value, "--collective " + text + ": bytes");
    } else if (key == "dtype") {
      if (!core::parse_dtype(value, s.dtype))
        throw core::ConfigError(fmt::format("--collective '{}': dtype '{}' (fp32, bf16, fp16, int32)", text, value));
    } else if (key == "group") {
      s.group = value;
    } else if (key == "root") {
      char* end = nullptr;
      const unsigned long v = std::strtoul(value.c_str(), &end, 10);
      if (!end || *end || value[0] == '-')
        throw core::ConfigError(fmt::format("--collective '{}': root '{}' is not a rank", text, value));
      s.root = static_cast<uint32_t>(v);
    } else if (key == "at") {
      s.at_ps = core::parse_time_ps(value, "--collective " + text + ": at");
    } else {
      throw core::ConfigError(
          fmt::format("--collective '{}': unknown key '{}' (bytes, dtype, group, root, at)", text, key));
    }
  }
  if (first) throw core::ConfigError("--collective '': expected a collective");
  return s;
}

/// run.* — what a torus run adds to the manifest.
struct RunStats {
  core::Value<uint64_t> npus{nullptr, "run", "npus", "NPUs", "NPUs in the platform"};
  core::Value<double> rtl_eval_s{nullptr, "run", "rtl_eval_s", "s", "host time spent evaluating the RTL datapaths"};
};

/// workload.* — the traffic of the run (every collective together).
struct TrafficStats {
  core::Value<uint64_t> network_bytes{nullptr, "workload", "network_bytes", "bytes",
                                      "payload bytes all NPUs sent on links"};
  core::Value<uint64_t> memory_bytes{nullptr, "workload", "npu_memory_bytes", "bytes",
                                     "NPU-memory bytes moved for communication, all NPUs"};
  core::Value<double> mem_per_net{nullptr, "workload", "memory_bytes_per_network_byte", "bytes/byte",
                                  "npu_memory_bytes / network_bytes"};
  core::Value<double> link_util{nullptr, "workload", "link_utilization", "%",
                                "busy share of the completion time, mean over the link directions in use"};
  core::Value<double> link_util_local{nullptr, "workload", "link_utilization_local", "%",
                                      "the same, local (intra-package) link directions"};
  core::Value<double> link_util_inter{nullptr, "workload", "link_utilization_inter", "%",
                                      "the same, vertical and horizontal (inter-package) link directions"};
  core::Value<double> net_GBps{nullptr, "workload", "network_GBps_per_npu", "GB/s",
                               "payload bytes one NPU sent per second of completion time (mean)"};
  core::Value<double> mem_GBps{nullptr, "workload", "memory_GBps_per_npu", "GB/s",
                               "communication memory bytes per NPU per second of completion time (mean)"};
  core::Value<std::string> engine{nullptr, "workload", "engine", "", "ace.model: tlm, rtl or none (NPU cores)"};
  core::Value<std::string> algorithm{nullptr, "workload", "algorithm", "", "enhanced (4 phases) or baseline (3)"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "every NPU's result bit-exact"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "elements that differ from the reference, over all NPUs"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "completion: the last NPU's last result byte in its memory"};
};

/// workload.* (one collective) or workload.c<i>.* (several): one collective.
struct CollectiveStats {
  CollectiveStats(const char* g)
      : kind{nullptr, g, "kind", "", "collective"},
        bytes{nullptr, g, "bytes", "bytes", "all-reduce buffer per NPU"},
        dtype{nullptr, g, "dtype", "", "element type"},
        phases{nullptr, g, "phases", "", "the algorithm's phases in order"},
        chunks{nullptr, g, "chunks", "chunks", "chunks the buffer is split into"},
        chunk_bytes{nullptr, g, "chunk_bytes", "bytes", "chunk size"},
        algbw{nullptr, g, "algbw_GBps", "GB/s", "bytes / completion"},
        busbw{nullptr, g, "busbw_GBps", "GB/s", "algbw x bus_factor"},
        bus_factor{nullptr, g, "bus_factor", "", "2(n-1)/n"},
        ranks{nullptr, g, "ranks", "NPUs", "NPUs in the all-reduce"} {}
  core::Value<std::string> kind;
  core::Value<uint64_t> bytes;
  core::Value<std::string> dtype;
  core::Value<std::string> phases;
  core::Value<uint64_t> chunks, chunk_bytes;
  core::Value<double> algbw, busbw, bus_factor;
  core::Value<uint64_t> ranks;
};

class TorusScenario final : public systems::Scenario {
 public:
  TorusScenario() : m_sys(std::make_unique<System>("sys")) {}

  std::string headline() const override {
    const auto& s = m_sys->shape;
    return fmt::format("{} NPUs, {}x{}x{} torus, {} links", m_sys->npus.size(), s.size[0], s.size[1], s.size[2],
                       m_sys->links.size());
  }
  std::string description() const override { return m_sys->description.get(); }
  uint64_t links() const override { return m_sys->links.size(); }

  void prepare(const systems::RunOptions& opt) override {
    if (!opt.programs_dir.empty()) throw core::ConfigError("--programs: torus platforms have no TSP programs");
    if (opt.collectives.empty()) {
      CollectiveKind k;
      if (!npu::parse_collective(opt.workload, k))
        throw core::ConfigError(fmt::format(
            "--workload '{}': torus platforms run allreduce, reducescatter, allgather, alltoall or broadcast",
            opt.workload));
      Spec s = parse_spec(opt.workload, opt);
      s.group = opt.group;
      s.root = opt.root;
      m_specs.push_back(std::move(s));
      m_single = true;
    } else {
      for (const std::string& t : opt.collectives) m_specs.push_back(parse_spec(t, opt));
    }
    collectives::PlanOptions po;
    po.algorithm = m_sys->choices.algorithm.get();
    po.chunk_bytes = uint64_t(m_sys->choices.chunk_kib.get()) * 1024;
    po.align = m_sys->choices.align_elems.get();
    uint64_t address = 0;
    for (size_t i = 0; i < m_specs.size(); ++i) {
      Spec& s = m_specs[i];
      const std::string what = m_single ? "--bytes" : "--collective " + s.text;
      const uint32_t es = core::dtype_bytes(s.dtype);
      if (s.bytes == 0 || s.bytes % es != 0)
        throw core::ConfigError(fmt::format("{}: a {} of {} needs a positive multiple of {} bytes", what,
                                            npu::collective_name(s.kind), core::dtype_name(s.dtype), es));
      s.elems = s.bytes / es;
      s.dims = Communicator::parse_dims(s.group);
      s.comms = Communicator::partition(m_sys->shape, s.dims);
      if (s.kind == CollectiveKind::broadcast && s.root >= s.comms[0].size())
        throw core::ConfigError(fmt::format("{}: root {} is not a rank of a {}-member communicator",
                                            m_single ? "--root" : what, s.root, s.comms[0].size()));
      s.address = address;
      address += (s.bytes + 4095) / 4096 * 4096;  // every collective its own buffer, page aligned
      for (const Communicator& c : s.comms) {
        std::vector<std::shared_ptr<const npu::CollectivePlan>> plans;
        for (uint32_t r = 0; r < c.size(); ++r)
          plans.push_back(collectives::make_plan(c, s.kind, s.dtype, s.elems, s.root, po, c.npu_of(r)));
        s.plans.push_back(std::move(plans));
      }
      s.handles.resize(s.comms.size());
    }
  }

  void load() override {
    for (size_t i = 0; i < m_specs.size(); ++i) {
      Spec& s = m_specs[i];
      for (size_t c = 0; c < s.comms.size(); ++c)
        for (uint32_t r = 0; r < s.comms[c].size(); ++r) {
          npu::Npu& n = *m_sys->npus[s.comms[c].npu_of(r)];
          core::random_elements(s.dtype, seed(i, n), n.memory.at(s.address, s.bytes), s.bytes, 0, s.size());
        }
      if (s.at_ps == 0)
        submit(s);
      else
        m_sys->launcher.at(s.at_ps, [this, &s] { submit(s); });
    }
  }

  void finish() override {
    const bool hw_ok = core::Context::get().hw_errors().empty();
    uint64_t end = 0;
    for (Spec& s : m_specs) {
      for (size_t c = 0; c < s.comms.size(); ++c)
        for (uint32_t r = 0; r < s.comms[c].size(); ++r) {
          const npu::CollectiveHandle& h = s.handles[c][r];
          if (hw_ok && (!h || !h->done)) {
            const npu::Npu& n = *m_sys->npus[s.comms[c].npu_of(r)];
            throw std::logic_error(fmt::format("{}: the simulation ended with collectives unfinished (a deadlock): {}",
                                               n.name(), n.progress()));
          }
          if (h && h->done) s.completion = std::max(s.completion, h->completion_ps);
        }
      end = std::max(end, s.completion);
    }
    m_completion = end;
    m_end = hw_ok ? end : sc_core::sc_time_stamp().value();
    core::set_stats_end(m_end);
    for (ace::Ace* a : m_sys->aces) a->set_end(m_end);
  }

  systems::Outcome check() override {
    for (size_t i = 0; i < m_specs.size(); ++i) check_spec(i, m_specs[i]);
    systems::Outcome out;
    out.checked = true;
    out.verified = true;
    for (const Spec& s : m_specs) out.verified &= s.mismatched == 0;
    return out;
  }

  void report(const systems::Outcome& out) override {
    double rtl_s = 0;
    for (ace::Ace* a : m_sys->aces) rtl_s += a->datapath_host_seconds();
    m_rtl_s = rtl_s;
    m_run.emplace();
    m_run->npus.set(m_sys->npus.size());
    m_run->rtl_eval_s.set(rtl_s);

    const uint32_t n = static_cast<uint32_t>(m_sys->npus.size());
    for (const auto& np : m_sys->npus) m_mem += np->memory.comm_bytes();
    for (const auto& l : m_sys->links) m_net += l->a_to_b.payload_bytes.get() + l->b_to_a.payload_bytes.get();
    for (size_t k = 0; k < m_sys->links.size(); ++k) {
      const npu::FabricLink& l = *m_sys->links[k];
      for (const npu::LinkChannel* ch : {&l.a_to_b, &l.b_to_a}) {
        if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;  // a direction no ring uses
        m_util_sum[m_sys->link_dim[k]] += ch->utilization_pct();
        ++m_util_n[m_sys->link_dim[k]];
      }
    }
    const uint64_t t = m_completion;
    m_traffic.emplace();
    TrafficStats& ts = *m_traffic;
    ts.network_bytes.set(m_net);
    ts.memory_bytes.set(m_mem);
    ts.mem_per_net.set(m_net ? static_cast<double>(m_mem) / static_cast<double>(m_net) : 0.0);
    ts.link_util.set(mean_util({0, 1, 2}));
    ts.link_util_local.set(mean_util({0}));
    ts.link_util_inter.set(mean_util({1, 2}));
    ts.net_GBps.set(t ? static_cast<double>(m_net) / n / (t * 1e-12) / 1e9 : 0.0);
    ts.mem_GBps.set(t ? static_cast<double>(m_mem) / n / (t * 1e-12) / 1e9 : 0.0);
    ts.engine.set(m_sys->choices.ace_model.get());
    ts.algorithm.set(m_sys->choices.algorithm.get());
    ts.verified.set(out.checked && out.verified);
    uint64_t mismatched = 0;
    for (const Spec& s : m_specs) mismatched += s.mismatched;
    ts.mismatched.set(mismatched);
    ts.simulated_ps.set(m_completion);
    if (!m_single) {
      m_count.emplace(nullptr, "workload", "collectives", "collectives",
                      "collectives issued (each on every "
                      "communicator of its group)");
      m_count->set(m_specs.size());
    }
    for (size_t i = 0; i < m_specs.size(); ++i) {
      const Spec& s = m_specs[i];
      m_groups.push_back(m_single ? "workload" : fmt::format("workload.c{}", i));
      auto cs = std::make_unique<CollectiveStats>(m_groups.back().c_str());
      const double algbw = s.duration() ? static_cast<double>(s.bytes) / (s.duration() * 1e-12) / 1e9 : 0.0;
      const double bf = collectives::bus_factor(s.kind, s.size());
      cs->kind.set(npu::collective_name(s.kind));
      cs->bytes.set(s.bytes);
      cs->dtype.set(core::dtype_name(s.dtype));
      cs->phases.set(s.plan0().describe());
      cs->chunks.set(s.plan0().chunks());
      cs->chunk_bytes.set(s.plan0().chunk_capacity() * s.plan0().esize());
      cs->algbw.set(algbw);
      cs->busbw.set(algbw * bf);
      cs->bus_factor.set(bf);
      cs->ranks.set(s.size());
      m_stats.push_back(std::move(cs));
      // What a single default collective does not need to say.
      const char* g = m_groups.back().c_str();
      if (s.group != "all" || !m_single) {
        m_extra_str.emplace_back(nullptr, g, "group", "", "communicator dimensions");
        m_extra_str.back().set(s.group);
        m_extra_num.emplace_back(nullptr, g, "communicators", "communicators", "communicators the collective ran on");
        m_extra_num.back().set(s.comms.size());
      }
      if (s.kind == CollectiveKind::broadcast) {
        m_extra_num.emplace_back(nullptr, g, "root", "", "broadcast root (rank in its communicator)");
        m_extra_num.back().set(s.root);
      }
      if (!m_single) {
        m_extra_num.emplace_back(nullptr, g, "start_ps", "ps", "time the collective was submitted");
        m_extra_num.back().set(s.at_ps);
        m_extra_num.emplace_back(nullptr, g, "simulated_ps", "ps", "completion at its last member");
        m_extra_num.back().set(s.completion);
        m_extra_num.emplace_back(nullptr, g, "mismatched_elements", "elements", "elements that differ");
        m_extra_num.back().set(s.mismatched);
        m_extra_bool.emplace_back(nullptr, g, "verified", "", "every member's result bit-exact");
        m_extra_bool.back().set(s.mismatched == 0 && out.checked);
      }
    }
  }

  void summarize(const systems::Outcome& out, systems::Summary& sum) override {
    const core::Context& ctx = core::Context::get();
    const bool hw_ok = ctx.hw_errors().empty();
    const std::string engine = m_sys->choices.ace_model.get();
    for (size_t i = 0; i < m_specs.size(); ++i) {
      const Spec& s = m_specs[i];
      const npu::CollectivePlan& p = s.plan0();
      std::string on = s.group == "all" && s.comms.size() == 1
                           ? ""
                           : fmt::format(" on {} ({} communicator{} of {} NPUs)", s.group, s.comms.size(),
                                         s.comms.size() == 1 ? "" : "s", s.size());
      if (s.kind == CollectiveKind::broadcast) on += fmt::format(", root rank {}", s.root);
      if (s.at_ps) on += fmt::format(", from {}", human_time(s.at_ps));
      sum.line(
          m_single ? "workload" : fmt::format("c{}", i),
          fmt::format("{} {} {} ({} bytes){}, {}({}), {} chunks of {}", npu::collective_name(s.kind),
                      human_bytes(s.bytes), core::dtype_name(s.dtype), s.bytes, on,
                      s.kind == CollectiveKind::allreduce ? fmt::format("{} algorithm ", m_sys->choices.algorithm.get())
                                                          : std::string(),
                      p.describe(), p.chunks(), human_bytes(p.chunk_capacity() * p.esize())));
    }
    if (engine == "none") {
      const npu::Npu& n0 = *m_sys->npus[0];
      sum.line("engine", fmt::format("ace.model=none: NPU cores reduce through memory ({} of {} SMs, {:.0f}% of {:.0f} "
                                     "GB/s memory for communication)",
                                     n0.compute.comm_sms.get(), n0.compute.sms.get(),
                                     100.0 * n0.memory.comm_share.get(), n0.memory.GBps.get()));
    } else {
      const ace::Ace& a = *m_sys->aces[0];
      sum.line("engine",
               fmt::format("ace.model={}: ACE with {} KiB SRAM ({} chunk slots), {} FSMs, {} x {}-lane "
                           "datapaths at {:.0f} MHz ({} {} slices)",
                           engine, a.sram_kib.get(), a.slots.get(), a.fsms.get(), a.alu_units.get(), a.alu_lanes.get(),
                           a.clock_mhz.get(), a.slices(), engine == "rtl" ? "verilated RTL" : "C++ datapath"));
    }
    if (!hw_ok) {
      sum.line("result", fmt::format("FAILED: {} hardware error(s); first: {}: {}", ctx.hw_errors().size(),
                                     ctx.hw_errors()[0].where, ctx.hw_errors()[0].message));
    } else {
      uint32_t ok = 0, all = 0;
      uint64_t bad = 0;
      for (const Spec& s : m_specs) {
        ok += s.members_ok;
        all += s.members;
        bad += s.mismatched;
      }
      if (out.verified)
        sum.line("result", fmt::format("verified: {}/{} {} bit-exact against the host reference", ok, all,
                                       m_single ? "NPUs" : "member results"));
      else
        sum.line("result", fmt::format("MISMATCH: {} element(s) differ on {} {}", bad, all - ok,
                                       m_single ? "NPU(s)" : "member result(s)"));
      for (const Spec& s : m_specs)
        for (const Spec::Bad& b : s.first)
          sum.text(fmt::format("               {} byte {}: expected {} got {}", m_sys->npus[b.npu]->name(), b.byte,
                               b.expected, b.got));
    }
    for (size_t i = 0; i < m_specs.size(); ++i) {
      const Spec& s = m_specs[i];
      const double algbw = s.duration() ? static_cast<double>(s.bytes) / (s.duration() * 1e-12) / 1e9 : 0.0;
      const double bf = collectives::bus_factor(s.kind, s.size());
      if (m_single) {
        sum.line("completion", fmt::format("simulated {} ({} ps)", human_time(s.completion), s.completion));
        sum.line("bandwidth",
                 fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s (bus factor {:.4f})", algbw, algbw * bf, bf));
      } else {
        sum.line(fmt::format("c{}", i),
                 fmt::format("{}: completed at {} ({} after its start), algbw {:.2f} GB/s, busbw {:.2f} GB/s",
                             s.mismatched ? "MISMATCH" : "verified", human_time(s.completion), human_time(s.duration()),
                             algbw, algbw * bf));
      }
    }
    const TrafficStats& ts = *m_traffic;
    sum.line("memory", fmt::format("{:.3f} NPU-memory bytes per network byte ({} memory, {} network bytes; {:.1f} GB/s "
                                   "memory and {:.1f} GB/s network per NPU)",
                                   ts.mem_per_net.get(), m_mem, m_net, ts.mem_GBps.get(), ts.net_GBps.get()));
    if (!m_sys->aces.empty()) {
      double sram_peak = 0, sram_mean = 0, fsm = 0, alu = 0, port = 0;
      for (ace::Ace* a : m_sys->aces) {
        sram_peak = std::max<double>(sram_peak, static_cast<double>(a->peak_sram_bytes.get()));
        sram_mean += a->mean_sram_bytes.value().get<double>();
        fsm += a->fsm_mean_utilization.value().get<double>();
        alu += a->alu_utilization.value().get<double>();
        port += a->sram_port_utilization.value().get<double>();
      }
      const double k = static_cast<double>(m_sys->aces.size());
      sum.line("ace",
               fmt::format("SRAM peak {} KiB, mean {:.1f} KiB; SRAM port {:.1f}% busy; FSM utilization {:.1f}%; "
                           "ALU utilization {:.1f}% (means over NPUs)",
                           static_cast<uint64_t>(sram_peak) / 1024, sram_mean / k / 1024, port / k, fsm / k, alu / k));
    }
  }

  void tables(systems::Summary& sum) override {
    sum.text(fmt::format("\n  {:<12} {:>6} {:>12} {:>10} {:>10} {:>10}   (busy share of {} simulated)", "links", "dirs",
                         "payload GB/s", "mean", "min", "max", human_time(m_end)));
    for (uint32_t d = 0; d < 3; ++d) {
      double lo = 100, hi = 0, rate = 0;
      for (size_t k = 0; k < m_sys->links.size(); ++k) {
        if (m_sys->link_dim[k] != d) continue;
        rate = m_sys->links[k]->payload_GBps();
        for (const npu::LinkChannel* ch : {&m_sys->links[k]->a_to_b, &m_sys->links[k]->b_to_a}) {
          if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;
          const double u = ch->utilization_pct();
          lo = std::min(lo, u);
          hi = std::max(hi, u);
        }
      }
      if (m_util_n[d] == 0) continue;
      sum.text(fmt::format("  {:<12} {:>6} {:>12.2f} {:>9.1f}% {:>9.1f}% {:>9.1f}%", collectives::dim_name(d),
                           m_util_n[d], rate, m_util_sum[d] / m_util_n[d], lo, hi));
    }
    sum.text(fmt::format("  {:<12} {:>6} {:>12} {:>9.1f}%", "all", m_util_n[0] + m_util_n[1] + m_util_n[2], "",
                         mean_util({0, 1, 2})));
  }

  std::string host_detail() const override {
    return m_sys->choices.ace_model.get() == "rtl" ? fmt::format(" of which RTL {:.2f}", m_rtl_s) : std::string();
  }

  int topology(const std::string& platform, uint32_t, const std::string& json_out) override {
    const System& sys = *m_sys;
    fmt::print("fabricvp topology  {}\n  {} NPUs: {} local x {} vertical x {} horizontal\n", platform, sys.npus.size(),
               sys.local_npus.get(), sys.vertical_npus.get(), sys.horizontal_npus.get());
    nlohmann::json j = {{"platform", platform}, {"npus", sys.npus.size()}, {"links", sys.links.size()}};
    for (uint32_t d = 0; d < 3; ++d) {
      uint32_t count = 0;
      const npu::FabricLink* example = nullptr;
      for (size_t i = 0; i < sys.links.size(); ++i)
        if (sys.link_dim[i] == d) {
          ++count;
          if (!example) example = sys.links[i].get();
        }
      j["links_per_dimension"][collectives::dim_name(d)] = count;
      if (!example) continue;
      fmt::print("  {:<10} {:>4} links, {:.1f} GB/s x {:.2f} efficiency, {} cycles at {:.0f} MHz (e.g. {})\n",
                 collectives::dim_name(d), count, example->GBps.get(), example->efficiency.get(),
                 example->latency_cycles.get(), example->clock_mhz.get(), example->name());
    }
    if (!json_out.empty()) {
      std::ofstream f(json_out);
      if (!f) throw core::ConfigError(fmt::format("{}: cannot write", json_out));
      f << j.dump(1) << "\n";
    }
    return 0;
  }

 private:
  uint64_t seed(size_t spec, const npu::Npu& n) const {
    return n.seed_for(spec == 0 ? std::string("workload_input") : fmt::format("workload_input/c{}", spec));
  }

  void submit(Spec& s) {
    for (size_t c = 0; c < s.comms.size(); ++c)
      for (uint32_t r = 0; r < s.comms[c].size(); ++r)
        s.handles[c].push_back(m_sys->npus[s.comms[c].npu_of(r)]->submit(
            npu::CollectiveRequest{s.plans[c][r], s.address, s.comms[c].id()}));
  }

  void check_spec(size_t index, Spec& s) {
    const uint32_t es = core::dtype_bytes(s.dtype);
    std::vector<uint8_t> got;
    for (size_t c = 0; c < s.comms.size(); ++c) {
      const Communicator& comm = s.comms[c];
      std::vector<std::vector<uint8_t>> want(comm.size());
      for (uint32_t r = 0; r < comm.size(); ++r) {
        want[r].resize(s.bytes);
        core::random_elements(s.dtype, seed(index, *m_sys->npus[comm.npu_of(r)]), want[r].data(), s.bytes, 0, s.size());
      }
      // Reductions: the algorithm's order of additions; the rest in closed form.
      if (!collectives::expected(s.kind, s.root, want)) collectives::run_reference(s.plans[c], want);
      for (uint32_t r = 0; r < comm.size(); ++r) {
        const uint32_t id = comm.npu_of(r);
        bool ok = true;
        for (const auto& [a, b] : collectives::output_elements(s.kind, s.elems, comm.size(), r).ranges) {
          const uint64_t len = (b - a) * es;
          got.resize(len);
          m_sys->npus[id]->memory.read(s.address + a * es, got.data(), len);
          const uint8_t* w = want[r].data() + a * es;
          if (std::memcmp(got.data(), w, len) == 0) continue;
          for (uint64_t k = 0; k < b - a; ++k)
            if (std::memcmp(got.data() + k * es, w + k * es, es) != 0) {
              ++s.mismatched;
              ok = false;
              if (s.first.size() < 5)
                s.first.push_back(Spec::Bad{id, (a + k) * es, core::element_value(s.dtype, w + k * es),
                                            core::element_value(s.dtype, got.data() + k * es)});
            }
        }
        ++s.members;
        s.members_ok += ok;
      }
    }
  }

  double mean_util(std::initializer_list<uint32_t> dims) const {
    double s = 0;
    uint32_t c = 0;
    for (uint32_t d : dims) {
      s += m_util_sum[d];
      c += m_util_n[d];
    }
    return c ? s / c : 0.0;
  }

  std::unique_ptr<System> m_sys;
  std::vector<Spec> m_specs;
  bool m_single = false;
  uint64_t m_completion = 0, m_end = 0;
  uint64_t m_net = 0, m_mem = 0;
  double m_util_sum[3] = {0, 0, 0};
  uint32_t m_util_n[3] = {0, 0, 0};
  double m_rtl_s = 0;
  std::optional<RunStats> m_run;
  std::optional<TrafficStats> m_traffic;
  std::optional<core::Value<uint64_t>> m_count;
  std::deque<std::string> m_groups;  // stat group names (the statistics keep pointers to them)
  std::vector<std::unique_ptr<CollectiveStats>> m_stats;
  std::deque<core::Value<std::string>> m_extra_str;
  std::deque<core::Value<uint64_t>> m_extra_num;
  std::deque<core::Value<bool>> m_extra_bool;
};

const bool registered = systems::register_kind(
    systems::Kind{"torus",
                  "NPUs on a hierarchical torus, collectives by the ACE or the NPU cores (seeds 001, 002)",
                  {"torus"},
                  false,
                  [](const systems::RunOptions&) -> std::unique_ptr<systems::Scenario> {
                    return std::make_unique<TorusScenario>();
                  }});

}  // namespace

}  // namespace fabricvp::torus
