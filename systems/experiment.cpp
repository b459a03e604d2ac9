#include "systems/experiment.h"
#include "models/core/output_file.h"
#include "systems/spawn.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "models/core/config.h"

namespace fs = std::filesystem;

namespace fabricvp::systems {

namespace {

std::map<std::string, Experiment>& experiment_registry() {
  static std::map<std::string, Experiment> all;
  return all;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the fabricvp executable (/proc/self/exe)");
  return p.string();
}

}  // namespace

std::string fabricvp_executable() { return self_exe(); }

volatile std::sig_atomic_t jobs_signal = 0;

void run_jobs(std::vector<Job>& work, uint32_t jobs, const std::function<void(size_t, Job&, const JobEnd&)>& on_end) {
  const std::string exe = self_exe();
  struct Running {
    pid_t pid;
    size_t index;
  };
  std::vector<Running> running;
  size_t next = 0, done = 0;
  auto start = [&](size_t i) {
    Job& j = work[i];
    fs::create_directories(j.dir);
    std::vector<std::string> argv{exe};
    argv.insert(argv.end(), j.args.begin(), j.args.end());
    int err = 0;
    const pid_t pid = spawn_logged(argv, (fs::path(j.dir) / "log.txt").string(), err);
    if (pid < 0) throw std::runtime_error(fmt::format("cannot start {}: {}", exe, std::strerror(err)));
    running.push_back(Running{pid, i});
  };
  try {
    while (done < work.size()) {
      if (jobs_signal) throw Interrupted();
      while (next < work.size() && running.size() < std::max<uint32_t>(1, jobs)) start(next++);
      if (jobs_signal) throw Interrupted();
      int status = 0;
      pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0 && errno == EINTR) throw Interrupted();  // a handler of the caller's (fabricvp sweep) caught a signal
      if (pid < 0) throw std::runtime_error("waitpid failed while running jobs");
      auto it = std::find_if(running.begin(), running.end(), [pid](const Running& r) { return r.pid == pid; });
      if (it == running.end()) continue;
      const size_t index = it->index;
      Job& j = work[index];
      running.erase(it);
      ++done;
      JobEnd end;
      end.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      end.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      std::ifstream lf(fs::path(j.dir) / "log.txt");
      end.log.assign(std::istreambuf_iterator<char>(lf), {});
      if (end.exit_code == 0) {
        const fs::path json = fs::exists(fs::path(j.dir) / "stats.json") ? fs::path(j.dir) / "stats.json"
                                                                         : fs::path(j.dir) / "topology.json";
        std::ifstream f(json);
        j.result = nlohmann::json::parse(f);
      }
      on_end(index, j, end);
    }
  } catch (...) {
    for (const Running& r : running) kill(r.pid, SIGTERM);
    for (const Running& r : running) waitpid(r.pid, nullptr, 0);
    throw;
  }
}

void run_jobs(std::vector<Job>& work, uint32_t jobs) {
  run_jobs(work, jobs, [](size_t, Job& j, const JobEnd& end) {
    if (end.exit_code != 0)
      throw core::ConfigError(fmt::format("experiment point failed (exit {}): fabricvp {}\n{}", end.exit_code,
                                          fmt::join(j.args, " "), end.log));
  });
}

SweepResult run_experiment_sweep(const ExperimentOptions& opt, bool keep_going) {
  SweepResult r;
  r.spec = load_sweep(source_file("sweeps/experiments/" + opt.name + ".yaml"));
  if (opt.quick) restrict_to_quick(r.spec);
  r.points = sweep_points(r.spec);
  for (const SweepPoint& p : r.points) {
    const std::string dir = (fs::path(opt.out_dir) / opt.name / "points" / std::to_string(p.index)).string();
    r.jobs.push_back(Job{point_args(r.spec, p, dir), dir, {}});
  }
  if (!keep_going) {
    run_jobs(r.jobs, opt.jobs);
    return r;
  }
  r.failed.assign(r.jobs.size(), std::string());
  run_jobs(r.jobs, opt.jobs, [&r](size_t i, Job&, const JobEnd& end) {
    if (end.exit_code == 0) return;
    std::string why = end.signal ? fmt::format("killed by signal {}", end.signal) : "failed";
    size_t at = 0;
    while (at < end.log.size()) {
      const size_t nl = std::min(end.log.find('\n', at), end.log.size());
      const std::string line = end.log.substr(at, nl - at);
      if (line.find("error") != std::string::npos) why = line;
      at = nl + 1;
    }
    r.failed[i] = why;
  });
  return r;
}

std::string source_file(const std::string& path) { return std::string(FABRICVP_SOURCE_DIR) + "/" + path; }

std::string size_name(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{}MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}KiB", b >> 10);
  return fmt::format("{}B", b);
}

void save_result(const ExperimentOptions& opt, const nlohmann::json& j,
                 const std::vector<std::pair<std::string, Chart>>& charts) {
  const fs::path file = fs::path(opt.out_dir) / (opt.name + ".json");
  core::write_file(file.string(), j.dump(1) + "\n", "experiment result");
  std::vector<std::string> pngs;
  for (size_t i = 0; i < charts.size(); ++i) {
    const std::string stem = i == 0 ? opt.name : opt.name + "-" + charts[i].first;
    pngs.push_back((fs::path(opt.out_dir) / (stem + ".png")).string());
    draw_png(charts[i].second, pngs.back());
  }
  fmt::print("\nwrote {} and {}\n", file.string(), fmt::join(pngs, ", "));
}

bool register_experiment(Experiment e) {
  auto& r = experiment_registry();
  if (r.count(e.name)) throw std::logic_error("experiment '" + e.name + "' registered twice");
  r.emplace(e.name, std::move(e));
  return true;
}

std::vector<const Experiment*> experiments() {
  std::vector<const Experiment*> out;
  for (const auto& [name, e] : experiment_registry()) out.push_back(&e);
  return out;
}

int run_experiment(const ExperimentOptions& opt) {
  try {
    auto it = experiment_registry().find(opt.name);
    if (it == experiment_registry().end()) {
      std::vector<std::string> names;
      for (const Experiment* e : experiments()) names.push_back(e->name);
      throw core::ConfigError(fmt::format("unknown experiment '{}' ({})", opt.name, fmt::join(names, ", ")));
    }
    fs::create_directories(opt.out_dir);
    return it->second.run(opt);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

void save_result(const ExperimentOptions& opt, const nlohmann::json& j, const Chart& chart) {
  save_result(opt, j, {{std::string(), chart}});
}

}  // namespace fabricvp::systems
