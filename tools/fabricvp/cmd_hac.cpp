// `fabricvp hac <platform.yaml> --iterations N [--json FILE]`: HAC latency
// characterization of every live cable (seed 000 Table 2), then parent/child
// alignment over the spanning tree and the initial program alignment of §3.2,
// all simulated (docs/clocks.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <systemc>

#include "models/core/context.h"
#include "models/core/output_file.h"
#include "runtime/driver.h"
#include "sw/asm/program.h"
#include "systems/groq/programs.h"
#include "systems/groq/system.h"
#include "systems/kind.h"
#include "tools/fabricvp/commands.h"

using namespace fabricvp;

namespace {

struct HacOptions {
  std::string platform;
  std::vector<std::string> overrides;
  uint64_t iterations = 100000;
  uint64_t align_exchanges = 1024;
  uint64_t seed = 1;
  std::string json;
};

sc_core::sc_time ps(double v) { return sc_core::sc_time::from_value(static_cast<uint64_t>(std::ceil(v))); }

int run_hac(const HacOptions& o) {
  try {
    if (o.iterations == 0 || o.iterations > 100000000)
      throw core::ConfigError(fmt::format("--iterations {}: expected 1 .. 100000000", o.iterations));
    auto& ctx = core::Context::get();
    ctx.set_seed(o.seed);
    ctx.config().load_file(o.platform);
    if (const systems::Kind& k = systems::kind_for(ctx.config()); k.name != "groq")
      throw core::ConfigError(
          fmt::format("{}: a {} platform: hac characterizes the HAC clock alignment of Groq "
                      "platforms (groq_node, dragonfly)",
                      o.platform, k.name));
    ctx.config().add_override("sys.hac.exchange=on");
    ctx.config().add_override(fmt::format("sys.hac.calibration_iterations={}", o.iterations));
    for (const auto& ov : o.overrides) ctx.config().add_override(ov);
    groq::CompilerParams compiler;  // a platform file may set sched.* too
    groq::System sys("sys");
    ctx.config().check_all_used(systems::parameter_names());
    hac::Network& net = *sys.hac;
    if (!net.exchanging()) throw core::ConfigError("sys.hac.exchange is off: there is nothing to characterize");
    const auto& stats = net.link_stats();
    size_t live = 0;
    for (const auto& w : sys.cables) live += !w.failed;
    if (live == 0) throw core::ConfigError(fmt::format("{}: the platform has no live cable", o.platform));

    const uint32_t n = static_cast<uint32_t>(sys.chips.size());
    tsp::Tsp& root = *sys.chips[net.root()];
    const double period = root.clock().period_ps();
    const uint64_t per = net.exchange_cycles;
    // Phase 3's programs are loaded now (chips start at cycle 0); they wait until
    // characterization (phase 1) and convergence (phase 2) are over.
    const uint64_t cal_cycles = (o.iterations + 8) * per;
    const uint64_t begin = cal_cycles + (o.align_exchanges + 1) * per;
    uint32_t epochs = 0;
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    net.run_for(o.iterations + 8 + o.align_exchanges);
    sc_core::sc_start(ps(static_cast<double>(cal_cycles) * period));
    if (!net.calibrated())
      throw core::ConfigError("characterization did not complete (a cable without samples?); see the log");

    // ---- Table 2 ----
    fmt::print("fabricvp hac  {}  ({} TSPs, {} live cables)  {} iterations, seed {}\n", o.platform, n, live,
               o.iterations, o.seed);
    fmt::print("  link latency by HAC reflection, in cycles at {:.3f} MHz (seed 000 Table 2)\n", root.clock().mhz());
    fmt::print("  {:<34} {:>7} {:>8} {:>7} {:>6}\n", "link", "min", "mean", "max", "std");
    nlohmann::json js = nlohmann::json::array();
    for (size_t w = 0; w < stats.size(); ++w) {
      if (sys.cables[w].failed) continue;
      const hac::LinkStats& s = stats[w];
      fmt::print("  {:<34} {:>7.1f} {:>8.2f} {:>7.1f} {:>6.2f}\n", s.link, s.min, s.mean, s.max, s.std());
      js.push_back({{"link", s.link}, {"min", s.min}, {"mean", s.mean}, {"max", s.max}, {"std", s.std()}});
    }

    // ---- alignment over the spanning tree ----
    std::vector<std::vector<tsp::Instr>> progs = net.alignment_programs(begin, epochs);
    for (uint32_t c = 0; c < n; ++c) {
      if (progs[c].empty()) continue;
      std::vector<uint8_t> img = sw::encode_queue(progs[c]);
      sys.host.write(c, tsp::kImemBase, img.data(), img.size());
      sys.chips[c]->start();
    }
    sc_core::sc_start(ps(static_cast<double>(begin - cal_cycles) * period));
    double worst = 0;
    uint32_t worst_chip = net.root();
    for (uint32_t c = 0; c < n; ++c) {
      if (net.depth(c) <= 0) continue;
      const double off = std::fabs(net.offset_from_root(c));
      if (off > worst) worst = off, worst_chip = c;
    }
    double jitter = 0;  // largest half-range of a tree cable's characterized latency, per hop
    double lmax = 0;
    for (uint32_t c = 0; c < n; ++c) {
      const int32_t w = net.parent_cable(c);
      if (w < 0) continue;
      jitter = std::max(jitter, (stats[w].max - stats[w].min) / 2);
      lmax = std::max(lmax, stats[w].max);
    }
    uint32_t in_tree = 0;
    for (uint32_t c = 0; c < n; ++c) in_tree += net.depth(c) >= 0;
    fmt::print("  spanning tree: root {}, height {}, {} chips\n", root.name(), net.height(), in_tree);
    fmt::print(
        "  HAC alignment after {} exchanges: largest |HAC - HAC_root| = {:.2f} cycles ({}), "
        "link jitter half-range {:.1f} cycles per hop; {} adjustments\n",
        o.align_exchanges, worst, sys.chips[worst_chip]->name(), jitter, net.adjustments.get());

    // ---- initial program alignment (§3.2) ----
    sc_core::sc_start();
    for (tsp::Tsp* t : sys.chips) t->finish();
    if (!ctx.hw_errors().empty()) {
      fmt::print(stderr, "fabricvp: hardware error during initial alignment: {}\n", ctx.hw_errors()[0].message);
      return runtime::kHardwareError;
    }
    uint64_t b0 = 0, last_release = 0, first_start = UINT64_MAX, last_start = 0;
    for (const tsp::SyncEvent& e : root.sync_log())
      if (e.op == tsp::Op::DESKEW) {
        b0 = root.clock().ps(e.cycle);
        break;
      }
    for (uint32_t c = 0; c < n; ++c) {
      for (const tsp::SyncEvent& e : sys.chips[c]->sync_log()) {
        if (e.op == tsp::Op::POLL) last_release = std::max(last_release, sys.chips[c]->clock().ps(e.cycle));
        if (e.op == tsp::Op::NOTIFY) {
          const uint64_t t = sys.chips[c]->clock().ps(e.cycle);
          first_start = std::min(first_start, t);
          last_start = std::max(last_start, t);
        }
      }
    }
    const double measured = last_release > b0 ? static_cast<double>(last_release - b0) / period : 0.0;
    const uint64_t l = static_cast<uint64_t>(std::ceil(lmax));
    const uint64_t formula = (l / clock::kEpoch + 1) * net.height() * clock::kEpoch;
    fmt::print(
        "  initial alignment: last chip released {:.1f} cycles after the root's DESKEW boundary; "
        "(floor(L/252) + 1) * h * 252 = {} cycles (L = {} cycles, h = {})\n",
        measured, formula, l, net.height());
    fmt::print("  synchronized start after {} epochs; NOTIFY spread over chips {:.3f} ns\n", epochs,
               first_start <= last_start ? static_cast<double>(last_start - first_start) / 1e3 : 0.0);
    if (!o.json.empty()) {
      core::write_file(o.json, js.dump(1) + "\n", "alignment JSON");
    }
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return runtime::kInputError;
  }
}

cli::Command hac_cmd([](CLI::App& app) {
  auto* sub = app.add_subcommand("hac",
                                 "HAC link-latency characterization (seed 000 Table 2), alignment and "
                                 "initial program alignment");
  auto o = std::make_shared<HacOptions>();
  sub->add_option("platform", o->platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  sub->add_option("--iterations,-n", o->iterations, "reflection round trips per cable (seed 000: 100,000)")
      ->check(CLI::Range(uint64_t(1), uint64_t(100000000)));
  sub->add_option("--align-exchanges", o->align_exchanges, "exchanges of parent/child alignment before §3.2")
      ->check(CLI::Range(uint64_t(0), uint64_t(100000000)));
  sub->add_option("--json", o->json, "also write one object per link {link, min, mean, max, std} to this file");
  sub->add_option("--seed,-s", o->seed, "random seed");
  sub->add_option("-p,--param", o->overrides, "override a parameter: key=value (glob '*' allowed)");
  return cli::Handler{sub, [o] { return run_hac(*o); }};
});

}  // namespace
