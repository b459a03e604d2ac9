#include "systems/npu/scenario.h"

#include <algorithm>
#include <cstring>

#include <filesystem>
#include <set>

#include "models/core/context.h"
#include "models/core/units.h"

namespace fabricvp::npusys {

NpuScenario::NpuScenario() : m_sys(std::make_unique<System>("sys")) {}

void NpuScenario::prepare(const systems::RunOptions& opt) {
  if (!opt.programs_dir.empty()) throw core::ConfigError("--programs: NPU platforms have no TSP programs");
  m_out_dir = opt.out_dir;
  m_timing_only = opt.kind_options.count("timing-only") > 0;
  opt.refuse("dst", "NPU platforms run collectives, not p2p transfers (no destination)");
  if (!opt.collectives.empty()) {
    opt.refuse("workload", "give the collectives with --collective or one with --workload, not both");
    opt.refuse("src", "give each --collective its root=R");
    opt.refuse("group", "give each --collective its group=DIMS");
  }
  CollectiveKind probe;
  if (opt.collectives.empty() && !npu::parse_collective(opt.workload, probe) &&
      (std::filesystem::exists(opt.workload) || opt.workload.find('.') != std::string::npos)) {
    uint32_t iterations = 1;
    if (auto it = opt.kind_options.find("iterations"); it != opt.kind_options.end()) {
      const std::string& v = it->second;
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || !end || *end || v[0] == '-' || n == 0 || n > 1000000)
        throw core::ConfigError(fmt::format("--iterations '{}': a positive number of iterations", v));
      iterations = static_cast<uint32_t>(n);
    }
    if (m_timing_only)
      throw core::ConfigError(
          "--timing-only: a training workload moves no payload already (--data moves and checks it)");
    opt.refuse("bytes", "a training workload's collective sizes come from its file");
    opt.refuse("src", "a training workload's collectives have no root to choose");
    opt.refuse("group", "a training workload's parallelism decides the groups of its collectives");
    m_train = std::make_unique<TrainingRun>(*m_sys, opt.workload, iterations, opt.reduction_dtype(),
                                            opt.kind_options.count("data") > 0);
    if (m_sys->plans_circuits()) {
      std::vector<optical::Demand> demand;
      m_train->optical_demand(demand);
      m_sys->configure_optical(demand);
    }
    return;
  }
  if (opt.kind_options.count("data"))
    throw core::ConfigError("--data: a single collective moves and checks data already (--timing-only moves none)");
  if (opt.kind_options.count("iterations"))
    throw core::ConfigError("--iterations: only a training workload (--workload FILE) has iterations");
  if (opt.collectives.empty()) {
    CollectiveKind k;
    if (!npu::parse_collective(opt.workload, k))
      throw core::ConfigError(
          fmt::format("--workload '{}': NPU platforms run allreduce, reducescatter, allgather, alltoall or broadcast",
                      opt.workload));
    if (k != CollectiveKind::broadcast)
      opt.refuse("src", fmt::format("only a broadcast has a root (--workload {})", opt.workload));
    Spec s = parse_spec(opt.workload, opt);
    s.group = opt.group;
    s.root = opt.root;
    m_specs.push_back(std::move(s));
    m_single = true;
  } else {
    for (const std::string& t : opt.collectives) m_specs.push_back(parse_spec(t, opt));
  }
  uint64_t address = 0;
  for (size_t i = 0; i < m_specs.size(); ++i) {
    Spec& s = m_specs[i];
    const std::string what = m_single ? "--bytes" : "--collective " + s.text;
    const uint32_t es = core::dtype_bytes(s.dtype);
    if (s.bytes == 0 || s.bytes % es != 0)
      throw core::ConfigError(fmt::format("{}: a {} of {} needs a positive multiple of {} bytes", what,
                                          npu::collective_name(s.kind), core::dtype_name(s.dtype), es));
    s.elems = s.bytes / es;
    s.dims = m_sys->parse_group(s.group);
    s.comms = m_sys->partition(s.dims);
    if (s.kind == CollectiveKind::broadcast && s.root >= s.comms[0].size())
      throw core::ConfigError(fmt::format("{}: root {} is not a rank of a {}-member communicator",
                                          m_single ? "--root" : what, s.root, s.comms[0].size()));
    s.address = address;
    address += (s.bytes + 4095) / 4096 * 4096;  // every collective its own buffer, page aligned
    const uint64_t capacity = m_sys->npus[0]->memory.size_mib.get() << 20;
    if (address > capacity)
      throw core::ConfigError(
          fmt::format("{}: {} of buffers{} do not fit an NPU's memory of {} (sys.npu*.memory.size_mib)", what,
                      core::human_bytes(address), m_specs.size() > 1 ? " for the collectives so far" : "",
                      core::human_bytes(capacity)));
    for (const Group& c : s.comms) s.plans.push_back(m_sys->plans(c, s.kind, s.dtype, s.elems, s.root));
    s.handles.resize(s.comms.size());
  }
  // Optical planes: one-shot circuits for every collective of the run.
  if (m_sys->plans_circuits()) {
    std::vector<optical::Demand> demand;
    for (const Spec& s : m_specs)
      for (size_t k = 0; k < s.comms.size(); ++k) m_sys->optical_demand(s.comms[k], s.plans[k], 1, demand);
    m_sys->configure_optical(demand);
  }
}

