#include "sw/runtime/runner.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <systemc>

#include "fabricvp_version.h"

#include "models/core/context.h"
#include "models/core/dtype.h"
#include "models/core/module.h"
#include "platforms/system.h"
#include "sw/asm/program.h"
#include "sw/runtime/report.h"
#include "sw/runtime/torus_runner.h"
#include "sw/sched/checker.h"
#include "sw/sched/collectives.h"

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

constexpr const char* kVersion = FABRICVP_VERSION;

}  // namespace

uint64_t parse_bytes(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) throw core::ConfigError(fmt::format("--bytes '{}': expected a size like 4096, 100KiB, 64MiB or 1GiB", s));
  double v = std::stod(s.substr(0, i));
  std::string unit = s.substr(i);
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KiB" || unit == "K")
    mult = 1024.0;
  else if (unit == "MiB" || unit == "M")
    mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "kB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  else
    throw core::ConfigError(fmt::format("--bytes '{}': unknown unit '{}' (B, KiB, MiB, GiB, kB, MB, GB)", s, unit));
  double bytes = v * mult;
  if (bytes != std::floor(bytes) || bytes <= 0)
    throw core::ConfigError(fmt::format("--bytes '{}' is not a positive whole number of bytes", s));
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_time_ps(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) throw core::ConfigError(fmt::format("time '{}': expected a number with unit ps, ns, us or ms", s));
  double v = std::stod(s.substr(0, i));
  std::string unit = s.substr(i);
  double mult;
  if (unit == "ps")
    mult = 1;
  else if (unit == "ns")
    mult = 1e3;
  else if (unit == "us")
    mult = 1e6;
  else if (unit == "ms")
    mult = 1e9;
  else
    throw core::ConfigError(fmt::format("time '{}': unit must be ps, ns, us or ms", s));
  return static_cast<uint64_t>(std::llround(v * mult));
}

RunParams::RunParams()
    : chunk_vectors("sched", "chunk_vectors", 64, "vectors",
                    "reduction granularity of the collective scheduler (raised to fit imem)", 1, 1u << 20),
      staging_chunks("sched", "staging_chunks", 4, "chunks",
                     "receive ring per source in the reduction (doubled while the reduction lags)", 1, 1u << 20),
      min_piece_vectors("sched", "min_piece_vectors", 8, "vectors",
                        "all-reduce: a level whose data gives each member fewer vectors than this hands it to fewer "
                        "members in larger pieces (0: always split evenly)",
                        0, 1u << 20),
      routing("sched", "routing", "auto", "",
              "p2p and alltoall routes: minimal, spread (equal shares over sched.paths routes) or auto (as many "
              "routes as shorten the transfer, decided from tensor size and route latencies)",
              {"minimal", "spread", "auto"}),
      paths("sched", "paths", 7, "routes", "most routes one tensor is spread over (minimal + detours)", 1, 64),
      save_programs_max_chips("run", "save_programs_max_chips", 1024, "chips",
                              "write <out>/programs/*.s and load them from that text for platforms up to this size "
                              "(larger ones load the binary directly)",
                              0, 1u << 30) {
  core::default_log_level();
}

sched::Machine machine_of(const platform::System& sys) {
  sched::Machine m;
  for (size_t i = 0; i < sys.chips.size(); ++i) {
    const tsp::Tsp* t = sys.chips[i];
    sched::ChipSpec c;
    c.name = t->name();
    c.clock = t->nominal_clock();  // the compiler cannot know the chips' real oscillators
    c.send_latency = t->send_latency;
    c.recv_latency = t->recv_latency;
    c.add_latency = t->add_latency;
    c.queues = t->queues;
    c.alus = t->vxm_alus;
    c.tx_buffer = t->tx_buffer_vectors;
    c.rx_buffer = t->rx_buffer_vectors;
    c.imem = t->imem_instructions;
    c.node = sys.coord[i].rack * sys.nodes_in_rack() + sys.coord[i].node;
    c.failed = sys.chip_failed[i];
    c.ports.resize(t->port_count());
    m.chips.push_back(std::move(c));
  }
  for (const c2c::Cable& w : sys.cables) {
    m.chips[w.a_chip].ports[w.a_port] = sched::PortSpec{
        w.b_chip, w.b_port, sched::LinkSpec{w.link->a_to_b.rate(), w.link->a_to_b.latency_ps()}, w.failed};
    m.chips[w.b_chip].ports[w.b_port] = sched::PortSpec{
        w.a_chip, w.a_port, sched::LinkSpec{w.link->b_to_a.rate(), w.link->b_to_a.latency_ps()}, w.failed};
  }
  m.ranks = sys.ranks;
  m.coord = sys.rank_coord;
  m.racks = sys.logical_racks;
  m.nodes_per_rack = sys.logical_nodes_per_rack;
  m.tsps_per_node = sys.chips.empty() ? 1 : static_cast<uint32_t>(sys.tsps_per_node.get());
  return m;
}

