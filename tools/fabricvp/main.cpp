// fabricvp command line.
//   fabricvp run <platform.yaml> [--workload K --bytes N --dtype T | --programs DIR] [options]
//   fabricvp params <platform.yaml> [-p key=value ...]     list every parameter
//   fabricvp asm <program.s> [-o text]                     check and normalize a program
//   fabricvp version
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <systemc>

#include "fabricvp_version.h"

#include "models/core/context.h"
#include "models/core/module.h"
#include "platforms/system.h"
#include "sw/asm/program.h"
#include "sw/runtime/runner.h"

using namespace fabricvp;

namespace {

int cmd_params(const std::string& platform, const std::vector<std::string>& overrides) {
  try {
    auto& ctx = core::Context::get();
    ctx.config().load_file(platform);
    for (const auto& o : overrides) ctx.config().add_override(o);
    runtime::RunParams rp;
    platform::System sys("sys");
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

  std::string params_platform;
  std::vector<std::string> params_overrides;
  auto* params = app.add_subcommand("params", "list every parameter of a platform with value, unit and origin");
  params->add_option("platform", params_platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  params->add_option("-p,--param", params_overrides, "override a parameter: key=value");

  std::string asm_file, asm_out;
  auto* as = app.add_subcommand("asm", "assemble a TSP program, report errors with file:line, print a summary");
  as->add_option("program", asm_file, "assembly file")->required();
  as->add_option("-o,--output", asm_out, "write the normalized program text here");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (*run) {
    try {
      opt.bytes = runtime::parse_bytes(bytes);
      opt.dtype = tsp::parse_dtype(dtype);
      if (opt.dtype == tsp::Dtype::none)
        throw core::ConfigError(fmt::format("--dtype '{}': expected fp32, bf16, fp16 or int32", dtype));
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
  return 1;
}
