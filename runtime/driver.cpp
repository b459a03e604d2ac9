#include "runtime/driver.h"
#include "models/core/output_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <systemc>

#include "fabricvp_version.h"
#include "models/core/context.h"
#include "models/core/units.h"
#include "runtime/progress.h"
#include "runtime/report.h"

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

/// Back the heap with transparent huge pages when it is large (the system's
/// THP setting is often `madvise`): a simulation of thousands of endpoints
/// touches its state all over hundreds of MiB, and 4 KiB pages cost a TLB miss
/// on top of most cache misses. A hint: nothing changes if the kernel refuses,
/// and nothing is asked where the administrator set THP to `never`.
void huge_pages_for_heap() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  if (!thp || !std::getline(thp, setting) || setting.find("[never]") != std::string::npos) return;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {  // the heap may be several mappings
    if (line.find("[heap]") == std::string::npos) continue;
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2) continue;
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    lo = (lo + kHuge - 1) & ~(kHuge - 1);
    hi &= ~(kHuge - 1);
    if (hi <= lo || hi - lo < 64 * kHuge) continue;  // small runs: not worth it
    void* at = reinterpret_cast<void*>(lo);
    ::madvise(at, hi - lo, MADV_HUGEPAGE);
#ifdef MADV_COLLAPSE
    ::madvise(at, hi - lo, MADV_COLLAPSE);  // the pages already there, now (Linux 6.1)
#else
    ::madvise(at, hi - lo, 25);  // MADV_COLLAPSE where the headers predate it
#endif
  }
}

/// sc_start() to the end. With a progress line, the simulation runs in
/// slices of simulated time sized to about a quarter of a wall second each,
/// and the line says how far it is: simulated time reached, its rate, and
/// where the kind can tell how much is done, the share and an ETA. Slicing
/// runs the same events in the same order (each slice ends at a time boundary
/// and stops early when nothing is left), so results and statistics are the
/// same (a test compares them).
void simulate(ProgressLine& progress, const systems::Scenario& sc) {
  if (!progress.enabled()) {
    sc_core::sc_start();
    return;
  }
  uint64_t slice_ps = 1000000;  // 1 us to start with
  while (sc_core::sc_pending_activity() && sc_core::sc_get_status() != sc_core::SC_STOPPED) {
    const auto w0 = WallClock::now();
    sc_core::sc_start(sc_core::sc_time::from_value(slice_ps), sc_core::SC_EXIT_ON_STARVATION);
    const double took = since(w0);
    // Aim at ~0.25 s of wall time per slice, growing or shrinking by at most 4x.
    if (took < 0.06)
      slice_ps = std::min<uint64_t>(slice_ps * 4, uint64_t(1) << 50);
    else if (took > 1.0)
      slice_ps = std::max<uint64_t>(slice_ps / 4, 1000);
    const double wall = progress.phase_seconds();
    const uint64_t now = sc_core::sc_time_stamp().value();
    std::string text = fmt::format("{} simulated, {:.3g} simulated ns per wall second", core::human_time(now),
                                   wall > 0 ? static_cast<double>(now) / 1000 / wall : 0.0);
    const double f = sc.fraction_done();
    if (f > 0 && f < 1 && wall > 0)
      text += fmt::format(", {:.0f} % done, ETA {}", 100 * f, core::human_duration(wall * (1 - f) / f));
    progress.status(text);
  }
}

constexpr const char* kOutputList = ".fabricvp-outputs";

/// A reused output directory: remove what the previous run wrote there (the
/// list it left in .fabricvp-outputs, or fabricvp's usual files for a run
/// from before that list), so no stale trace.json or programs/ is mixed with
/// the new results. Other files in the directory are left alone.
void clear_previous_outputs(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names = {"stats.json",      "config.yaml", "trace.json",
                                    "collectives.csv", "links.csv",   "programs"};
  std::ifstream list(fs::path(dir) / kOutputList);
  std::string line;
  while (std::getline(list, line)) {
    while (!line.empty() && line.back() == '/') line.pop_back();
    const fs::path p(line);
    if (line.empty() || p.is_absolute() || line.find("..") != std::string::npos) continue;  // only inside dir
    names.push_back(line);
  }
  for (const std::string& n : names) fs::remove_all(fs::path(dir) / n, ec);
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("stats.attempt", 0) == 0 && e.path().extension() == ".json") fs::remove(e.path(), ec);
  }
}

/// What this run wrote, for the next run into the same directory.
void list_outputs(const systems::RunOptions& opt, const systems::Scenario& sc) {
  core::OutputFile f((fs::path(opt.out_dir) / kOutputList).string(), "list of outputs");
  f << "stats.json\nconfig.yaml\n";
  if (opt.trace) f << "trace.json\n";
  for (const std::string& o : sc.outputs()) f << o << "\n";
  f.close();
}