CheckResult check_outputs(platform::Host& host, const std::vector<uint32_t>& chips,
                          const std::vector<std::vector<sched::Region>>& outputs, const Expected& expected,
                          core::Dtype dt) {
  CheckResult res;
  const uint32_t es = core::dtype_bytes(dt);
  constexpr uint64_t kSlice = 4u << 20;
  std::vector<uint8_t> got, want;
  for (uint32_t r = 0; r < outputs.size(); ++r) {
    if (outputs[r].empty()) continue;
    ++res.ranks_checked;
    uint64_t bad = 0, pos = 0;
    for (const auto& reg : outputs[r]) {
      for (uint64_t done = 0; done < reg.bytes;) {
        uint64_t len = std::min<uint64_t>(kSlice, reg.bytes - done);
        got.resize(len);
        want.resize(len);
        host.read(chips[r], static_cast<uint64_t>(reg.vec) * tsp::kVectorBytes + done, got.data(), len);
        expected(r, pos, want.data(), len);
        if (std::memcmp(got.data(), want.data(), len) != 0) {
          for (uint64_t b = 0; b < len; b += es)
            if (std::memcmp(got.data() + b, want.data() + b, es) != 0) {
              if (res.first.size() < 8)
                res.first.push_back(
                    {r, pos + b, core::element_value(dt, want.data() + b), core::element_value(dt, got.data() + b)});
              ++bad;
            }
        }
        done += len;
        pos += len;
      }
    }
    res.mismatched += bad;
    if (!bad) ++res.ranks_ok;
  }
  return res;
}

