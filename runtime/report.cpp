#include "runtime/report.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fabricvp_version.h"
#include "models/core/config.h"
#include "models/core/context.h"
#include "models/core/param.h"

namespace fabricvp::runtime {

double since(WallClock::time_point t) { return std::chrono::duration<double>(WallClock::now() - t).count(); }

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

uint64_t write_effective_config(const std::string& path, const systems::RunOptions& opt) {
  auto text = [](const core::ParamBase* p) {
    std::string v = p->value_str();
    return std::string(p->type_name()) == "string" ? nlohmann::json(v).dump() : v;
  };
  std::string body;
  for (const core::ParamBase* p : core::all_params()) body += fmt::format("{}: {}\n", p->name(), text(p));
  const uint64_t hash = core::fnv1a64(body);
  std::ofstream f(path);
  if (!f) throw core::ConfigError(fmt::format("{}: cannot write the effective configuration", path));
  f << "# fabricvp effective configuration (every parameter; loadable as a platform file)\n";
  f << "# platform: " << opt.platform << "\n";
  for (const auto& o : opt.overrides) f << "# -p " << o << "\n";
  f << fmt::format("# config_hash: {:016x}\n", hash);
  for (const core::ParamBase* p : core::all_params()) {
    const std::string from = p->source() ? p->source()->origin.str() : "default";
    f << fmt::format("{}: {}  # {}{}{} [{}]\n", p->name(), text(p), p->unit(), *p->unit() ? "; " : "", p->description(),
                     from);
  }
  return hash;
}

void RunManifest::set(const systems::RunOptions& opt, uint64_t hash, uint64_t sim_end_ps, WallClock::time_point wall0,
                      double setup, double load, double sim, double check) {
  version.set(FABRICVP_VERSION);
  config_hash.set(fmt::format("{:016x}", hash));
  platform.set(opt.platform);
  seed.set(opt.seed);
  sim_time_ps.set(sim_end_ps);
  setup_wall_s.set(setup);
  load_wall_s.set(load);
  sim_wall_s.set(sim);
  check_wall_s.set(check);
  sim_ns_per_wall_s.set(sim > 0 ? static_cast<double>(sim_end_ps) / 1e3 / sim : 0.0);
  peak_rss_mib.set(runtime::peak_rss_mib());
  wall_s.set(since(wall0));
}

}  // namespace fabricvp::runtime
