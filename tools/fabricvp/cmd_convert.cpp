// fabricvp convert astra --network FILE [--system FILE] [-o platform.yaml]
// fabricvp convert astra --workload FILE.yaml [-o workload.txt]
// ASTRA-sim's inputs in fabricvp's terms (sw/training/astra.h): a network
// file (2.x YAML or 1.0 JSON), with a system file's collective settings, to a
// platform file; a YAML workload to ASTRA-sim 1.0's text form.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <string>

#include "models/core/config.h"
#include "models/core/output_file.h"
#include "sw/training/astra.h"
#include "sw/training/workload.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

struct Options {
  std::string network, system, workload, out;
};

void write(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    return;
  }
  core::write_file(path, text, "converted file");
}

int convert(const Options& o) {
  try {
    if (o.network.empty() == o.workload.empty())
      throw core::ConfigError("convert astra: give --network (with --system if you have one) or --workload");
    if (!o.workload.empty()) {
      if (!o.system.empty()) throw core::ConfigError("convert astra: --system goes with --network");
      std::vector<std::string> dropped;
      write(o.out, training::to_astra_text(training::load_workload(o.workload), &dropped));
      for (const std::string& d : dropped) fmt::print(stderr, "{}: not written: {}\n", o.workload, d);
      if (!o.out.empty() && o.out != "-") fmt::print(stderr, "wrote {} (ASTRA-sim 1.0 text)\n", o.out);
      return 0;
    }
    const training::astra::Network n = training::astra::read_network(o.network);
    training::astra::System s;
    if (!o.system.empty()) s = training::astra::read_system(o.system);
    write(o.out, training::astra::platform_yaml(n, s.overrides));
    for (const std::string& i : n.ignored)
      fmt::print(stderr, "{}: {} (not modeled by fabricvp, ignored)\n", o.network, i);
    for (const std::string& i : s.ignored)
      fmt::print(stderr, "{}: {} (not modeled by fabricvp, ignored)\n", o.system, i);
    if (!o.out.empty() && o.out != "-")
      fmt::print(stderr, "wrote {}: {} dimensions from {} ({}){}\n", o.out, n.dims.size(), n.file, n.format,
                 o.system.empty() ? "" : fmt::format(", {} settings from {}", s.overrides.size(), o.system));
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

const cli::Command convert_cmd([](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("convert", "convert other simulators' input files");
  sub->require_subcommand(1);
  auto* astra =
      sub->add_subcommand("astra", "ASTRA-sim inputs: network (+ system) -> platform file; YAML workload -> 1.0 text");
  astra
      ->add_option("--network", o->network,
                   "network file: 2.x YAML (topology, npus_count, bandwidth, latency) or 1.0 JSON")
      ->check(CLI::ExistingFile);
  astra->add_option("--system", o->system, "system file: 1.0 'key: value' text or 2.x JSON")->check(CLI::ExistingFile);
  astra->add_option("--workload", o->workload, "a workload in fabricvp's YAML form, written as ASTRA-sim 1.0 text")
      ->check(CLI::ExistingFile);
  astra->add_option("-o,--out", o->out, "output file (default: standard output)");
  return cli::Handler{astra, [o] { return convert(*o); }};
});

}  // namespace