namespace {

using Clock = WallClock;

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

/// workload.replays etc. — software replay after machine checks (any run).
struct ReplayStats {
  core::Value<uint64_t> replays{nullptr, "workload", "replays", "replays",
                                "times the program was replayed from the start after a machine check"};
  core::Value<uint64_t> replayed_ps{nullptr, "workload", "replayed_ps", "ps",
                                    "simulated time lost in the attempts that ended in a machine check"};
  core::Value<std::string> machine_checks{nullptr, "workload", "machine_checks", "",
                                          "link direction that flagged the data, per failed attempt"};
};

/// run.* — the manifest of every run.
struct RunStats : RunManifest {
  core::Value<uint64_t> chips{nullptr, "run", "chips", "chips", "TSPs in the platform"};
  core::Value<uint64_t> instructions{nullptr, "run", "program_instructions", "instructions", "instructions loaded"};
  core::Value<uint64_t> schedule_violations{nullptr, "run", "schedule_violations", "violations",
                                            "conflicts the static schedule check found in the loaded programs"};
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

/// Compile the collective into programs (written to <out>/programs/ and loaded
/// back from that text, unless `text` is off for very large platforms), or
/// assemble hand-written ones from --programs.
std::vector<sw::Program> make_programs(const RunOptions& opt, const platform::System& sys, sched::Plan* plan,
                                       bool text) {
  const uint32_t n = static_cast<uint32_t>(sys.chips.size());
  std::vector<sw::Program> programs(n);
  if (plan && !text) return std::move(plan->programs);
  if (plan) {
    fs::path dir = fs::path(opt.out_dir) / "programs";
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (uint32_t c = 0; c < n; ++c) {
      const std::string source = sw::disassemble(plan->programs[c]);
      fs::path file = dir / (std::string(sys.chips[c]->name()) + ".s");
      std::ofstream(file) << source;
      programs[c] = sw::assemble(source, file.string());
    }
    return programs;
  }
  bool any = false;
  for (uint32_t c = 0; c < n; ++c) {
    fs::path file = fs::path(opt.programs_dir) / (std::string(sys.chips[c]->name()) + ".s");
    if (!fs::exists(file)) continue;
    programs[c] = sw::assemble_file(file.string());
    if (!programs[c].target.empty() && programs[c].target != sys.chips[c]->name())
      throw core::ConfigError(fmt::format("{}: program is for '{}' but was loaded on '{}'", file.string(),
                                          programs[c].target, sys.chips[c]->name()));
    any = true;
  }
  if (!any)
    throw core::ConfigError(fmt::format("{}: no program files (expected <chip name>.s, e.g. {}.s)", opt.programs_dir,
                                        sys.chips[0]->name()));
  return programs;
}

/// Write every queue's image into its chip's instruction memory through the host
/// socket and start the chips that have a program. Returns the instruction count.
size_t load_programs(platform::System& sys, std::vector<sw::Program> programs) {
  size_t instructions = 0;
  for (uint32_t c = 0; c < programs.size(); ++c) {
    sw::Program& p = programs[c];
    const tsp::Tsp& chip = *sys.chips[c];
    if (p.queues.size() > chip.queues)
      throw core::ConfigError(fmt::format("{}: program uses queue {} but the chip has {} queues", chip.name(),
                                          p.queues.size() - 1, chip.queues.get()));
    for (uint32_t q = 0; q < p.queues.size(); ++q) {
      if (p.queues[q].size() + 1 > chip.imem_instructions)
        throw core::ConfigError(fmt::format("{}: queue {} has {} instructions; imem_instructions is {}", chip.name(), q,
                                            p.queues[q].size(), chip.imem_instructions.get()));
      std::vector<uint8_t> image = sw::encode_queue(p.queues[q]);
      sys.host.write(c, tsp::kImemBase + q * tsp::kImemStride, image.data(), image.size());
    }
    instructions += p.instructions();
    if (!p.queues.empty()) sys.chips[c]->start();
    sw::Program().queues.swap(p.queues);  // the chip has it now
  }
  return instructions;
}

/// Seeded inputs, loaded slice by slice straight into each rank's SRAM, and the
/// host reference of every rank's output. Chip inputs are seeded from the
/// chip's hierarchical name; reductions follow the schedule's order: the TSPs
/// of a node in order, then the nodes of a rack, then the racks.
class Workload {
 public:
  Workload(platform::System& sys, const sched::Machine& m, const sched::Plan& plan, const sched::Request& req)
      : m_sys(sys), m_m(m), m_plan(plan), m_req(req) {}

  void load() {
    using sched::Kind;
    const uint32_t P = m_m.size();
    const uint64_t N = m_plan.input_bytes;
    const bool sum = m_req.kind == Kind::allreduce || m_req.kind == Kind::reducescatter;
    if (sum) m_acc.assign(3, std::vector<uint8_t>(N));
    if (m_req.kind == Kind::allgather) m_ref.resize(static_cast<uint64_t>(P) * N);
    if (m_req.kind == Kind::broadcast || m_req.kind == Kind::p2p) m_ref.resize(N);
    std::vector<uint8_t> slice(std::min<uint64_t>(std::max<uint64_t>(N, 1), 1u << 20));
    for (uint32_t r = 0; r < P; ++r) {
      if (m_plan.inputs[r].empty()) continue;
      const sched::Coord c = m_m.coord[r];
      for (uint64_t pos = 0; pos < N; pos += slice.size()) {
        uint64_t len = std::min<uint64_t>(slice.size(), N - pos);
        core::random_elements(m_req.dtype, seed(r), slice.data(), len, pos, P);
        uint64_t base = 0;  // scatter stream bytes [pos, pos + len) over the rank's input regions
        for (const sched::Region& reg : m_plan.inputs[r]) {
          uint64_t lo = std::max(pos, base), hi = std::min(pos + len, base + reg.bytes);
          if (lo < hi)
            m_sys.host.write(m_m.ranks[r], static_cast<uint64_t>(reg.vec) * tsp::kVectorBytes + (lo - base),
                             slice.data() + (lo - pos), hi - lo);
          base += reg.bytes;
        }
        if (sum)
          fold(m_acc[0].data() + pos, slice.data(), len, c.tsp == 0);
        else if (m_req.kind == Kind::allgather)
          std::memcpy(m_ref.data() + m_plan.collective_rank[r] * N + pos, slice.data(), len);
        else if (!m_ref.empty())
          std::memcpy(m_ref.data() + pos, slice.data(), len);
      }
      if (sum && c.tsp + 1 == m_m.tsps_per_node) {
        fold(m_acc[1].data(), m_acc[0].data(), N, c.node == 0);
        if (c.node + 1 == m_m.nodes_per_rack) fold(m_acc[2].data(), m_acc[1].data(), N, c.rack == 0);
      }
    }
  }

