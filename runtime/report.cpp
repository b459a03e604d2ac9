#include "runtime/report.h"
#include "models/core/output_file.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdlib>
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

namespace {
/// The first number after `key` in a /proc-style file ("MemAvailable:  123 kB"), times `unit`; 0 if absent.
uint64_t read_number(const char* path, const std::string& key, uint64_t unit) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (key.empty() || line.rfind(key, 0) == 0) {
      const std::string rest = line.substr(key.size());
      char* end = nullptr;
      const unsigned long long v = std::strtoull(rest.c_str(), &end, 10);
      return end == rest.c_str() ? 0 : v * unit;
    }
  return 0;
}
}  // namespace

uint64_t host_memory_available(std::string& limit) {
  uint64_t avail = read_number("/proc/meminfo", "MemAvailable:", 1024);
  limit = "MemAvailable in /proc/meminfo";
  if (avail == 0) avail = UINT64_MAX, limit = "no limit known";
  // cgroup v2: memory.max is "max" or bytes.
  const uint64_t cg_max = read_number("/sys/fs/cgroup/memory.max", "", 1);
  if (cg_max) {
    const uint64_t used = read_number("/sys/fs/cgroup/memory.current", "", 1);
    const uint64_t left = cg_max > used ? cg_max - used : 0;
    if (left < avail) avail = left, limit = "the cgroup's memory.max";
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const uint64_t vm = read_number("/proc/self/status", "VmSize:", 1024);
    const uint64_t left = rl.rlim_cur > vm ? rl.rlim_cur - vm : 0;
    if (left < avail) avail = left, limit = "the address-space limit (ulimit -v)";
  }
  return avail;
}

namespace {
std::string param_text(const core::ParamBase* p) {
  std::string v = p->value_str();
  return std::string(p->type_name()) == "string" ? nlohmann::json(v).dump() : v;
}
}  // namespace

uint64_t effective_config_hash() {
  std::string body;
  for (const core::ParamBase* p : core::all_params()) body += fmt::format("{}: {}\n", p->name(), param_text(p));
  return core::fnv1a64(body);
}

uint64_t write_effective_config(const std::string& path, const systems::RunOptions& opt) {
  auto text = param_text;
  const uint64_t hash = effective_config_hash();
  core::OutputFile f(path, "effective configuration");
  f << "# fabricvp effective configuration (every parameter; loadable as a platform file)\n";
  f << "# platform: " << opt.platform << "\n";
  for (const core::ConfigEntry& e : opt.settings)
    f << "# " << e.origin.str() << ": " << e.key << "=" << e.value << "\n";
  for (const auto& o : opt.overrides) f << "# -p " << o << "\n";
  f << fmt::format("# config_hash: {:016x}\n", hash);
  for (const core::ParamBase* p : core::all_params()) {
    const std::string from = p->source() ? p->source()->origin.str() : "default";
    f << fmt::format("{}: {}  # {}{}{} [{}]\n", p->name(), text(p), p->unit(), *p->unit() ? "; " : "", p->description(),
                     from);
  }
  f.close();
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
