#include "systems/groq/scenario.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string>

#include "models/core/config.h"
#include "models/core/context.h"
#include "models/core/units.h"
#include "systems/groq/machine.h"

namespace fabricvp::groq {

GroqScenario::GroqScenario() : m_params(std::make_unique<CompilerParams>()), m_sys(std::make_unique<System>("sys")) {}

void GroqScenario::prepare(const systems::RunOptions& opt) {
  m_opt = opt;
  if (!opt.collectives.empty())
    throw core::ConfigError(
        "--collective: a Groq system runs one compiled collective at a time (use --workload, --bytes, --dtype)");
  if (opt.group != "all")
    throw core::ConfigError("--group: the Groq compiler schedules collectives over every rank of the job");
  m_machine = machine_of(*m_sys);
  if (opt.programs_dir.empty())
    m_compute = make_compute(opt.workload, ComputeWorkload::Env{*m_sys, m_machine, *m_params});
  m_collective = opt.programs_dir.empty() && !m_compute;
  // A compute workload's options on any other run are refused, naming what they describe.
  std::set<std::string> taken;
  for (const auto& [name, o] : compute_options())
    if (m_compute && name == opt.workload) taken.insert(o.name);
  for (const auto& [name, o] : compute_options())
    if (!taken.count(o.name)) opt.refuse(o.name, o.what);
  // A compiler setting given on the command line (-p sched.*) that this run's
  // workload does not read is refused, not ignored (platform files may carry
  // settings for every workload).
  {
    const std::string w = !opt.programs_dir.empty() ? "--programs" : m_compute ? opt.workload : "collective";
    struct Use {
      const char* key;
      std::vector<std::string> by;  // workloads reading it
    };
    const Use uses[] = {{"sched.chunk_vectors", {"collective", "matmul"}},
                        {"sched.staging_chunks", {"collective"}},
                        {"sched.min_piece_vectors", {"collective"}},
                        {"sched.routing", {"collective"}},
                        {"sched.paths", {"collective", "matmul", "bert"}},
                        {"sched.matmul_inputs", {"matmul"}},
                        {"sched.matmul_order", {"matmul"}},
                        {"sched.matmul_outputs", {"matmul"}},
                        {"sched.matmul_block_rows", {"matmul"}}};
    const core::Config& cfg = core::Context::get().config();
    for (const Use& u : uses) {
      const core::ConfigEntry* e = cfg.find(u.key);
      if (!e || e->origin.file.rfind("-p ", 0) != 0 || std::find(u.by.begin(), u.by.end(), w) != u.by.end()) continue;
      throw core::ConfigError(fmt::format("{}: this {} run does not read {} (it applies to {})", e->origin.file,
                                          w == "collective" ? "compiled collective" : w, u.key, fmt::join(u.by, ", ")));
    }
  }
  if (!opt.programs_dir.empty())
    for (const char* o : {"workload", "bytes", "dtype", "src", "dst"})
      opt.refuse(o, "describes a compiled collective; --programs runs hand-written programs instead");
  if (m_compute) {
    m_compute->prepare(opt);
  } else if (m_collective) {
    if (!sched::parse_kind(opt.workload, m_req.kind))
      throw core::ConfigError(
          fmt::format("--workload '{}': expected allreduce, allgather, reducescatter, broadcast, alltoall, p2p, "
                      "matmul or cholesky",
                      opt.workload));
    if (m_req.kind != sched::Kind::p2p)
      opt.refuse("dst", fmt::format("only a p2p transfer has a destination (--workload {})", opt.workload));
    if (m_req.kind != sched::Kind::p2p && m_req.kind != sched::Kind::broadcast)
      opt.refuse("src", fmt::format("only a broadcast (its root) or a p2p transfer (its source) takes a rank "
                                    "(--workload {})",
                                    opt.workload));
    m_req.bytes = opt.bytes;
    m_req.dtype = opt.reduction_dtype();
    m_req.root = opt.root;
    m_req.peer = opt.peer;
    m_req.chunk_vectors = m_params->chunk_vectors;
    m_req.staging_chunks = m_params->staging_chunks;
    m_req.min_piece_vectors = m_params->min_piece_vectors;
    sched::parse_routing(m_params->routing, m_req.routing);
    m_req.max_paths = m_params->paths;
    m_plan = sched::plan(m_machine, m_req);
  }
  for (tsp::Tsp* t : m_sys->chips) t->set_timing_only(m_compute && m_compute->timing_only());
  std::vector<sw::Program>* compiled = m_compute ? &m_compute->programs() : m_collective ? &m_plan.programs : nullptr;
  const bool text = m_sys->chips.size() <= m_params->save_programs_max_chips;
  std::vector<sw::Program> programs = make_programs(opt.out_dir, opt.programs_dir, *m_sys, compiled, text);
  compiled = nullptr;
  m_plan.programs.clear();
  if (m_compute) std::vector<sw::Program>().swap(m_compute->programs());
  // Static check of what is about to run, independent of the scheduler.
  m_schedule_check = sched::check_schedule(m_machine, programs);
  const std::vector<sched::Violation>& bad = m_schedule_check.violations;
  if ((m_collective || m_compute) && !bad.empty()) {
    // The compiler's own schedule breaks the hardware's rules on this
    // platform (a clock too slow for its links' receive buffers, say):
    // refuse it rather than simulate a run known to fail.
    std::string list;
    for (size_t i = 0; i < bad.size() && i < 3; ++i)
      list += fmt::format("\n  {} at cycle {}: {}", bad[i].where, bad[i].cycle, bad[i].what);
    std::string why =
        "check the chips' clock_mhz, rx_buffer_vectors and tx_buffer_vectors against the links' lane_gbps";
    for (const sched::ChipSpec& c : m_machine.chips)
      for (const sched::PortSpec& p : c.ports) {
        if (p.peer == sched::kNoChip) continue;
        const sched::ChipSpec& d = m_machine.chips[p.peer];
        if (p.out.rate.ps(1) < d.clock.span_ps(0, 1)) {
          why = fmt::format(
              "{} -> {} delivers a vector every {} ps, faster than the receiver's cycle of {} ps: one RECV per "
              "cycle cannot keep up; lower lane_gbps or raise clock_mhz",
              c.name, d.name, p.out.rate.ps(1), d.clock.span_ps(0, 1));
          break;
        }
      }
    throw core::ConfigError(fmt::format(
        "the compiler cannot schedule this {} on this platform: its schedule check finds {} violation{} of the "
        "hardware's rules (docs/isa.md), e.g.{}{}\n{}",
        opt.workload, bad.size(), bad.size() == 1 ? "" : "s", list, bad.size() > 3 ? "\n  ..." : "", why));
  }
  for (size_t i = 0; i < bad.size() && i < 5; ++i)  // hand-written programs run anyway: the model reports the fault
    fmt::print(stderr, "fabricvp: schedule check: {} at cycle {}: {}\n", bad[i].where, bad[i].cycle, bad[i].what);
  estimate_host_bytes(programs);
  m_instructions = load_programs(*m_sys, std::move(programs), !(m_compute && m_compute->launched()));
}

// The simulated SRAMs hold only the 4 KiB pages written, so the run's peak is
// every chip's vectors written (inputs, RECV, ADD, COPY, RDHAC destinations)
// plus the check's partial sums or reference copy (CollectiveData).
void GroqScenario::estimate_host_bytes(const std::vector<sw::Program>& programs) {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> written(m_sys->chips.size());
  uint64_t check = m_compute ? m_compute->host_memory(written) : 0;
  const bool timing_only = m_compute && m_compute->timing_only();  // MXMs write nothing
  if (m_collective)
    for (uint32_t r = 0; r < m_plan.inputs.size(); ++r)
      for (const sched::Region& g : m_plan.inputs[r])
        written[m_machine.ranks[r]].emplace_back(g.vec, g.vec + (g.bytes + tsp::kVectorBytes - 1) / tsp::kVectorBytes);
  for (size_t c = 0; c < programs.size() && c < written.size(); ++c)
    for (const std::vector<tsp::Instr>& q : programs[c].queues)
      for (const tsp::Instr& in : q) {
        if (in.op == tsp::Op::RECV || in.op == tsp::Op::ADD || in.op == tsp::Op::COPY)
          written[c].emplace_back(in.a, uint64_t(in.a) + in.count);
        else if (in.op == tsp::Op::RDHAC)
          written[c].emplace_back(in.a, uint64_t(in.a) + 1);
        else if (in.op == tsp::Op::MXM && !timing_only)
          written[c].emplace_back(in.a, uint64_t(in.a) + uint64_t(in.count) * tsp::kResultVectors);
        else if (in.op == tsp::Op::MUL || in.op == tsp::Op::SUB || in.op == tsp::Op::MAX || in.op == tsp::Op::RSQRT ||
                 in.op == tsp::Op::EXP || in.op == tsp::Op::SPLAT || in.op == tsp::Op::NARROW ||
                 in.op == tsp::Op::WIDEN || in.op == tsp::Op::TRANSPOSE)
          written[c].emplace_back(
              in.a, uint64_t(in.a) +
                        (in.op == tsp::Op::TRANSPOSE ? 1 : uint64_t(in.count) * (in.op == tsp::Op::WIDEN ? 2 : 1)));
      }
  uint64_t sram = 0, chips = 0;
  for (auto& w : written) {
    if (w.empty()) continue;
    ++chips;
    std::sort(w.begin(), w.end());
    uint64_t lo = w[0].first, hi = w[0].second;
    auto close = [&] { sram += (hi - lo) * tsp::kVectorBytes + 4096; };  // + partial pages at the ends
    for (const auto& [a, b] : w) {
      if (a > hi) close(), lo = a;
      hi = std::max(hi, b);
    }
    close();
  }
  if (m_collective) {
    const uint64_t N = m_plan.input_bytes, P = m_machine.size();
    check = m_req.kind == sched::Kind::allgather ? P * N : 3 * N;
  }
  m_host_bytes = sram + check;
  m_host_what = fmt::format("{} of SRAM written on {} chips, {} for the check", core::approx_bytes(sram), chips,
                            core::approx_bytes(check));
}

void GroqScenario::load() {
  if (m_compute) {
    m_compute->load(m_opt.seed);
    return;
  }
  m_data = std::make_unique<CollectiveData>(*m_sys, m_machine, m_plan, m_req);
  if (m_collective) m_data->load();
}

void GroqScenario::finish() {
  for (tsp::Tsp* t : m_sys->chips) t->finish();
  for (tsp::Tsp* t : m_sys->chips) m_completion = std::max(m_completion, t->last_write_ps());
}

systems::Outcome GroqScenario::check() {
  systems::Outcome out;
  if (m_compute) out = m_compute->check(m_completion);
  if (m_collective) {
    m_check = check_outputs(
        m_sys->host, m_machine.ranks, m_plan.outputs,
        [this](uint32_t r, uint64_t pos, uint8_t* o, uint64_t len) { m_data->expected(r, pos, o, len); }, m_req.dtype);
    out.checked = true;
    out.verified = m_check.mismatched == 0;
    out.timed = true;
    out.timing_ok = m_completion == m_plan.predicted_ps;
    if (!out.timing_ok)
      out.timing_note = fmt::format("simulated completion {} ps differs from the scheduler's prediction {} ps",
                                    m_completion, m_plan.predicted_ps);
  }
  for (tsp::Tsp* t : m_sys->chips) t->release_sram();  // results are checked: the memory can go
  return out;
}

namespace {

const bool kind_registered = systems::register_kind(systems::Kind{
    "groq",
    "Groq TSPs on C2C links: GroqNodes and software-scheduled Dragonflies (seed 000)",
    {"groq_node", "dragonfly"},
    true,
    [](const systems::RunOptions&) -> std::unique_ptr<systems::Scenario> { return std::make_unique<GroqScenario>(); },
    [] {  // the compute workloads' kind options (compute.h)
      std::set<std::string> names;
      for (const auto& [workload, o] : compute_options()) names.insert(o.name);
      return std::vector<std::string>(names.begin(), names.end());
    }()});

}  // namespace

}  // namespace fabricvp::groq