// The host memory a run holds at its peak, measured (docs/reliability.md):
// every NPU memory up to the end of its last buffer; about half as much again
// in messages and partial sums in flight; and, while a communicator is
// checked, a reference copy of every member's buffer.
uint64_t NpuScenario::host_bytes(std::string& what) const {
  constexpr double kInFlight = 0.5;
  if (m_train) {
    if (!m_train->data() || m_train->is_graph()) return 0;
    // At least the largest collective at once (measured: collectives rarely
    // overlap in memory, freed buffers are reused): a lower bound.
    uint64_t largest = 0;
    for (const training::Layer& l : m_train->workload().layers)
      for (const training::Pass& p : l.pass) largest = std::max(largest, p.bytes);
    const uint64_t n = m_sys->npus.size();
    what = fmt::format("{} NPU memories holding at least the largest collective, {}, and data in flight", n,
                       core::approx_bytes(largest));
    return static_cast<uint64_t>(static_cast<double>(largest * n) * (1 + kInFlight));
  }
  if (m_timing_only) return 0;
  std::vector<uint64_t> end(m_sys->npus.size(), 0);
  uint64_t reference = 0;  // the check holds one chunk of every member (collectives::check_collective)
  for (const Spec& s : m_specs)
    for (size_t k = 0; k < s.comms.size(); ++k) {
      const Group& c = s.comms[k];
      for (uint32_t id : c.npus) end[id] = std::max(end[id], s.address + s.bytes);
      const uint64_t chunk = s.plans[k].empty() ? s.bytes : s.plans[k][0]->chunk_capacity() * s.plans[k][0]->esize();
      reference = std::max(reference, static_cast<uint64_t>(c.size()) * std::min(chunk, s.bytes));
    }
  uint64_t memories = 0, used = 0;
  for (uint64_t e : end) memories += e, used += e > 0;
  what = fmt::format("{} NPU memories of up to {}, data in flight and a {} reference for the check", used,
                     core::approx_bytes(memories / std::max<uint64_t>(used, 1)), core::approx_bytes(reference));
  return static_cast<uint64_t>(static_cast<double>(memories) * (1 + kInFlight)) + reference;
}

void NpuScenario::load() {
  if (m_train) {
    m_train->start();
    return;
  }
  for (size_t i = 0; i < m_specs.size(); ++i) {
    Spec& s = m_specs[i];
    for (size_t c = 0; c < s.comms.size(); ++c)
      for (uint32_t r = 0; r < s.comms[c].size(); ++r) {
        npu::Npu& n = *m_sys->npus[s.comms[c].npus[r]];
        if (!m_timing_only)
          core::random_elements(s.dtype, seed(i, n), n.memory.at(s.address, s.bytes), s.bytes, 0, s.size());
      }
    if (s.at_ps == 0)
      submit(s);
    else
      m_sys->actions.at(s.at_ps, [this, &s] { submit(s); });
  }
}