/// workload.replays etc. — software replay after machine checks.
struct ReplayStats {
  core::Value<uint64_t> replays{nullptr, "workload", "replays", "replays",
                                "times the program was replayed from the start after a machine check"};
  core::Value<uint64_t> replayed_ps{nullptr, "workload", "replayed_ps", "ps",
                                    "simulated time lost in the attempts that ended in a machine check"};
  core::Value<std::string> machine_checks{nullptr, "workload", "machine_checks", "",
                                          "link direction that flagged the data, per failed attempt"};
};

int attempt_impl(const systems::RunOptions& opt) {
  const auto wall0 = WallClock::now();
  core::Context& ctx = core::Context::get();
  ctx.set_seed(opt.seed);
  ctx.set_attempt(opt.attempt);
  ctx.config().load_file(opt.platform);
  for (const core::ConfigEntry& e : opt.settings) ctx.config().set(e.key, e.value, e.origin);
  for (const auto& o : opt.overrides) ctx.config().add_override(o);
  const systems::Kind& kind = systems::kind_for(ctx.config());
  for (const auto& kind_option : opt.kind_options) {
    const std::string& option = kind_option.first;  // a plain name: lambdas cannot capture structured bindings
    if (std::find(kind.options.begin(), kind.options.end(), option) == kind.options.end())
      throw core::ConfigError(fmt::format("--{}: {} platforms do not take this option ({})", option, kind.name, [&] {
        std::vector<std::string> who;
        for (const systems::Kind* k : systems::kinds())
          if (std::find(k->options.begin(), k->options.end(), option) != k->options.end()) who.push_back(k->name);
        if (who.empty()) return std::string("no kind does");
        if (who.size() == 1) return who[0] + " does";
        return fmt::format("{} and {} do", fmt::join(who.begin(), who.end() - 1, ", "), who.back());
      }()));
  }

  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec) throw core::ConfigError(fmt::format("{}: cannot create output directory: {}", opt.out_dir, ec.message()));
  if (opt.attempt == 0) clear_previous_outputs(opt.out_dir);
  if (opt.trace) ctx.trace().open((fs::path(opt.out_dir) / "trace.json").string(), opt.trace_from_ps, opt.trace_to_ps);

  // ---- elaborate ----
  ProgressLine progress(ProgressLine::wanted(opt.quiet));
  progress.phase("elaborating");
  std::unique_ptr<systems::Scenario> sc = systems::elaborate(kind, opt);
  ctx.config().check_all_used(systems::parameter_names());
  if (!sc->replays())
    opt.refuse("max-replays", fmt::format("{} platforms raise no machine checks: nothing is replayed", kind.name));
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // complete elaboration: sockets are bound from here on
  const uint64_t config_hash = write_effective_config((fs::path(opt.out_dir) / "config.yaml").string(), opt);

  // ---- prepare: compile, schedule or plan; programs ----
  progress.phase("compiling");
  sc->prepare(opt);
  // The compiler's working set is freed by now; hand the heap pages back to
  // the OS before the simulated memories fill, so the two never count
  // together in the peak.
  ::malloc_trim(0);
  // Refuse, before anything big is allocated, a run the machine cannot hold
  // (FABRICVP_MEMORY_CHECK=0 skips the check).
  std::string needs;
  const uint64_t estimate = sc->host_bytes(needs);
  if (const char* mc = std::getenv("FABRICVP_MEMORY_CHECK"); estimate > 0 && !(mc && std::string(mc) == "0")) {
    std::string limit;
    const uint64_t avail = host_memory_available(limit);
    if (estimate > avail)
      throw core::ConfigError(fmt::format(
          "this run needs about {} of host memory ({}), more than the {} available ({}); use fewer bytes or a "
          "smaller platform, or set FABRICVP_MEMORY_CHECK=0 to try anyway",
          core::approx_bytes(estimate), needs, core::approx_bytes(avail), limit));
  }
  const double setup_wall = since(wall0);

  // ---- load inputs ----
  const auto load0 = WallClock::now();
  progress.phase("loading inputs");
  sc->load();
  const double load_wall = since(load0);

  // ---- simulate ----
  const auto sim0 = WallClock::now();
  progress.phase("simulating");
  huge_pages_for_heap();
  simulate(progress, *sc);
  if (const auto& f = ctx.config_failure()) throw *f;
  sc->finish();
  const double sim_wall = since(sim0);
  const uint64_t sim_end = sc_core::sc_time_stamp().value();
  const bool hw_ok = ctx.hw_errors().empty();

  // ---- check ----
  const auto check0 = WallClock::now();
  progress.phase("checking against the host reference");
  systems::Outcome out;
  if (hw_ok) out = sc->check();
  const double check_wall = since(check0);
  const bool machine_check = !hw_ok && ctx.hw_errors()[0].machine_check;
  const bool will_replay = machine_check && opt.attempt < opt.max_replays;
  const std::string status = machine_check                  ? (will_replay ? "machine_check_replayed" : "machine_check")
                             : !hw_ok                       ? "hardware_error"
                             : out.checked && !out.verified ? "mismatch"
                             : !out.timing_ok               ? "timing_mismatch"
                                                            : "ok";

  progress.finish();

  // ---- statistics ----
  RunManifest rs;
  rs.status.set(status);
  rs.hardware_errors.set(ctx.hw_errors().size());
  rs.links.set(sc->links());
  rs.set(opt, config_hash, sim_end, wall0, setup_wall, load_wall, sim_wall, check_wall);
  rs.host_estimate_mib.set(static_cast<double>(estimate) / 1048576.0);
  std::optional<ReplayStats> replay;
  if (sc->replays()) {
    replay.emplace();
    replay->replays.set(opt.attempt);
    uint64_t lost = 0;
    std::string where;
    for (const auto& m : opt.history) {
      lost += m.time_ps;
      where += (where.empty() ? "" : ",") + m.link;
    }
    replay->replayed_ps.set(lost);
    replay->machine_checks.set(where);
  }
  sc->report(out);
  {
    const std::string file = will_replay ? fmt::format("stats.attempt{}.json", opt.attempt) : "stats.json";
    core::OutputFile f((fs::path(opt.out_dir) / file).string(), "statistics");
    core::write_stats_json(f.stream());
    f.close();
  }
  list_outputs(opt, *sc);
  if (will_replay) {
    const core::HardwareError& e = ctx.hw_errors()[0];
    fmt::print(
        "fabricvp: attempt {}: machine check at {} on {} (data flagged by {}); replaying the program from the "
        "start ({} of {} replays)\n",
        opt.attempt, core::human_time(e.time_ps), e.where, e.source, opt.attempt + 1, opt.max_replays);
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
    systems::Summary s;
    s.text(fmt::format("\nfabricvp {}  {}  ({})  seed {}", FABRICVP_VERSION, opt.platform, sc->headline(), opt.seed));
    if (!sc->description().empty()) s.text("  " + sc->description());
    sc->summarize(out, s);
    const std::string detail = sc->host_detail();
    s.line("host",
           fmt::format("wall {:.2f} s (setup {:.2f}, load {:.2f}, simulate {:.2f}{}, check {:.2f}), peak RSS "
                       "{:.0f} MiB{}",
                       rs.wall_s.get(), setup_wall, load_wall, sim_wall, detail, check_wall, rs.peak_rss_mib.get(),
                       estimate ? fmt::format(" (estimated {:.0f})", rs.host_estimate_mib.get()) : ""));
    s.text(fmt::format("               {:.0f} simulated ns per wall second of simulation", rs.sim_ns_per_wall_s.get()));
    sc->tables(s);
    std::string files = fmt::format("{}/stats.json  {}/config.yaml", opt.out_dir, opt.out_dir);
    for (const std::string& f : sc->outputs()) files += fmt::format("  {}/{}", opt.out_dir, f);
    if (opt.trace) files += fmt::format("  {}/trace.json", opt.out_dir);
    s.text("");
    s.line("outputs", files);
    fmt::print("{}", s.str());
  }
  if (!hw_ok) return kHardwareError;
  if (out.checked && !out.verified) {
    // also with -q: the exit code alone does not say which run failed its check or where to look
    fmt::print(stderr, "fabricvp: error: the run failed its check (the summary without -q says why; {}/stats.json)\n",
               opt.out_dir);
    return kMismatch;
  }
  if (!out.timing_ok) {
    fmt::print(stderr, "fabricvp: error: {}\n", out.timing_note);
    return kTimingMismatch;
  }
  return kOk;
}

}  // namespace

std::unique_ptr<systems::Scenario> elaborate(const std::string& platform, const std::vector<std::string>& overrides) {
  core::Context& ctx = core::Context::get();
  ctx.config().load_file(platform);
  for (const auto& o : overrides) ctx.config().add_override(o);
  systems::RunOptions opt;
  opt.platform = platform;
  opt.overrides = overrides;
  std::unique_ptr<systems::Scenario> sc = systems::elaborate(systems::kind_for(ctx.config()), opt);
  ctx.config().check_all_used(systems::parameter_names());
  return sc;
}

int run_attempt(const systems::RunOptions& opt) {
  try {
    return attempt_impl(opt);
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return kInputError;
  } catch (const std::exception& e) {
    // A model invariant broke (a fabricvp bug, never a user error): say so plainly.
    fmt::print(stderr, "fabricvp: internal error: {}\n", e.what());
    return kInternalError;
  }
}

}  // namespace fabricvp::runtime