  /// Expected bytes [pos, pos + len) of rank r's output stream.
  void expected(uint32_t r, uint64_t pos, uint8_t* out, uint64_t len) const {
    using sched::Kind;
    const uint64_t N = m_plan.input_bytes;
    switch (m_req.kind) {
      case Kind::allreduce: std::memcpy(out, m_acc[2].data() + pos, len); break;
      case Kind::reducescatter:
        std::memcpy(out, m_acc[2].data() + m_plan.collective_rank[r] * (N / m_m.size()) + pos, len);
        break;
      case Kind::allgather:
      case Kind::broadcast:
      case Kind::p2p: std::memcpy(out, m_ref.data() + pos, len); break;
      case Kind::alltoall: {
        // Block s of rank r's output is block r of rank s's input.
        const uint64_t block = N / m_m.size();
        while (len) {
          uint64_t s = pos / block, in = pos % block, n = std::min<uint64_t>(len, block - in);
          core::random_elements(m_req.dtype, seed(static_cast<uint32_t>(s)), out, n, r * block + in, m_m.size());
          out += n;
          pos += n;
          len -= n;
        }
        break;
      }
    }
  }

 private:
  uint64_t seed(uint32_t r) const { return m_sys.chips[m_m.ranks[r]]->seed_for("workload_input"); }
  void fold(uint8_t* acc, const uint8_t* x, uint64_t len, bool first) const {
    if (first)
      std::memcpy(acc, x, len);
    else
      core::add(m_req.dtype, acc, acc, x, len);
  }

  platform::System& m_sys;
  const sched::Machine& m_m;
  const sched::Plan& m_plan;
  const sched::Request& m_req;
  std::vector<std::vector<uint8_t>> m_acc;  // per level: node, rack, system partial sums
  std::vector<uint8_t> m_ref;
};

void print_links(const platform::System& sys, uint64_t sim_end) {
  auto util = [](const c2c::Channel& ch) { return ch.utilization_pct(); };
  fmt::print("\n  {:<28} {:>8} {:>8} {:>10}   (busy share of {} simulated)\n", "link", "a->b", "b->a", "vectors",
             human_time(sim_end));
  if (sys.links.size() <= 64) {
    for (const c2c::Link* l : sys.links)
      fmt::print("  {:<28} {:>7.1f}% {:>7.1f}% {:>10}\n", l->name(), util(l->a_to_b), util(l->b_to_a),
                 l->a_to_b.packets.get() + l->b_to_a.packets.get());
    return;
  }
  double lo = 100, hi = 0, sum = 0;
  for (const c2c::Link* l : sys.links)
    for (const c2c::Channel* ch : {&l->a_to_b, &l->b_to_a}) {
      double u = util(*ch);
      lo = std::min(lo, u);
      hi = std::max(hi, u);
      sum += u;
    }
  fmt::print("  {} link directions: utilization min {:.1f}% mean {:.1f}% max {:.1f}%\n", 2 * sys.links.size(), lo,
             sum / (2 * sys.links.size()), hi);
}

int run_impl(const RunOptions& opt) {
  const auto wall0 = Clock::now();
  core::Context& ctx = core::Context::get();
  ctx.set_seed(opt.seed);
  ctx.set_attempt(opt.attempt);
  ctx.config().load_file(opt.platform);
  for (const auto& o : opt.overrides) ctx.config().add_override(o);
  if (const core::ConfigEntry* t = ctx.config().find("sys.topology"); t && t->value == "torus")
    return run_torus(opt);  // NPU/ACE platforms: sw/runtime/torus_runner.cpp

  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec) throw core::ConfigError(fmt::format("{}: cannot create output directory: {}", opt.out_dir, ec.message()));
  if (opt.trace) ctx.trace().open((fs::path(opt.out_dir) / "trace.json").string(), opt.trace_from_ps, opt.trace_to_ps);

