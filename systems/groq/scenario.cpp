// The "groq" system kind (seed 000): GroqNodes and software-scheduled
// Dragonflies of TSPs (systems/groq/system.h). A run compiles one collective
// with the scheduler (sw/sched), writes and loads every chip's program,
// loads seeded inputs into the SRAMs, simulates, checks every rank's result
// bit-exactly against the host reference (systems/groq/collective_data.h)
// and the completion time against the scheduler's prediction; or it runs
// hand-written programs (--programs). Machine checks are replayed by the driver.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "models/core/context.h"
#include "models/core/units.h"
#include "sw/sched/checker.h"
#include "sw/sched/collectives.h"
#include "sw/sched/routing.h"
#include "systems/groq/collective_data.h"
#include "systems/groq/machine.h"
#include "systems/groq/programs.h"
#include "systems/groq/system.h"
#include "systems/kind.h"

namespace fabricvp::groq {

namespace {

using core::human_bytes;
using core::human_time;

/// run.* — what a Groq run adds to the manifest.
struct RunStats {
  core::Value<uint64_t> chips{nullptr, "run", "chips", "chips", "TSPs in the platform"};
  core::Value<uint64_t> instructions{nullptr, "run", "program_instructions", "instructions", "instructions loaded"};
  core::Value<uint64_t> schedule_violations{nullptr, "run", "schedule_violations", "violations",
                                            "conflicts the static schedule check found in the loaded programs"};
};

/// phy.* — FEC and error-injection totals over every link direction.
struct PhyStats {
  core::Value<uint64_t> codewords{nullptr, "phy", "codewords", "codewords", "FEC codewords on all links"};
  core::Value<uint64_t> bit_errors{nullptr, "phy", "bit_errors", "bits", "bit errors injected"};
  core::Value<uint64_t> corrected_codewords{nullptr, "phy", "corrected_codewords", "codewords",
                                            "codewords with errors the decoders corrected"};
  core::Value<uint64_t> corrected_symbols{nullptr, "phy", "corrected_symbols", "symbols", "symbols corrected"};
  core::Value<uint64_t> uncorrectable_codewords{nullptr, "phy", "uncorrectable_codewords", "codewords",
                                                "codewords declared uncorrectable (vectors flagged)"};
  core::Value<uint64_t> flagged_vectors{nullptr, "phy", "flagged_vectors", "vectors",
                                        "vectors flagged by uncorrectable codewords"};
  core::Value<uint64_t> miscorrected_codewords{nullptr, "phy", "miscorrected_codewords", "codewords",
                                               "codewords decoded into a wrong codeword (silent corruption)"};
  core::Value<uint64_t> silent_corrupted_vectors{nullptr, "phy", "silent_corrupted_vectors", "vectors",
                                                 "vectors delivered with wrong bits and no flag (model-only view)"};
};

/// workload.* — a collective run.
struct WorkloadStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "collective"};
  core::Value<uint64_t> bytes{nullptr, "workload", "bytes", "bytes", "collective size (nccl-tests convention)"};
  core::Value<std::string> dtype{nullptr, "workload", "dtype", "", "element type"};
  core::Value<uint64_t> root{nullptr, "workload", "root", "", "broadcast root rank, p2p source rank"};
  core::Value<bool> verified{nullptr, "workload", "verified", "",
                             "every chip's result is bit-exact against the host reference"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "result elements that differ from the reference"};
  core::Value<uint64_t> predicted_ps{nullptr, "workload", "predicted_ps", "ps",
                                     "completion predicted by the scheduler"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "simulated completion: last result vector written"};
  core::Value<double> algbw{nullptr, "workload", "algbw_GBps", "GB/s", "bytes / simulated_ps (1 GB = 1e9 B)"};
  core::Value<double> busbw{nullptr, "workload", "busbw_GBps", "GB/s", "algbw x bus_factor (nccl-tests)"};
  core::Value<double> bus_factor{nullptr, "workload", "bus_factor", "",
                                 "allreduce 2(n-1)/n, allgather and reducescatter (n-1)/n, broadcast 1"};
  core::Value<double> peak_busbw{nullptr, "workload", "peak_busbw_GBps", "GB/s",
                                 "one fully wired node: (n-1) x one link direction's payload rate; else 0"};
  core::Value<double> busbw_pct{nullptr, "workload", "busbw_pct_of_peak", "%", "busbw / peak_busbw"};
  core::Value<uint64_t> chunk_vectors{nullptr, "workload", "chunk_vectors", "vectors",
                                      "reduction chunk used by the scheduler"};
  core::Value<uint64_t> staging_chunks{nullptr, "workload", "staging_chunks", "chunks",
                                       "receive ring per source used by the reduction (0: none)"};
  core::Value<uint64_t> ranks{nullptr, "workload", "ranks", "ranks", "chips in the job (spares and failed nodes out)"};
  core::Value<std::string> levels{nullptr, "workload", "levels", "",
                                  "group size per hierarchy level, innermost first (e.g. 8x32)"};
  core::Value<std::string> level_staging{nullptr, "workload", "level_staging", "chunks",
                                         "reduction staging ring depth per level, innermost first (e.g. 4x2)"};
  core::Value<uint64_t> max_hops{nullptr, "workload", "max_hops", "cables", "longest route a tensor took"};
  core::Value<uint64_t> paths{nullptr, "workload", "paths", "routes", "p2p: routes the tensor was spread over"};
  core::Value<uint64_t> peer{nullptr, "workload", "peer", "", "p2p destination rank"};
  core::Value<uint64_t> bursts{nullptr, "workload", "bursts", "bursts", "SEND bursts in the schedule"};
  core::Value<uint64_t> forwarded{nullptr, "workload", "forwarded_vectors", "vectors",
                                  "vectors received and sent on by intermediate chips (cut-through)"};
  core::Value<uint64_t> scratch{nullptr, "workload", "scratch_vectors", "vectors",
                                "most SRAM any chip set aside for forwarding (buffers reused once drained)"};
};