void NpuScenario::finish() {
  const bool hw_ok = core::Context::get().hw_errors().empty();
  if (m_train) {
    if (hw_ok) m_train->finish();
    uint64_t end = 0;
    for (uint32_t n = 0; n < m_sys->npus.size(); ++n) end = std::max(end, m_train->times(n).end);
    m_completion = end;
    m_end = hw_ok ? end : sc_core::sc_time_stamp().value();
    core::set_stats_end(m_end);
    return;
  }
  uint64_t end = 0;
  for (Spec& s : m_specs) {
    for (size_t c = 0; c < s.comms.size(); ++c)
      for (uint32_t r = 0; r < s.comms[c].size(); ++r) {
        const npu::CollectiveHandle& h = s.handles[c][r];
        if (hw_ok && (!h || !h->done)) {
          const npu::Npu& n = *m_sys->npus[s.comms[c].npus[r]];
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

systems::Outcome NpuScenario::check() {
  if (m_train && m_train->data()) {
    systems::Outcome out;
    out.checked = true;
    out.verified = m_train->mismatched() == 0;
    return out;
  }
  if (m_train || m_timing_only) return systems::Outcome{};  // timing only: no data to compare
  for (size_t i = 0; i < m_specs.size(); ++i) check_spec(i, m_specs[i]);
  systems::Outcome out;
  out.checked = true;
  out.verified = true;
  for (const Spec& s : m_specs) out.verified &= s.mismatched == 0;
  return out;
}

uint64_t NpuScenario::seed(size_t spec, const npu::Npu& n) const {
  return n.seed_for(spec == 0 ? std::string("workload_input") : fmt::format("workload_input/c{}", spec));
}

void NpuScenario::submit(Spec& s) {
  for (size_t c = 0; c < s.comms.size(); ++c)
    for (uint32_t r = 0; r < s.comms[c].size(); ++r)
      s.handles[c].push_back(m_sys->npus[s.comms[c].npus[r]]->submit(
          npu::CollectiveRequest{s.plans[c][r], s.address, s.comms[c].id, m_timing_only}));
}

void NpuScenario::check_spec(size_t index, Spec& s) {
  for (size_t c = 0; c < s.comms.size(); ++c) {
    const Group& comm = s.comms[c];
    std::set<uint32_t> wrong;  // members with a wrong element
    s.mismatched += m_sys->check(
        comm, s.plans[c], s.root, s.address,
        [&](uint32_t npu, uint64_t offset, uint64_t bytes, uint8_t* dst) {
          core::random_elements(s.dtype, seed(index, *m_sys->npus[npu]), dst, bytes, offset, s.size());
        },
        [&](uint32_t npu, uint64_t offset, const uint8_t* want, const uint8_t* got) {
          wrong.insert(npu);
          if (s.first.size() < 5)
            s.first.push_back(
                Spec::Bad{npu, offset, core::element_value(s.dtype, want), core::element_value(s.dtype, got)});
        });
    s.members += comm.size();
    s.members_ok += comm.size() - static_cast<uint32_t>(wrong.size());
  }
}

namespace {

const bool kind_registered = systems::register_kind(systems::Kind{
    "npu",
    "NPU fabrics: seed 001's torus with the ACE or the NPU cores, N-dimensional Ring/FullyConnected/Switch fabrics "
    "(seeds 001, 002)",
    {"torus", "ndim"},
    false,
    [](const systems::RunOptions&) -> std::unique_ptr<systems::Scenario> { return std::make_unique<NpuScenario>(); },
    {"iterations", "timing-only", "data"}});

}  // namespace

}  // namespace fabricvp::npusys