  // ---- elaborate ----
  RunParams rp;
  platform::System sys("sys");
  ctx.config().check_all_used(platform::parameter_names());
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // complete elaboration: sockets are bound from here on
  const uint64_t config_hash = write_effective_config((fs::path(opt.out_dir) / "config.yaml").string(), opt);
  const uint32_t n = static_cast<uint32_t>(sys.chips.size());

  // ---- software ----
  const bool collective = opt.programs_dir.empty();
  sched::Request req;
  sched::Plan plan;
  const sched::Machine machine = machine_of(sys);
  if (collective) {
    if (!sched::parse_kind(opt.workload, req.kind))
      throw core::ConfigError(fmt::format(
          "--workload '{}': expected allreduce, allgather, reducescatter, broadcast, alltoall or p2p", opt.workload));
    req.bytes = opt.bytes;
    req.dtype = opt.dtype;
    req.root = opt.root;
    req.peer = opt.peer;
    req.chunk_vectors = rp.chunk_vectors;
    req.staging_chunks = rp.staging_chunks;
    req.min_piece_vectors = rp.min_piece_vectors;
    sched::parse_routing(rp.routing, req.routing);
    req.max_paths = rp.paths;
    plan = sched::plan(machine, req);
  }
  const bool text = n <= rp.save_programs_max_chips;
  std::vector<sw::Program> programs = make_programs(opt, sys, collective ? &plan : nullptr, text);
  plan.programs.clear();
  // Static check of what is about to run, independent of the scheduler.
  const sched::CheckReport schedule_check = sched::check_schedule(machine, programs);
  for (size_t i = 0; i < schedule_check.violations.size() && i < 5; ++i) {
    const sched::Violation& v = schedule_check.violations[i];
    fmt::print(stderr, "fabricvp: schedule check: {} at cycle {}: {}\n", v.where, v.cycle, v.what);
  }
  const size_t instructions = load_programs(sys, std::move(programs));
  // The compiler's working set (routes, readiness per vector, reservations) is
  // freed by now; hand the heap pages back to the OS before the SRAM contents
  // (their own mappings) grow, so the two never count together in the peak.
  ::malloc_trim(0);
  const double setup_wall = since(wall0);

  // ---- data ----
  const auto load0 = Clock::now();
  Workload data(sys, machine, plan, req);
  if (collective) data.load();
  const double load_wall = since(load0);

  // ---- simulate ----
  const auto sim0 = Clock::now();
  sc_core::sc_start();
  for (tsp::Tsp* t : sys.chips) t->finish();
  const double sim_wall = since(sim0);
  const uint64_t sim_end = sc_core::sc_time_stamp().value();
  uint64_t completion = 0;
  for (tsp::Tsp* t : sys.chips) completion = std::max(completion, t->last_write_ps());
  const bool hw_ok = ctx.hw_errors().empty();

  // ---- check ----
  const auto check0 = Clock::now();
  CheckResult check;
  if (collective && hw_ok)
    check = check_outputs(
        sys.host, machine.ranks, plan.outputs,
        [&data](uint32_t r, uint64_t pos, uint8_t* out, uint64_t len) { data.expected(r, pos, out, len); }, req.dtype);
  const double check_wall = since(check0);
  for (tsp::Tsp* t : sys.chips) t->release_sram();  // results are checked: the memory can go
  const bool verified = collective && hw_ok && check.mismatched == 0;
  const bool timing_ok = !collective || !hw_ok || completion == plan.predicted_ps;
  const bool machine_check = !hw_ok && ctx.hw_errors()[0].machine_check;
  const bool will_replay = machine_check && opt.attempt < opt.max_replays;
  const std::string status = machine_check             ? (will_replay ? "machine_check_replayed" : "machine_check")
                             : !hw_ok                  ? "hardware_error"
                             : collective && !verified ? "mismatch"
                             : !timing_ok              ? "timing_mismatch"
                                                       : "ok";

  // ---- statistics ----
  RunStats rs;
  rs.status.set(status);
  rs.hardware_errors.set(ctx.hw_errors().size());
  rs.chips.set(n);
  rs.links.set(sys.links.size());
  rs.instructions.set(instructions);
  rs.schedule_violations.set(schedule_check.violations.size());
  rs.set(opt, config_hash, sim_end, wall0, setup_wall, load_wall, sim_wall, check_wall);