class GroqScenario final : public systems::Scenario {
 public:
  GroqScenario() : m_params(std::make_unique<CompilerParams>()), m_sys(std::make_unique<System>("sys")) {}

  std::string headline() const override {
    return fmt::format("{} TSPs, {} links", m_sys->chips.size(), m_sys->links.size());
  }
  std::string description() const override { return m_sys->description.get(); }
  uint64_t links() const override { return m_sys->links.size(); }
  bool replays() const override { return true; }
  std::vector<std::string> outputs() const override {
    return m_collective ? std::vector<std::string>{"programs/"} : std::vector<std::string>{};
  }

  void prepare(const systems::RunOptions& opt) override {
    m_opt = opt;
    if (!opt.collectives.empty())
      throw core::ConfigError(
          "--collective: a Groq system runs one compiled collective at a time (use --workload, --bytes, --dtype)");
    if (opt.group != "all")
      throw core::ConfigError("--group: the Groq compiler schedules collectives over every rank of the job");
    m_collective = opt.programs_dir.empty();
    m_machine = machine_of(*m_sys);
    if (m_collective) {
      if (!sched::parse_kind(opt.workload, m_req.kind))
        throw core::ConfigError(fmt::format(
            "--workload '{}': expected allreduce, allgather, reducescatter, broadcast, alltoall or p2p", opt.workload));
      m_req.bytes = opt.bytes;
      m_req.dtype = opt.dtype;
      m_req.root = opt.root;
      m_req.peer = opt.peer;
      m_req.chunk_vectors = m_params->chunk_vectors;
      m_req.staging_chunks = m_params->staging_chunks;
      m_req.min_piece_vectors = m_params->min_piece_vectors;
      sched::parse_routing(m_params->routing, m_req.routing);
      m_req.max_paths = m_params->paths;
      m_plan = sched::plan(m_machine, m_req);
    }
    const bool text = m_sys->chips.size() <= m_params->save_programs_max_chips;
    std::vector<sw::Program> programs =
        make_programs(opt.out_dir, opt.programs_dir, *m_sys, m_collective ? &m_plan : nullptr, text);
    m_plan.programs.clear();
    // Static check of what is about to run, independent of the scheduler.
    m_schedule_check = sched::check_schedule(m_machine, programs);
    for (size_t i = 0; i < m_schedule_check.violations.size() && i < 5; ++i) {
      const sched::Violation& v = m_schedule_check.violations[i];
      fmt::print(stderr, "fabricvp: schedule check: {} at cycle {}: {}\n", v.where, v.cycle, v.what);
    }
    m_instructions = load_programs(*m_sys, std::move(programs));
  }

