// `fabricvp experiment <name>`: studies of the seed papers, each made of real
// simulation runs (`fabricvp run` or `topology` in child processes, since
// SystemC elaborates once per process; `jobs` at a time), printed as a table
// and written as <out>/<name>.json with its figure as <out>/<name>.png. Each system kind registers its own
// experiments next to its scenario (systems/<kind>/experiments.cpp).
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "systems/chart.h"
#include "systems/sweep_file.h"

namespace fabricvp::systems {

struct ExperimentOptions {
  std::string name;
  std::string out_dir = "out/experiments";
  uint32_t jobs = 2;
  bool quick = false;  ///< fewer, smaller points (tests)
};

struct Experiment {
  std::string name;
  std::string description;
  std::function<int(const ExperimentOptions&)> run;
};

/// Register an experiment (from a static object in its kind's folder).
bool register_experiment(Experiment e);
/// Every registered experiment, by name.
std::vector<const Experiment*> experiments();
/// Run one by name; returns a process exit code and prints errors.
int run_experiment(const ExperimentOptions& opt);

/// One child invocation of fabricvp and where its outputs go.
struct Job {
  std::vector<std::string> args;  ///< after the executable
  std::string dir;
  nlohmann::json result;  ///< its stats.json (run) or topology.json (topology)
};

/// An experiment's points from its sweep file, sweeps/experiments/<name>.yaml
/// (the file's quick: subset with --quick), each run as `fabricvp run` into
/// <out>/<name>/points/<index>, `jobs` at a time; jobs[i] is points[i].
struct SweepResult {
  SweepSpec spec;
  std::vector<SweepPoint> points;
  std::vector<Job> jobs;
  std::vector<std::string> failed;  ///< keep_going: per point, empty or the error its run ended with
};
/// keep_going: a point whose run fails is recorded in `failed` (the last
/// line of its log that says "error") and the others still run; otherwise
/// the first failure throws with the child's log.
SweepResult run_experiment_sweep(const ExperimentOptions& opt, bool keep_going = false);

/// Run the jobs `jobs` at a time; each writes into its own directory. Throws
/// core::ConfigError with the child's log when one fails.
void run_jobs(std::vector<Job>& work, uint32_t jobs);
/// How a job ended: its exit code (-1 if killed by a signal, with `signal`)
/// and its log (stdout and stderr, <dir>/log.txt).
struct JobEnd {
  int exit_code = 0;
  int signal = 0;
  std::string log;
};
/// The same without throwing: `on_end(index, job, end)` as each job ends
/// (in completion order; job.result is loaded when it succeeded). Children
/// still running when on_end throws are killed and waited for; so are they
/// when a signal the caller handles (without SA_RESTART) interrupts the wait,
/// which then throws Interrupted.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by a signal") {}
};
/// The signal that handler caught (it sets this), 0 if none. run_jobs also
/// checks it before starting jobs and before each wait, so a signal that
/// arrives while it records a job or starts the next one is not lost (one
/// in the instant between that check and the wait is seen when the next job
/// ends; the caller checks it once more after run_jobs).
extern volatile std::sig_atomic_t jobs_signal;
void run_jobs(std::vector<Job>& work, uint32_t jobs, const std::function<void(size_t, Job&, const JobEnd&)>& on_end);

/// This fabricvp executable (what jobs run).
std::string fabricvp_executable();
/// Any file of the source tree (e.g. "sw/workloads/resnet50.yaml").
std::string source_file(const std::string& path);
/// 64MiB, 4KiB, 320B (experiment folder names).
std::string size_name(uint64_t bytes);
/// Write <out>/<name>.json and the experiment's figure, <out>/<name>.png, and say so.
void save_result(const ExperimentOptions& opt, const nlohmann::json& j, const Chart& chart);
/// The same with more figures: the first is <out>/<name>.png, the others <out>/<name>-<suffix>.png.
void save_result(const ExperimentOptions& opt, const nlohmann::json& j,
                 const std::vector<std::pair<std::string, Chart>>& charts);

}  // namespace fabricvp::systems