  PhyStats ps;
  {
    uint64_t v[8] = {};
    for (const c2c::Link* l : sys.links)
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
  ReplayStats rps;
  {
    rps.replays.set(opt.attempt);
    uint64_t lost = 0;
    std::string where;
    for (const auto& m : opt.history) {
      lost += m.time_ps;
      where += (where.empty() ? "" : ",") + m.link;
    }
    rps.replayed_ps.set(lost);
    rps.machine_checks.set(where);
  }

  const double link_GBps = sys.links.empty() ? 0.0 : sys.links[0]->payload_GBps();
  const uint32_t P = machine.size();
  // The (n-1) x link bound holds for one fully wired node, where every rank has
  // a direct cable to every other; elsewhere no single number bounds busbw.
  const bool one_node = sys.chips.size() == P && P == sys.tsps_per_node && sys.node_wiring.get() == "full";
  const double peak_bus = one_node ? (P - 1) * link_GBps : 0.0;
  const double algbw = completion ? static_cast<double>(req.bytes) / (completion * 1e-12) / 1e9 : 0.0;
  const double busbw = algbw * plan.bus_factor;
  std::optional<WorkloadStats> ws;
  if (collective) {
    ws.emplace();
    ws->kind.set(opt.workload);
    ws->bytes.set(req.bytes);
    ws->dtype.set(core::dtype_name(req.dtype));
    ws->root.set(req.root);
    ws->verified.set(verified);
    ws->mismatched.set(check.mismatched);
    ws->predicted_ps.set(plan.predicted_ps);
    ws->simulated_ps.set(completion);
    ws->algbw.set(algbw);
    ws->busbw.set(busbw);
    ws->bus_factor.set(plan.bus_factor);
    ws->peak_busbw.set(peak_bus);
    ws->busbw_pct.set(peak_bus > 0 ? 100.0 * busbw / peak_bus : 0.0);
    ws->chunk_vectors.set(plan.chunk_vectors);
    ws->staging_chunks.set(plan.staging_chunks);
    ws->ranks.set(P);
    std::string levels;
    for (uint32_t g : plan.levels) levels += (levels.empty() ? "" : "x") + std::to_string(g);
    ws->levels.set(levels);
    std::string rings;
    for (uint32_t r : plan.level_staging) rings += (rings.empty() ? "" : "x") + std::to_string(r);
    ws->level_staging.set(rings);
    ws->max_hops.set(plan.max_hops);
    ws->paths.set(plan.paths);
    ws->bursts.set(plan.bursts);
    ws->forwarded.set(plan.forwarded_vectors);
    ws->scratch.set(plan.scratch_vectors);
    ws->peer.set(req.peer);
  }
  {
    const std::string file = will_replay ? fmt::format("stats.attempt{}.json", opt.attempt) : "stats.json";
    std::ofstream f(fs::path(opt.out_dir) / file);
    core::write_stats_json(f);
  }
  if (will_replay) {
    const core::HardwareError& e = ctx.hw_errors()[0];
    fmt::print(
        "fabricvp: attempt {}: machine check at {} on {} (data flagged by {}); replaying the program from the "
        "start ({} of {} replays)\n",
        opt.attempt, human_time(e.time_ps), e.where, e.source, opt.attempt + 1, opt.max_replays);
    if (opt.report_fd >= 0) {
      const std::string line = fmt::format("{} {} {}\n", e.time_ps, e.source, e.where);
      if (::write(opt.report_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error("cannot report the machine check to the replaying runtime");
    }
    ctx.trace().close();
    return kMachineCheck;
  }
  ctx.trace().close();

  // ---- summary ----
  if (!opt.quiet) {
    fmt::print("\nfabricvp {}  {}  ({} TSPs, {} links)  seed {}\n", kVersion, opt.platform, n, sys.links.size(),
               opt.seed);
    if (!sys.description.get().empty()) fmt::print("  {}\n", sys.description.get());
    if (collective) {
      std::string detail;
      if (req.kind == sched::Kind::broadcast) detail = fmt::format(", root rank {}", req.root);
      if (req.kind == sched::Kind::p2p)
        detail = fmt::format(", rank {} -> rank {} over {} route(s)", req.root, req.peer, plan.paths);
      if (plan.chunk_vectors) {
        std::string rings;
        for (uint32_t r : plan.level_staging) rings += (rings.empty() ? "" : "/") + std::to_string(r);
        detail = fmt::format(", reduced in chunks of {} vectors, staging ring{} {}", plan.chunk_vectors,
                             plan.level_staging.size() > 1 ? "s" : "", rings);
      }
      fmt::print("  workload     {} {} {} ({} bytes){}\n", opt.workload, human_bytes(req.bytes),
                 core::dtype_name(req.dtype), req.bytes, detail);
      std::string levels;
      for (uint32_t g : plan.levels) levels += (levels.empty() ? "" : " x ") + std::to_string(g);
      fmt::print("  schedule     {} ranks{}, levels {}, longest route {} cables, {} bursts, {} vectors forwarded\n", P,
                 P < n ? fmt::format(" on {} chips", n) : "", levels, plan.max_hops, plan.bursts,
                 plan.forwarded_vectors);
    } else {
      fmt::print("  programs     {} ({} instructions)\n", opt.programs_dir, instructions);
    }
    fmt::print("  checked      {} SENDs, {} RECVs, {} ALU bursts statically: {}\n", schedule_check.sends,
               schedule_check.recvs, schedule_check.alu_ops,
               schedule_check.violations.empty()
                   ? (schedule_check.skipped_sync ? "no conflicts (SYNC/NOTIFY queues not analysed)" : "no conflicts")
                   : fmt::format("{} CONFLICT(S), first: {}: {}", schedule_check.violations.size(),
                                 schedule_check.violations[0].where, schedule_check.violations[0].what));
    if (ps.codewords.get() > 0 && (ps.bit_errors.get() > 0 || opt.attempt > 0))
      fmt::print(
          "  phy          {} FEC codewords, {} bit errors injected: {} corrected ({} symbols), {} uncorrectable "
          "({} vectors flagged), {} miscorrected ({} vectors silently corrupted)\n",
          ps.codewords.get(), ps.bit_errors.get(), ps.corrected_codewords.get(), ps.corrected_symbols.get(),
          ps.uncorrectable_codewords.get(), ps.flagged_vectors.get(), ps.miscorrected_codewords.get(),
          ps.silent_corrupted_vectors.get());
    if (opt.attempt > 0) {
      std::string list;
      for (const auto& m : opt.history)
        list += fmt::format("{}{} at {}", list.empty() ? "" : "; ", m.link, human_time(m.time_ps));
      fmt::print("  replays      {} after machine checks ({}); {} lost before this attempt\n", opt.attempt, list,
                 human_time(rps.replayed_ps.get()));
    }
    if (!hw_ok) {
      fmt::print("  result       FAILED: {} hardware error(s); first: {}: {}\n", ctx.hw_errors().size(),
                 ctx.hw_errors()[0].where, ctx.hw_errors()[0].message);
      if (machine_check) {
        const std::string& link = ctx.hw_errors()[0].source;
        bool same = !opt.history.empty();
        for (const auto& m : opt.history) same &= m.link == link;
        fmt::print("               {}\n",
                   same ? fmt::format("persistent fault: {} flagged data on all {} attempts (a marginal link?)", link,
                                      opt.attempt + 1)
                        : fmt::format("gave up after {} replay(s) (run --max-replays N to allow more)", opt.attempt));
      }
      double worst_ppm = 0;
      for (const tsp::Tsp* t : sys.chips) worst_ppm = std::max(worst_ppm, std::abs(t->clock().ppm()));
      if (collective && !machine_check && worst_ppm > 0)
        fmt::print(
            "               note: chips run up to {:.1f} ppm off nominal; compiled collectives assume nominal "
            "clocks and carry no RUNTIME_DESKEW (docs/clocks.md)\n",
            worst_ppm);
    } else if (collective) {
      if (verified)
        fmt::print("  result       verified: {}/{} ranks bit-exact against the host reference\n", check.ranks_ok,
                   check.ranks_checked);
      else
        fmt::print("  result       MISMATCH: {} element(s) differ on {} rank(s)\n", check.mismatched,
                   check.ranks_checked - check.ranks_ok);
      for (const auto& m : check.first)
        fmt::print("               rank {} ({}) byte {}: expected {} got {}\n", m.rank,
                   sys.chips[machine.ranks[m.rank]]->name(), m.byte, m.expected, m.got);
      fmt::print(
          "  completion   simulated {} ({} ps), predicted {} ({})\n", human_time(completion), completion,
          human_time(plan.predicted_ps),
          timing_ok ? "equal" : fmt::format("DIFFERS by {} ps", static_cast<int64_t>(completion - plan.predicted_ps)));
      if (peak_bus > 0)
        fmt::print("  bandwidth    algbw {:.2f} GB/s, busbw {:.2f} GB/s = {:.1f}% of {} x {:.3f} GB/s link payload\n",
                   algbw, busbw, 100.0 * busbw / peak_bus, P - 1, link_GBps);
      else
        fmt::print("  bandwidth    algbw {:.2f} GB/s, busbw {:.2f} GB/s (link payload {:.3f} GB/s)\n", algbw, busbw,
                   link_GBps);
    } else {
      fmt::print("  result       ran to completion; last SRAM write at {}\n", human_time(completion));
    }
    fmt::print(
        "  host         wall {:.2f} s (setup {:.2f}, load {:.2f}, simulate {:.2f}, check {:.2f}), peak RSS {:.0f} "
        "MiB\n               {:.0f} simulated ns per wall second of simulation\n",
        rs.wall_s.get(), setup_wall, load_wall, sim_wall, check_wall, rs.peak_rss_mib.get(),
        rs.sim_ns_per_wall_s.get());
    if (!sys.links.empty()) print_links(sys, sim_end);
    fmt::print("\n  outputs      {}/stats.json  {}/config.yaml{}{}\n", opt.out_dir, opt.out_dir,
               collective ? fmt::format("  {}/programs/", opt.out_dir) : "",
               opt.trace ? fmt::format("  {}/trace.json", opt.out_dir) : "");
  }
  if (!hw_ok) return kHardwareError;
  if (collective && !verified) return kMismatch;
  if (!timing_ok) {
    fmt::print(stderr, "fabricvp: error: simulated completion {} ps differs from the scheduler's prediction {} ps\n",
               completion, plan.predicted_ps);
    return kTimingMismatch;
  }
  return kOk;
}

int run_guarded(const RunOptions& opt) {
  try {
    return run_impl(opt);
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return kInputError;
  } catch (const std::exception& e) {
    // A model invariant broke (a fabricvp bug, never a user error): say so plainly.
    fmt::print(stderr, "fabricvp: internal error: {}\n", e.what());
    return kInternalError;
  }
}

}  // namespace

int run(const RunOptions& opt) {
  if (opt.max_replays == 0) return run_guarded(opt);
  // Software replay (seed 000 §4.5). SystemC elaborates once per process and
  // cannot rewind, so every attempt runs in a fresh child process; the parent
  // only keeps the history of machine checks, which the next attempt reports.
  RunOptions cur = opt;
  for (uint32_t attempt = 0;; ++attempt) {
    cur.attempt = attempt;
    int fds[2];
    if (::pipe(fds) != 0) return run_guarded(opt);  // no replay possible: one attempt in this process
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return run_guarded(opt);
    }
    if (pid == 0) {
      ::close(fds[0]);
      cur.report_fd = fds[1];
      const int rc = run_guarded(cur);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(rc);
    }
    ::close(fds[1]);
    std::string report;
    char buf[512];
    for (ssize_t got; (got = ::read(fds[0], buf, sizeof buf)) != 0;) {
      if (got < 0) {
        if (errno == EINTR) continue;
        break;
      }
      report.append(buf, static_cast<size_t>(got));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status)) {
      fmt::print(stderr, "fabricvp: internal error: the simulation process ended by signal {}\n",
                 WIFSIGNALED(status) ? WTERMSIG(status) : -1);
      return kInternalError;
    }
    const int rc = WEXITSTATUS(status);
    if (rc != kMachineCheck) return rc;
    RunOptions::MachineCheck m{};
    std::istringstream in(report);
    if (!(in >> m.time_ps >> m.link >> m.chip)) {
      fmt::print(stderr, "fabricvp: internal error: attempt {} ended in a machine check without a report\n", attempt);
      return kInternalError;
    }
    cur.history.push_back(m);
  }
}

}  // namespace fabricvp::runtime
