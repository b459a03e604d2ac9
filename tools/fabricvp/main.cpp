// fabricvp command line.
//   fabricvp run <platform.yaml> [--workload K --bytes N --dtype T | --programs DIR] [options]
//   fabricvp params <platform.yaml> [-p key=value ...]     list every parameter
//   fabricvp asm <program.s> [-o text]                     check and normalize a program
//   fabricvp version
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <systemc>

#include "fabricvp_version.h"

#include "tools/fabricvp/commands.h"

#include "models/core/context.h"
#include "models/core/kernel.h"
#include "models/core/module.h"
#include "platforms/system.h"
#include "platforms/torus.h"
#include "sw/asm/program.h"
#include "sw/runtime/experiments.h"
#include "sw/runtime/report.h"
#include "sw/runtime/runner.h"
#include "sw/sched/routing.h"

using namespace fabricvp;

namespace {

/// NPU torus platforms elaborate a TorusSystem (platforms/torus.h), TSP machines a System.
bool is_torus() {
  const core::ConfigEntry* t = core::Context::get().config().find("sys.topology");
  return t && t->value == "torus";
}

/// The torus as `topology` describes it: NPUs, rings and links per dimension.
int torus_topology(const std::string& platform) {
  platform::TorusSystem sys("sys");
  core::Context::get().config().check_all_used(platform::parameter_names());
  fmt::print("fabricvp topology  {}\n  {} NPUs: {} local x {} vertical x {} horizontal\n", platform, sys.npus.size(),
             sys.local_npus.get(), sys.vertical_npus.get(), sys.horizontal_npus.get());
  const char* dims[3] = {"local", "vertical", "horizontal"};
  for (uint32_t d = 0; d < 3; ++d) {
    uint32_t count = 0;
    const npu::FabricLink* example = nullptr;
    for (size_t i = 0; i < sys.links.size(); ++i)
      if (sys.link_dim[i] == d) {
        ++count;
        if (!example) example = sys.links[i].get();
      }
    if (!example) continue;
    fmt::print("  {:<10} {:>4} links, {:.1f} GB/s x {:.2f} efficiency, {} cycles at {:.0f} MHz (e.g. {})\n", dims[d],
               count, example->GBps.get(), example->efficiency.get(), example->latency_cycles.get(),
               example->clock_mhz.get(), example->name());
  }
  return 0;
}

int cmd_params(const std::string& platform, const std::vector<std::string>& overrides) {
  try {
    auto& ctx = core::Context::get();
    ctx.config().load_file(platform);
    for (const auto& o : overrides) ctx.config().add_override(o);
    std::unique_ptr<runtime::RunParams> rp;
    std::unique_ptr<sc_core::sc_module> sys;
    if (is_torus()) {
      sys = std::make_unique<platform::TorusSystem>("sys");
    } else {
      rp = std::make_unique<runtime::RunParams>();
      sys = std::make_unique<platform::System>("sys");
    }
    ctx.config().check_all_used(platform::parameter_names());
    fmt::print("{:<44} {:>12} {:<8} {:<14} {}\n", "parameter", "value", "unit", "set by", "description");
    for (const core::ParamBase* p : core::all_params())
      fmt::print("{:<44} {:>12} {:<8} {:<14} {}\n", p->name(), p->value_str(), p->unit(),
                 p->source() ? p->source()->origin.str() : "default", p->description());
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

/// Elaborate a platform and describe it: chips, cables by kind, the job's
/// ranks, and minimal-route hop counts from a sample of sources.
int cmd_topology(const std::string& platform, const std::vector<std::string>& overrides, uint32_t sources,
                 const std::string& json_out) {
  try {
    auto& ctx = core::Context::get();
    ctx.config().load_file(platform);
    for (const auto& o : overrides) ctx.config().add_override(o);
    if (is_torus()) return torus_topology(platform);
    runtime::RunParams rp;
    platform::System sys("sys");
    ctx.config().check_all_used(platform::parameter_names());
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
    fmt::print("  job: {} ranks (levels {} x {} x {}), {} chips on failed nodes, {} spare or unused\n",
               sys.ranks.size(), sys.tsps_per_node.get(), sys.logical_nodes_per_rack, sys.logical_racks, failed_chips,
               sys.chips.size() - sys.ranks.size() - failed_chips);
    sched::Machine m = runtime::machine_of(sys);
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
    const double rss = runtime::peak_rss_mib();
    fmt::print("  peak RSS {:.0f} MiB\n", rss);
    if (!json_out.empty()) {
      nlohmann::json j = {{"platform", platform},           {"chips", sys.chips.size()},
                          {"ranks", sys.ranks.size()},      {"cables", sys.cables.size()},
                          {"bisection_cables", crossing},   {"bisection_tsps", left},
                          {"link_payload_GBps", link},      {"bisection_GBps_per_tsp", per_tsp},
                          {"route_cables_histogram", hist}, {"peak_rss_mib", rss}};
      std::ofstream(json_out) << j.dump(1) << "\n";
    }
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

int cmd_asm(const std::string& file, const std::string& out) {
  try {
    sw::Program p = sw::assemble_file(file);
    std::string text = sw::disassemble(p);
    if (!out.empty()) {
      std::ofstream f(out);
      if (!f) throw core::ConfigError(fmt::format("{}: cannot write", out));
      f << text;
    }
    size_t used = 0;
    for (const auto& q : p.queues) used += !q.empty();
    fmt::print("{}: {} instructions in {} queue(s){}\n", file, p.instructions(), used,
               p.target.empty() ? "" : fmt::format(", for {}", p.target));
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace

int sc_main(int argc, char** argv) {
  core::init_kernel();
  CLI::App app{"fabricvp: SystemC/TLM-2.0 virtual platform of ML interconnect hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", FABRICVP_VERSION);

  runtime::RunOptions opt;
  std::string bytes = "64MiB", dtype = "fp32", window;
  auto* run = app.add_subcommand("run", "simulate a platform running a collective (checked) or given programs");
  run->add_option("platform", opt.platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  run->add_option("--workload,-w", opt.workload, "allreduce | allgather | reducescatter | broadcast | alltoall | p2p");
  run->add_option("--bytes,-b", bytes, "collective size: 4096, 100KiB, 64MiB, 1GiB (nccl-tests convention)");
  run->add_option("--dtype,-t", dtype, "fp32 | bf16 | fp16 | int32");
  run->add_option("--root,--src", opt.root, "broadcast root rank; p2p source rank");
  run->add_option("--peer,--dst", opt.peer, "p2p destination rank");
  run->add_option("--programs", opt.programs_dir,
                  "run hand-written programs <DIR>/<chip name>.s instead of a collective");
  run->add_option("--seed,-s", opt.seed, "random seed (inputs; every random stream derives from it)");
  run->add_option("--out,-o", opt.out_dir, "output directory (stats.json, config.yaml, programs/, trace.json)");
  run->add_flag("--trace", opt.trace, "write a Perfetto/Chrome trace to <out>/trace.json");
  run->add_option("--trace-window", window, "only trace [from:to], e.g. 0:10us");
  run->add_option("-p,--param", opt.overrides, "override a parameter: key=value (glob '*' allowed)");
  run->add_flag("--quiet,-q", opt.quiet, "no summary table");
  run->add_option("--max-replays", opt.max_replays,
                  "replay the program from the start after a machine check (uncorrectable FEC codeword) up to N "
                  "times; 0: fail at the first");
  std::string ber, burst;
  run->add_option("--ber", ber, "bit-error rate on every link (sets sys.phy.ber)");
  run->add_option("--burst", burst,
                  "error bursts on every link: RATE[:MEAN_BITS] (sets sys.phy.burst_rate, burst_length_mean)");

  std::string params_platform;
  std::vector<std::string> params_overrides;
  auto* params = app.add_subcommand("params", "list every parameter of a platform with value, unit and origin");
  params->add_option("platform", params_platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  params->add_option("-p,--param", params_overrides, "override a parameter: key=value");

  std::string topo_platform;
  std::vector<std::string> topo_overrides;
  uint32_t topo_sources = 64;
  auto* topo = app.add_subcommand("topology", "elaborate a platform; print its cables, job ranks and route lengths");
  topo->add_option("platform", topo_platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  topo->add_option("-p,--param", topo_overrides, "override a parameter: key=value");
  topo->add_option("--sources", topo_sources, "source ranks sampled for the route-length histogram (all: >= ranks)");
  std::string topo_json;
  topo->add_option("--json", topo_json, "also write the numbers to this JSON file");

  runtime::ExperimentOptions ex;
  auto* exp = app.add_subcommand("experiment", "run a study (seeds 000, 002) made of many checked simulations");
  exp->add_option("name", ex.name, "nonminimal | hop-latency | allreduce-sweep | bandwidth-profile | ace")->required();
  exp->add_option("--jobs,-j", ex.jobs, "simulations at a time");
  exp->add_option("--out,-o", ex.out_dir, "output directory (<out>/<name>.json and one folder per run)");
  exp->add_flag("--quick", ex.quick, "fewer and smaller points");

  std::string asm_file, asm_out;
  auto* as = app.add_subcommand("asm", "assemble a TSP program, report errors with file:line, print a summary");
  as->add_option("program", asm_file, "assembly file")->required();
  as->add_option("-o,--output", asm_out, "write the normalized program text here");

  std::vector<cli::Handler> more;
  for (const auto& setup : cli::setups()) more.push_back(setup(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (*run) {
    try {
      opt.bytes = runtime::parse_bytes(bytes);
      if (!core::parse_dtype(dtype, opt.dtype))
        throw core::ConfigError(fmt::format("--dtype '{}': expected fp32, bf16, fp16 or int32", dtype));
      if (!ber.empty()) opt.overrides.insert(opt.overrides.begin(), "sys.phy.ber=" + ber);
      if (!burst.empty()) {
        const auto colon = burst.find(':');
        opt.overrides.insert(opt.overrides.begin(), "sys.phy.burst_rate=" + burst.substr(0, colon));
        if (colon != std::string::npos)
          opt.overrides.insert(opt.overrides.begin() + 1, "sys.phy.burst_length_mean=" + burst.substr(colon + 1));
      }
      if (!window.empty()) {
        auto colon = window.find(':');
        if (colon == std::string::npos) throw core::ConfigError("--trace-window expects from:to, e.g. 0:10us");
        opt.trace_from_ps = runtime::parse_time_ps(window.substr(0, colon));
        opt.trace_to_ps = runtime::parse_time_ps(window.substr(colon + 1));
        opt.trace = true;
      }
    } catch (const core::ConfigError& e) {
      fmt::print(stderr, "fabricvp: error: {}\n", e.what());
      return runtime::kInputError;
    }
    return runtime::run(opt);
  }
  if (*params) return cmd_params(params_platform, params_overrides);
  if (*as) return cmd_asm(asm_file, asm_out);
  if (*exp) return runtime::run_experiment(ex);
  if (*topo) return cmd_topology(topo_platform, topo_overrides, topo_sources, topo_json);
  for (const auto& h : more)
    if (*h.sub) return h.run();
  return 1;
}