  void load() override {
    m_data = std::make_unique<CollectiveData>(*m_sys, m_machine, m_plan, m_req);
    if (m_collective) m_data->load();
  }

  void finish() override {
    for (tsp::Tsp* t : m_sys->chips) t->finish();
    for (tsp::Tsp* t : m_sys->chips) m_completion = std::max(m_completion, t->last_write_ps());
  }

  systems::Outcome check() override {
    systems::Outcome out;
    if (m_collective) {
      m_check = check_outputs(
          m_sys->host, m_machine.ranks, m_plan.outputs,
          [this](uint32_t r, uint64_t pos, uint8_t* o, uint64_t len) { m_data->expected(r, pos, o, len); },
          m_req.dtype);
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

  void report(const systems::Outcome& out) override {
    m_outcome = out;
    m_run.emplace();
    m_run->chips.set(m_sys->chips.size());
    m_run->instructions.set(m_instructions);
    m_run->schedule_violations.set(m_schedule_check.violations.size());
    m_phy.emplace();
    PhyStats& ps = *m_phy;
    {
      uint64_t v[8] = {};
      for (const c2c::Link* l : m_sys->links)
        for (const c2c::Channel* c : {&l->a_to_b, &l->b_to_a}) {
          v[0] += c->codewords.get();
          v[1] += c->bit_errors.get();
          v[2] += c->corrected_codewords.get();
          v[3] += c->corrected_symbols.get();
          v[4] += c->uncorrectable_codewords.get();
          v[5] += c->flagged_vectors.get();
          v[6] += c->miscorrected_codewords.get();
          v[7] += c->corrupted_vectors.get();
        }
      ps.codewords.set(v[0]);
      ps.bit_errors.set(v[1]);
      ps.corrected_codewords.set(v[2]);
      ps.corrected_symbols.set(v[3]);
      ps.uncorrectable_codewords.set(v[4]);
      ps.flagged_vectors.set(v[5]);
      ps.miscorrected_codewords.set(v[6]);
      ps.silent_corrupted_vectors.set(v[7]);
    }
    m_link_GBps = m_sys->links.empty() ? 0.0 : m_sys->links[0]->payload_GBps();
    const uint32_t P = m_machine.size();
    // The (n-1) x link bound holds for one fully wired node, where every rank has
    // a direct cable to every other; elsewhere no single number bounds busbw.
    const bool one_node = m_sys->chips.size() == P && P == m_sys->tsps_per_node && m_sys->node_wiring.get() == "full";
    m_peak_bus = one_node ? (P - 1) * m_link_GBps : 0.0;
    m_algbw = m_completion ? static_cast<double>(m_req.bytes) / (m_completion * 1e-12) / 1e9 : 0.0;
    m_busbw = m_algbw * m_plan.bus_factor;
    if (!m_collective) return;
    m_ws.emplace();
    WorkloadStats& ws = *m_ws;
    ws.kind.set(m_opt.workload);
    ws.bytes.set(m_req.bytes);
    ws.dtype.set(core::dtype_name(m_req.dtype));
    ws.root.set(m_req.root);
    ws.verified.set(out.checked && out.verified);
    ws.mismatched.set(m_check.mismatched);
    ws.predicted_ps.set(m_plan.predicted_ps);
    ws.simulated_ps.set(m_completion);
    ws.algbw.set(m_algbw);
    ws.busbw.set(m_busbw);
    ws.bus_factor.set(m_plan.bus_factor);
    ws.peak_busbw.set(m_peak_bus);
    ws.busbw_pct.set(m_peak_bus > 0 ? 100.0 * m_busbw / m_peak_bus : 0.0);
    ws.chunk_vectors.set(m_plan.chunk_vectors);
    ws.staging_chunks.set(m_plan.staging_chunks);
    ws.ranks.set(P);
    std::string levels;
    for (uint32_t g : m_plan.levels) levels += (levels.empty() ? "" : "x") + std::to_string(g);
    ws.levels.set(levels);
    std::string rings;
    for (uint32_t r : m_plan.level_staging) rings += (rings.empty() ? "" : "x") + std::to_string(r);
    ws.level_staging.set(rings);
    ws.max_hops.set(m_plan.max_hops);
    ws.paths.set(m_plan.paths);
    ws.bursts.set(m_plan.bursts);
    ws.forwarded.set(m_plan.forwarded_vectors);
    ws.scratch.set(m_plan.scratch_vectors);
    ws.peer.set(m_req.peer);
  }

  void summarize(const systems::Outcome& out, systems::Summary& s) override {
    const core::Context& ctx = core::Context::get();
    const bool hw_ok = ctx.hw_errors().empty();
    const uint32_t P = m_machine.size();
    const size_t n = m_sys->chips.size();
    if (m_collective) {
      std::string detail;
      if (m_req.kind == sched::Kind::broadcast) detail = fmt::format(", root rank {}", m_req.root);
      if (m_req.kind == sched::Kind::p2p)
        detail = fmt::format(", rank {} -> rank {} over {} route(s)", m_req.root, m_req.peer, m_plan.paths);
      if (m_plan.chunk_vectors) {
        std::string rings;
        for (uint32_t r : m_plan.level_staging) rings += (rings.empty() ? "" : "/") + std::to_string(r);
        detail = fmt::format(", reduced in chunks of {} vectors, staging ring{} {}", m_plan.chunk_vectors,
                             m_plan.level_staging.size() > 1 ? "s" : "", rings);
      }
      s.line("workload", fmt::format("{} {} {} ({} bytes){}", m_opt.workload, human_bytes(m_req.bytes),
                                     core::dtype_name(m_req.dtype), m_req.bytes, detail));
      std::string levels;
      for (uint32_t g : m_plan.levels) levels += (levels.empty() ? "" : " x ") + std::to_string(g);
      s.line("schedule", fmt::format("{} ranks{}, levels {}, longest route {} cables, {} bursts, {} vectors forwarded",
                                     P, P < n ? fmt::format(" on {} chips", n) : "", levels, m_plan.max_hops,
                                     m_plan.bursts, m_plan.forwarded_vectors));
    } else {
      s.line("programs", fmt::format("{} ({} instructions)", m_opt.programs_dir, m_instructions));
    }
    const sched::CheckReport& sc = m_schedule_check;
    s.line("checked",
           fmt::format("{} SENDs, {} RECVs, {} ALU bursts statically: {}", sc.sends, sc.recvs, sc.alu_ops,
                       sc.violations.empty()
                           ? (sc.skipped_sync ? "no conflicts (SYNC/NOTIFY queues not analysed)" : "no conflicts")
                           : fmt::format("{} CONFLICT(S), first: {}: {}", sc.violations.size(), sc.violations[0].where,
                                         sc.violations[0].what)));
    const PhyStats& ps = *m_phy;
    if (ps.codewords.get() > 0 && (ps.bit_errors.get() > 0 || m_opt.attempt > 0))
      s.line("phy", fmt::format("{} FEC codewords, {} bit errors injected: {} corrected ({} symbols), {} uncorrectable "
                                "({} vectors flagged), {} miscorrected ({} vectors silently corrupted)",
                                ps.codewords.get(), ps.bit_errors.get(), ps.corrected_codewords.get(),
                                ps.corrected_symbols.get(), ps.uncorrectable_codewords.get(), ps.flagged_vectors.get(),
                                ps.miscorrected_codewords.get(), ps.silent_corrupted_vectors.get()));
    if (m_opt.attempt > 0) {
      std::string list;
      uint64_t lost = 0;
      for (const auto& m : m_opt.history) {
        list += fmt::format("{}{} at {}", list.empty() ? "" : "; ", m.link, human_time(m.time_ps));
        lost += m.time_ps;
      }
      s.line("replays", fmt::format("{} after machine checks ({}); {} lost before this attempt", m_opt.attempt, list,
                                    human_time(lost)));
    }
    if (!hw_ok) {
      const core::HardwareError& e = ctx.hw_errors()[0];
      s.line("result",
             fmt::format("FAILED: {} hardware error(s); first: {}: {}", ctx.hw_errors().size(), e.where, e.message));
      if (e.machine_check) {
        bool same = !m_opt.history.empty();
        for (const auto& m : m_opt.history) same &= m.link == e.source;
        s.text(fmt::format(
            "               {}",
            same ? fmt::format("persistent fault: {} flagged data on all {} attempts (a marginal link?)", e.source,
                               m_opt.attempt + 1)
                 : fmt::format("gave up after {} replay(s) (run --max-replays N to allow more)", m_opt.attempt)));
      }
      double worst_ppm = 0;
      for (const tsp::Tsp* t : m_sys->chips) worst_ppm = std::max(worst_ppm, std::abs(t->clock().ppm()));
      if (m_collective && !e.machine_check && worst_ppm > 0)
        s.text(
            fmt::format("               note: chips run up to {:.1f} ppm off nominal; compiled collectives assume "
                        "nominal clocks and carry no RUNTIME_DESKEW (docs/clocks.md)",
                        worst_ppm));
    } else if (m_collective) {
      if (out.verified)
        s.line("result", fmt::format("verified: {}/{} ranks bit-exact against the host reference", m_check.ranks_ok,
                                     m_check.ranks_checked));
      else
        s.line("result", fmt::format("MISMATCH: {} element(s) differ on {} rank(s)", m_check.mismatched,
                                     m_check.ranks_checked - m_check.ranks_ok));
      for (const auto& m : m_check.first)
        s.text(fmt::format("               rank {} ({}) byte {}: expected {} got {}", m.rank,
                           m_sys->chips[m_machine.ranks[m.rank]]->name(), m.byte, m.expected, m.got));
      s.line("completion",
             fmt::format("simulated {} ({} ps), predicted {} ({})", human_time(m_completion), m_completion,
                         human_time(m_plan.predicted_ps),
                         out.timing_ok ? "equal"
                                       : fmt::format("DIFFERS by {} ps",
                                                     static_cast<int64_t>(m_completion - m_plan.predicted_ps))));
      if (m_peak_bus > 0)
        s.line("bandwidth",
               fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s = {:.1f}% of {} x {:.3f} GB/s link payload", m_algbw,
                           m_busbw, 100.0 * m_busbw / m_peak_bus, P - 1, m_link_GBps));
      else
        s.line("bandwidth", fmt::format("algbw {:.2f} GB/s, busbw {:.2f} GB/s (link payload {:.3f} GB/s)", m_algbw,
                                        m_busbw, m_link_GBps));
    } else {
      s.line("result", fmt::format("ran to completion; last SRAM write at {}", human_time(m_completion)));
    }
  }

  void tables(systems::Summary& s) override {
    const auto& links = m_sys->links;
    if (links.empty()) return;
    const uint64_t end = core::stats_end_ps();
    s.text(fmt::format("\n  {:<28} {:>8} {:>8} {:>10}   (busy share of {} simulated)", "link", "a->b", "b->a",
                       "vectors", human_time(end)));
    if (links.size() <= 64) {
      for (const c2c::Link* l : links)
        s.text(fmt::format("  {:<28} {:>7.1f}% {:>7.1f}% {:>10}", l->name(), l->a_to_b.utilization_pct(),
                           l->b_to_a.utilization_pct(), l->a_to_b.packets.get() + l->b_to_a.packets.get()));
      return;
    }
    double lo = 100, hi = 0, sum = 0;
    for (const c2c::Link* l : links)
      for (const c2c::Channel* ch : {&l->a_to_b, &l->b_to_a}) {
        const double u = ch->utilization_pct();
        lo = std::min(lo, u);
        hi = std::max(hi, u);
        sum += u;
      }
    s.text(fmt::format("  {} link directions: utilization min {:.1f}% mean {:.1f}% max {:.1f}%", 2 * links.size(), lo,
                       sum / (2 * links.size()), hi));
  }

  int topology(const std::string& platform, uint32_t sources, const std::string& json_out) override;

 private:
  std::unique_ptr<CompilerParams> m_params;
  std::unique_ptr<System> m_sys;
  systems::RunOptions m_opt;
  bool m_collective = false;
  sched::Machine m_machine;
  sched::Request m_req;
  sched::Plan m_plan;
  sched::CheckReport m_schedule_check;
  size_t m_instructions = 0;
  std::unique_ptr<CollectiveData> m_data;
  uint64_t m_completion = 0;
  CheckResult m_check;
  systems::Outcome m_outcome;
  double m_link_GBps = 0, m_peak_bus = 0, m_algbw = 0, m_busbw = 0;
  std::optional<RunStats> m_run;
  std::optional<PhyStats> m_phy;
  std::optional<WorkloadStats> m_ws;
};

/// Cables by kind, the job's ranks, minimal-route hop counts from a sample of
/// sources, and the bisection along the packaging.
int GroqScenario::topology(const std::string& platform, uint32_t sources, const std::string& json_out) {
  const System& sys = *m_sys;
  std::map<std::string, size_t> kinds, dead;
  for (const c2c::Cable& w : sys.cables) {
    std::string leaf = std::string(w.link->basename());
    std::string kind = leaf.substr(0, leaf.find_first_of("0123456789"));
    ++kinds[kind];
    if (w.failed) ++dead[kind];
  }
  size_t failed_chips = std::count(sys.chip_failed.begin(), sys.chip_failed.end(), true);
  fmt::print("{}: {} chips in {} rack(s) x {} node(s) x {} TSPs, {} cables\n", platform, sys.chips.size(),
             sys.rack_count(), sys.nodes_in_rack(), sys.tsps_per_node.get(), sys.cables.size());
  for (const auto& [k, n] : kinds)
    fmt::print("  {:<6} {:>7} cables{}\n", k, n, dead[k] ? fmt::format(" ({} dead)", dead[k]) : "");
  fmt::print("  job: {} ranks (levels {} x {} x {}), {} chips on failed nodes, {} spare or unused\n", sys.ranks.size(),
             sys.tsps_per_node.get(), sys.logical_nodes_per_rack, sys.logical_racks, failed_chips,
             sys.chips.size() - sys.ranks.size() - failed_chips);
  sched::Machine m = machine_of(sys);
  sched::Router router(m);
  std::vector<uint64_t> hist;
  uint32_t step = std::max<uint32_t>(1, m.size() / std::max<uint32_t>(1, sources));
  uint64_t pairs = 0;
  for (uint32_t a = 0; a < m.size(); a += step)
    for (uint32_t b = 0; b < m.size(); ++b) {
      if (a == b) continue;
      uint32_t d = router.distance(m.ranks[a], m.ranks[b]);
      if (hist.size() <= d) hist.resize(d + 1, 0);
      ++hist[d];
      ++pairs;
    }
  fmt::print("  minimal routes from {} source rank(s) to every rank ({} pairs):\n", (m.size() + step - 1) / step,
             pairs);
  for (size_t d = 1; d < hist.size(); ++d)
    if (hist[d]) fmt::print("    {} cable(s): {:>10} pairs ({:.2f}%)\n", d, hist[d], 100.0 * hist[d] / pairs);
  // Bisection along the packaging: the first half of the racks (or of the
  // nodes, or of a node's TSPs) against the rest; live cables across it.
  uint64_t crossing = 0;
  auto half_of = [&](uint32_t chip) {
    const tsp::Coord& c = sys.coord[chip];
    if (sys.rack_count() > 1) return c.rack < sys.rack_count() / 2;
    if (sys.nodes_in_rack() > 1) return c.node < sys.nodes_in_rack() / 2;
    return c.tsp < sys.tsps_per_node / 2;
  };
  uint64_t left = 0;
  for (uint32_t c = 0; c < sys.chips.size(); ++c) left += half_of(c);
  for (const c2c::Cable& w : sys.cables)
    if (!w.failed && half_of(w.a_chip) != half_of(w.b_chip)) ++crossing;
  const double link = sys.links.empty() ? 0.0 : sys.links[0]->payload_GBps();
  const double per_tsp = left ? crossing * link / static_cast<double>(left) : 0.0;
  fmt::print("  bisection: {} cables between {} and {} TSPs = {:.1f} GB/s per direction, {:.2f} GB/s per TSP\n",
             crossing, left, sys.chips.size() - left, crossing * link, per_tsp);
  if (!json_out.empty()) {
    nlohmann::json j = {
        {"platform", platform},        {"chips", sys.chips.size()},         {"ranks", sys.ranks.size()},
        {"cables", sys.cables.size()}, {"bisection_cables", crossing},      {"bisection_tsps", left},
        {"link_payload_GBps", link},   {"bisection_GBps_per_tsp", per_tsp}, {"route_cables_histogram", hist}};
    std::ofstream f(json_out);
    if (!f) throw core::ConfigError(fmt::format("{}: cannot write", json_out));
    f << j.dump(1) << "\n";
  }
  return 0;
}

const bool registered = systems::register_kind(systems::Kind{
    "groq",
    "Groq TSPs on C2C links: GroqNodes and software-scheduled Dragonflies (seed 000)",
    {"groq_node", "dragonfly"},
    true,
    [](const systems::RunOptions&) -> std::unique_ptr<systems::Scenario> { return std::make_unique<GroqScenario>(); }});

}  // namespace

}  // namespace fabricvp::groq
