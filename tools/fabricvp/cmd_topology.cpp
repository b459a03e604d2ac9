// fabricvp topology <platform.yaml>: elaborate a platform and describe it
// (its kind says what: cables, ranks and route lengths of a Groq system; the
// rings and links of a torus).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabricvp_version.h"
#include "models/core/config.h"
#include "models/core/output_file.h"
#include "runtime/driver.h"
#include "runtime/report.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

struct Options {
  std::string platform;
  std::vector<std::string> overrides;
  uint32_t sources = 64;
  std::string json;
};

int topology(const Options& o) {
  try {
    auto scenario = runtime::elaborate(o.platform, o.overrides);
    nlohmann::json j;
    const int rc = scenario->topology(o.platform, o.sources, j);
    if (!o.json.empty()) {
      // The manifest fields stats.json has (a sweep's rows carry them).
      j["run"] = {{"version", FABRICVP_VERSION},
                  {"platform", o.platform},
                  {"config_hash", fmt::format("{:016x}", runtime::effective_config_hash())}};
      core::write_file(o.json, j.dump(1) + "\n", "topology JSON");
    }
    fmt::print("  peak RSS {:.0f} MiB{}\n", runtime::peak_rss_mib(), o.json.empty() ? "" : "; numbers in " + o.json);
    return rc;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

const cli::Command topology_cmd([](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("topology", "elaborate a platform; print its cables, ranks, rings and route lengths");
  sub->add_option("platform", o->platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  sub->add_option("-p,--param", o->overrides, "override a parameter: key=value");
  sub->add_option("--sources", o->sources, "source ranks sampled for the route-length histogram (all: >= ranks)");
  sub->add_option("--json", o->json, "also write the numbers to this JSON file");
  return cli::Handler{sub, [o] { return topology(*o); }};
});

}  // namespace
