// fabricvp sweep (runtime/sweep.h): points from axes, ranges, zips and seeds;
// a local sweep into SQLite with units; resume (points already recorded are
// skipped, failed ones recorded with their exit code and rerun on request, a
// sweep stopped by a signal picks up where it stopped); bad sweep files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "models/core/config.h"
#include "runtime/sweep.h"

using namespace fabricvp;

namespace {

/// Rows of a query through the sqlite3 shell ("|" between columns).
std::vector<std::string> query(const std::string& db, const std::string& sql) {
  const std::string cmd = "sqlite3 '" + db + "' 2>&1 <<'SQL'\n" + sql + ";\nSQL\n";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  std::vector<std::string> rows;
  size_t pos = 0;
  while (pos < out.size()) {
    const size_t nl = out.find('\n', pos);
    rows.push_back(out.substr(pos, nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return rows;
}

std::string ring_platform(const test::TempDir& dir) { return dir.file("ring.yaml", test::kIdleNdimRing); }

/// A single-node Slurm in `dir`/slurm (scripts/slurm-local.sh, `cpus` CPUs
/// declared; 0: the machine's) for the test's lifetime; SLURM_CONF points at it.
class LocalSlurm {
 public:
  LocalSlurm(const test::TempDir& dir, uint32_t cpus = 0)
      : m_dir((dir.path / "slurm").string()), m_script(std::string(FABRICVP_SOURCE_DIR) + "/scripts/slurm-local.sh") {
    const std::string env = cpus ? "SLURM_LOCAL_CPUS=" + std::to_string(cpus) + " " : "";
    started = std::system((env + m_script + " start " + m_dir + " > " + m_dir + ".out 2>&1").c_str()) == 0;
    setenv("SLURM_CONF", (m_dir + "/slurm.conf").c_str(), 1);
  }
  ~LocalSlurm() { (void)std::system((m_script + " stop " + m_dir).c_str()); }
  /// Wait until the queue is empty (at most `seconds`).
  static void drain(int seconds) {
    for (int i = 0; i < 2 * seconds; ++i) {
      FILE* q = popen("squeue -h 2>&1 | wc -l", "r");
      char buf[64] = {};
      const size_t n = fread(buf, 1, sizeof buf - 1, q);
      pclose(q);
      if (n && std::string(buf).find_first_not_of("0\n ") == std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  const std::string& dir() const { return m_dir; }
  bool started = false;

 private:
  std::string m_dir, m_script;
};

}  // namespace

TEST(Sweep, PointsComeFromAxesRangesZipsAndSeeds) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  platform: ring.yaml\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      range: {from: 25, to: 100, step: 25}\n"
                                 "    - zip:\n"
                                 "        - {key: --workload, values: [allreduce, allgather]}\n"
                                 "        - {key: --bytes, values: [1KiB, 2KiB]}\n"
                                 "    - key: sys.dim0.latency_ns\n"
                                 "      range: {from: 1, to: 8, factor: 2}\n"
                                 "  repetitions: 2\n"
                                 "  record: [workload.simulated_ps]\n"
                                 "  quick: {sys.dim0.GBps: [50], --bytes: [2KiB]}\n");
  const systems::SweepSpec s = systems::load_sweep(f);
  EXPECT_EQ(s.name, "s");
  const auto pts = systems::sweep_points(s);
  ASSERT_EQ(pts.size(), 4u * 2u * 4u * 2u);
  EXPECT_EQ(pts[0].key, "s|sys.dim0.GBps=25|--workload=allreduce|--bytes=1KiB|sys.dim0.latency_ns=1|seed=1");
  EXPECT_EQ(pts[1].seed, 2u);
  EXPECT_EQ(pts[2].params[3].second, "2");          // latency 1, 2, 4, 8
  EXPECT_EQ(pts[8].params[1].second, "allgather");  // the zip advances both keys
  EXPECT_EQ(pts[8].params[2].second, "2KiB");
  EXPECT_EQ(pts.back().params[0].second, "100");
  const auto args = systems::point_args(s, pts[0], "/o");
  const std::vector<std::string> want = {
      "run",     s.platform, "-p", "sys.dim0.GBps=25",      "--workload", "allreduce",
      "--bytes", "1KiB",     "-p", "sys.dim0.latency_ns=1", "--seed",     "1",
      "-q",      "-o",       "/o"};
  EXPECT_EQ(args, want);
  // The quick subset: one bandwidth, the zipped pair whose size is 2KiB.
  systems::SweepSpec q = s;
  systems::restrict_to_quick(q);
  const auto quick = systems::sweep_points(q);
  ASSERT_EQ(quick.size(), 1u * 1u * 4u * 2u);
  EXPECT_EQ(systems::param(quick[0], "sys.dim0.GBps"), "50");
  EXPECT_EQ(systems::param(quick[0], "--workload"), "allgather");
  EXPECT_EQ(systems::values_of(q, "sys.dim0.latency_ns"), (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(systems::values_of(s, "--bytes"), (std::vector<std::string>{"1KiB", "2KiB"}));  // a zipped key
}

// Values written ./x or ../x are files next to the sweep file when a point
// runs, and stay as written in the point's key (the database).
TEST(Sweep, RelativeFileValuesResolveAgainstTheSweepFile) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--system, ./sys.json]\n"
                                 "  axes:\n"
                                 "    - key: --workload\n"
                                 "      values: [./w.yaml, ../x/w.yaml, allreduce]\n"
                                 "  record: [workload.simulated_ps]\n");
  const systems::SweepSpec s = systems::load_sweep(f);
  const auto pts = systems::sweep_points(s);
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[0].key, "s|--workload=./w.yaml|seed=1");
  const std::string here = std::filesystem::absolute(dir.path).lexically_normal().string();
  const auto a0 = systems::point_args(s, pts[0], "/o"), a1 = systems::point_args(s, pts[1], "/o"),
             a2 = systems::point_args(s, pts[2], "/o");
  EXPECT_EQ(a0[3], here + "/sys.json");
  EXPECT_EQ(a0[5], here + "/w.yaml");
  EXPECT_EQ(a1[5], std::filesystem::absolute(dir.path).parent_path().lexically_normal().string() + "/x/w.yaml");
  EXPECT_EQ(a2[5], "allreduce");
  // One platform per point: a --platform axis, no platform of the sweep's own.
  dir.file("other.yaml", "sys:\n  description: x\n");
  const systems::SweepSpec p = systems::load_sweep(dir.file("p.yaml",
                                                            "sweep:\n"
                                                            "  axes:\n"
                                                            "    - key: --platform\n"
                                                            "      values: [ring.yaml, ./other.yaml]\n"
                                                            "  record: [workload.simulated_ps]\n"));
  const auto pp = systems::sweep_points(p);
  ASSERT_EQ(pp.size(), 2u);
  const auto pa = systems::point_args(p, pp[1], "/o");
  EXPECT_EQ(pa[1], here + "/other.yaml");
  EXPECT_EQ(std::count(pa.begin(), pa.end(), std::string("--platform")), 0);
  EXPECT_THROW(systems::load_sweep(dir.file("q.yaml",
                                            "sweep:\n"
                                            "  axes:\n"
                                            "    - key: --platform\n"
                                            "      values: [nosuch.yaml]\n"
                                            "  record: [workload.simulated_ps]\n")),
               core::ConfigError);
  EXPECT_THROW(systems::load_sweep(dir.file("r.yaml",
                                            "sweep:\n"
                                            "  axes:\n"
                                            "    - key: --bytes\n"
                                            "      values: [1KiB]\n"
                                            "  record: [workload.simulated_ps]\n")),
               core::ConfigError);
}

// A value written ~ leaves the key unset at that point: no option, no -p,
// not in the point's key, NULL in the database; quick can keep such tuples.
TEST(Sweep, NullValuesLeaveAKeyUnsetAtThatPoint) {
  test::TempDir dir;
  ring_platform(dir);
  const systems::SweepSpec s =
      systems::load_sweep(dir.file("s.yaml",
                                   "sweep:\n"
                                   "  platform: ring.yaml\n"
                                   "  options: [--bytes, 1KiB]\n"
                                   "  axes:\n"
                                   "    - zip:\n"
                                   "        - {key: --workload, values: [broadcast, allreduce]}\n"
                                   "        - {key: --src, values: ['1', ~]}\n"
                                   "        - {key: sys.dim0.GBps, values: [~, 50]}\n"
                                   "  record: [workload.simulated_ps]\n"
                                   "  quick: {--src: [~]}\n"));
  const auto pts = systems::sweep_points(s);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].key, "s|--workload=broadcast|--src=1|seed=1");
  EXPECT_EQ(pts[1].key, "s|--workload=allreduce|sys.dim0.GBps=50|seed=1");
  EXPECT_EQ(systems::param_or(pts[1], "--src", "none"), "none");
  EXPECT_THROW(systems::param(pts[1], "--src"), std::out_of_range);
  const auto a1 = systems::point_args(s, pts[1], "/o");
  EXPECT_EQ(std::count(a1.begin(), a1.end(), std::string("--src")), 0);
  EXPECT_EQ(systems::values_of(s, "--src"), (std::vector<std::string>{"1", systems::kUnset}));
  systems::SweepSpec q = s;
  systems::restrict_to_quick(q);
  ASSERT_EQ(systems::sweep_points(q).size(), 1u);
  EXPECT_EQ(systems::sweep_points(q)[0].params[0].second, "allreduce");
  // Run: the unset column is NULL.
  const std::string out = (dir.path / "o").string(), db = out + "/s.sqlite";
  const test::Result r = test::sh("sweep " + s.file + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(query(db, "SELECT \"--workload\", \"--src\" IS NULL, \"sys.dim0.GBps\" IS NULL FROM runs ORDER BY 1 DESC"),
            (std::vector<std::string>{"broadcast|0|1", "allreduce|1|0"}));
  // A point without --platform needs the sweep's platform.
  try {
    systems::load_sweep(
        dir.file("p.yaml", "sweep:\n  axes:\n    - {key: --platform, values: [ring.yaml, ~]}\n  record: [a]\n"));
    ADD_FAILURE() << "accepted an unset --platform without a platform";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("p.yaml:3: a point leaves --platform unset"), std::string::npos) << e.what();
  }
}

// command: topology runs `fabricvp topology --json` per point (elaboration
// only): its numbers, units and manifest land in the database like a run's.
TEST(Sweep, TopologySweepsRecordTheElaboratedNumbers) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("t.yaml",
                                 "sweep:\n"
                                 "  command: topology\n"
                                 "  platform: " FABRICVP_PLATFORMS
                                 "/groq-dragonfly-264.yaml\n"
                                 "  options: [--sources, '1', -p, sys.spares=none]\n"
                                 "  axes:\n"
                                 "    - {key: sys.nodes_per_rack, values: [2, 4]}\n"
                                 "  record: [chips, bisection_GBps_per_tsp]\n");
  const systems::SweepSpec s = systems::load_sweep(f);
  const auto args = systems::point_args(s, systems::sweep_points(s)[0], "/o");
  const std::vector<std::string> want = {"topology", s.platform,        "--sources", "1",
                                         "-p",       "sys.spares=none", "-p",        "sys.nodes_per_rack=2",
                                         "--json",   "/o/topology.json"};
  EXPECT_EQ(args, want);
  const std::string out = (dir.path / "o").string(), db = out + "/t.sqlite";
  const test::Result r = test::sh("sweep " + f + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(query(db,
                  "SELECT \"sys.nodes_per_rack\", chips, round(bisection_GBps_per_tsp, 2), "
                  "length(config_hash) FROM runs ORDER BY 1"),
            (std::vector<std::string>{"2|16|48.78|16", "4|32|30.49|16"}));
  EXPECT_EQ(query(db, "SELECT unit FROM columns WHERE name = 'bisection_GBps_per_tsp'"),
            std::vector<std::string>{"GB/s"});
  // Seeds mean nothing to an elaboration; run options are not topology options.
  const struct {
    const char *text, *want;
  } bad[] = {{"sweep:\n  command: topology\n  platform: ring.yaml\n  seeds: [1, 2]\n  record: [a]\n",
              "b.yaml:4: a topology sweep elaborates platforms: it has no seeds"},
             {"sweep:\n  command: topology\n  platform: ring.yaml\n  axes:\n    - {key: --bytes, values: [1]}\n"
              "  record: [a]\n",
              "b.yaml:5: '--bytes': a topology sweep takes -p, --sources and --platform only"},
             {"sweep:\n  command: simulate\n  platform: ring.yaml\n  record: [a]\n",
              "b.yaml:2: command 'simulate': expected run or topology"}};
  for (const auto& c : bad) {
    try {
      systems::load_sweep(dir.file("b.yaml", c.text));
      ADD_FAILURE() << "accepted:\n" << c.text;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
    }
  }
}

TEST(Sweep, BadSweepFilesNameFileLineAndKey) {
  test::TempDir dir;
  ring_platform(dir);
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axis: []\n", "s.yaml:4: unknown key 'axis'"},
      {"sweep:\n  platform: nope.yaml\n  record: [a]\n", "s.yaml:2: platform 'nope.yaml' is not a file"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: x, range: {from: 1, to: 2x, step: 1}}\n",
       "s.yaml:5: range.to: '2x' is not a number"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: x, values: [1], range: {from: 1, to: 2, "
       "step: 1}}\n",
       "axis 'x' needs either values or range"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - zip:\n        - {key: x, values: [1, 2]}\n"
       "        - {key: y, values: [1]}\n",
       "zipped axis 'y' has 1 values, 'x' has 2"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: --seed, values: [1]}\n",
       "axis key '--seed' is set by the sweep itself"},
      {"sweep:\n  platform: ring.yaml\n", "record lists the statistics to keep"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  seeds: [1.5]\n", "seed '1.5' is not a whole number"},
      {"sweep: [\n", "s.yaml:2:"},
      // Equal points would be one row of the database.
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: x, values: [1, 2, 1]}\n",
       "s.yaml:5: axis x has the value 1 twice"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  seeds: [3, 3]\n", "s.yaml:4: seed 3 appears twice"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: x, values: [1, 2]}\n  quick: {x: [3]}\n",
       "s.yaml:6: quick: '3' is not a value of axis 'x'"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  quick: {y: [3]}\n", "s.yaml:4: quick: 'y' is not an axis"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: x, values: ['1|y=2']}\n",
       "axis value '1|y=2' contains '|'"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  options: [--seed=4]\n",
       "s.yaml:4: option '--seed=4' is set by the sweep itself"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  options: [--bytes, 1KiB, -oDIR]\n",
       "option '-oDIR' is set by the sweep itself"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  axes:\n    - {key: --ber, values: ['', 1e-9]}\n",
       "s.yaml:5: an empty axis value (~ leaves the key unset at that point)"},
      {"sweep:\n  platform: ring.yaml\n  record: [a]\n  options: ['']\n", "s.yaml:4: an empty option"},
      // The name names the database and the points' folder inside -o.
      {"sweep:\n  name: ../../escape\n  platform: ring.yaml\n  record: [a]\n", "s.yaml:2: name '../../escape'"},
      {"sweep:\n  name: ''\n  platform: ring.yaml\n  record: [a]\n", "s.yaml:2: name ''"},
  };
  for (const Case& c : cases) {
    const std::string f = dir.file("s.yaml", c.text);
    try {
      systems::load_sweep(f);
      ADD_FAILURE() << "accepted:\n" << c.text;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
    }
  }
  // From the command line: exit 1 and the message.
  test::Result r = test::sh("sweep " + dir.file("s.yaml", cases[0].text) + " -o " + (dir.path / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("unknown key 'axis'"), std::string::npos) << r.out;
  // Slurm settings need --slurm and are one word each of the job script's header.
  const std::string ok = dir.file("ok.yaml", "sweep:\n  platform: ring.yaml\n  record: [a]\n");
  r = test::sh("sweep " + ok + " --time 00:10 -o " + (dir.path / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--time is a Slurm setting: it applies when --slurm submits"), std::string::npos) << r.out;
  r = test::sh("sweep " + ok + " --slurm --mem '4G; echo x' -o " + (dir.path / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--mem '4G; echo x': one word"), std::string::npos) << r.out;
  r = test::sh("sweep " + ok + " --db ''");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--db: an empty value"), std::string::npos) << r.out;
}

TEST(Sweep, LocalSweepFillsTheDatabaseAndResumes) {
  test::TempDir dir;
  ring_platform(dir);
  // One point fails: 3 bytes of fp32 is not a whole number of elements.
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  name: ring-gbps\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--workload, allreduce, --dtype, fp32]\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      values: [50, 100]\n"
                                 "    - key: --bytes\n"
                                 "      values: [1MiB, 4MiB, '3']\n"
                                 "  record: [workload.simulated_ps, workload.busbw_GBps, workload.verified]\n");
  const std::string out = (dir.path / "o").string(), db = out + "/ring-gbps.sqlite";
  test::Result r = test::sh("sweep " + f + " -o " + out + " -j 2");
  EXPECT_EQ(r.code, 1) << r.out;  // the failed points' exit code
  EXPECT_NE(r.out.find("6 points: 6 run (4 ok, 2 failed)"), std::string::npos) << r.out;
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs WHERE status = 'ok' AND \"workload.verified\" = 1"),
            std::vector<std::string>{"4"});
  const auto failed = query(db, "SELECT \"--bytes\", exit_code, message FROM runs WHERE status = 'failed'");
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].substr(0, 4), "3|1|") << failed[0];  // numbers stay numbers
  EXPECT_NE(failed[0].find("error"), std::string::npos) << failed[0];
  // Twice the bandwidth: about twice the bus bandwidth at 4 MiB; units from the statistics schema.
  const auto bw = query(db,
                        "SELECT \"sys.dim0.GBps\", \"workload.busbw_GBps\" FROM runs WHERE \"--bytes\" = '4MiB' "
                        "ORDER BY 1");
  ASSERT_EQ(bw.size(), 2u);
  const double b50 = std::stod(bw[0].substr(bw[0].find('|') + 1)), b100 = std::stod(bw[1].substr(bw[1].find('|') + 1));
  EXPECT_GT(b100 / b50, 1.8);
  EXPECT_EQ(query(db, "SELECT unit FROM columns WHERE name = 'workload.simulated_ps'"), std::vector<std::string>{"ps"});
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs WHERE version LIKE '0.%' AND length(config_hash) = 16"),
            std::vector<std::string>{"4"});
  // Again: nothing to run; with --retry-failed only the failed points run (and fail again).
  r = test::sh("sweep " + f + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 run (0 ok, 0 failed), 4 already ok, 2 failed before"), std::string::npos) << r.out;
  r = test::sh("sweep " + f + " -o " + out + " --retry-failed");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("2 run (0 ok, 2 failed), 4 already ok"), std::string::npos) << r.out;
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs"), std::vector<std::string>{"6"});
}

TEST(Sweep, ARecordedKeyTheResultsLackFailsItsPointsNotTheSweep) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  name: nokey\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--workload, allreduce, --bytes, 64KiB]\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      values: [50, 100]\n"
                                 "  record: [workload.simulated_ps, workload.no_such_stat]\n");
  const std::string out = (dir.path / "o").string(), db = out + "/nokey.sqlite";
  const test::Result r = test::sh("sweep " + f + " -o " + out + " -j 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("2 points: 2 run (0 ok, 2 failed)"), std::string::npos) << r.out;
  const auto rows = query(db, "SELECT status, \"workload.no_such_stat\" IS NULL, message FROM runs");
  ASSERT_EQ(rows.size(), 2u);
  for (const std::string& row : rows) {
    EXPECT_EQ(row.rfind("failed|1|", 0), 0u) << row;
    EXPECT_NE(row.find("has no value workload.no_such_stat"), std::string::npos) << row;
  }
  EXPECT_EQ(query(db, "SELECT unit FROM columns WHERE name = 'workload.simulated_ps'"), std::vector<std::string>{"ps"});
}

TEST(Sweep, StoppedSweepResumesWhereItStopped) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  name: stop\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--workload, allreduce, --bytes, 4MiB]\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      range: {from: 10, to: 600, step: 10}\n"
                                 "  record: [workload.simulated_ps]\n");
  const std::string out = (dir.path / "o").string(), db = out + "/stop.sqlite";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(FABRICVP_BIN, FABRICVP_BIN, "sweep", f.c_str(), "-o", out.c_str(), "-j", "1", "-q", nullptr);
    _exit(127);
  }
  // Stop it once some points are recorded.
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto n = query(db, "SELECT count(*) FROM runs");
    // a count, not an error message (the table not made yet, the database busy)
    if (n.size() == 1 && !n[0].empty() && n[0] != "0" && n[0].find_first_not_of("0123456789") == std::string::npos)
      break;
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  const int recorded = std::stoi(query(db, "SELECT count(*) FROM runs")[0]);
  // 59 points cannot finish between the first row and the signal: a 0 here is a lost signal (one that came while
  // the sweep recorded a point or started the next, outside its wait).
  EXPECT_EQ(code, 128 + SIGTERM);
  EXPECT_GT(recorded, 0);
  EXPECT_LT(recorded, 60);
  test::Result r = test::sh("sweep " + f + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(std::to_string(60 - recorded) + " run (" + std::to_string(60 - recorded) + " ok, 0 failed), " +
                       std::to_string(recorded) + " already ok"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(query(db, "SELECT count(*), count(DISTINCT point) FROM runs WHERE status = 'ok'"),
            std::vector<std::string>{"60|60"});
}

TEST(Sweep, PlotDrawsAPngWithUnitsAndRefusesUnknownColumns) {
  test::TempDir dir;
  ring_platform(dir);
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  name: p\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--workload, allreduce, --timing-only]\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      values: [50, 100]\n"
                                 "    - key: --bytes\n"
                                 "      values: [64KiB, 1MiB, 4MiB]\n"
                                 "  repetitions: 2\n"
                                 "  record: [workload.busbw_GBps]\n");
  const std::string out = (dir.path / "o").string(), db = out + "/p.sqlite", png = out + "/p.png";
  ASSERT_EQ(test::sh("sweep " + f + " -o " + out).code, 0);
  test::Result r = test::sh("plot " + db + " --x --bytes --y workload.busbw_GBps --by sys.dim0.GBps -o " + png);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 series, 6 points from 12 runs"), std::string::npos) << r.out;
  std::ifstream p(png, std::ios::binary);
  char magic[8] = {};
  p.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  EXPECT_GT(std::filesystem::file_size(png), 10000u);
  r = test::sh("plot " + db + " --x --bytes --y workload.busbw");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no column 'workload.busbw' for --y; the database has: --bytes (param)"), std::string::npos)
      << r.out;
  r = test::sh("plot " + (dir.path / "none.sqlite").string() + " --x a --y b");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no such database"), std::string::npos) << r.out;
}

// A real single-node Slurm (scripts/slurm-local.sh: munged, slurmctld and
// slurmd from Debian's slurm-wlm, configured in a temporary folder): the
// sweep is submitted as one job array, every task runs one point, and
// `sweep collect` loads them into the database.
TEST(Sweep, SlurmJobArrayRunsThePointsAndCollectLoadsThem) {
  test::TempDir dir;
  ring_platform(dir);
  LocalSlurm slurm(dir);
  ASSERT_TRUE(slurm.started) << "single-node Slurm did not start; see " << slurm.dir() << "/log";
  const std::string f = dir.file("s.yaml",
                                 "sweep:\n"
                                 "  name: slurm\n"
                                 "  platform: ring.yaml\n"
                                 "  options: [--workload, allreduce]\n"
                                 "  axes:\n"
                                 "    - key: sys.dim0.GBps\n"
                                 "      values: [25, 50]\n"
                                 "    - key: --bytes\n"
                                 "      values: [64KiB, 1MiB, '3']\n"
                                 "  record: [workload.simulated_ps, workload.verified]\n");
  const std::string out = (dir.path / "o").string(), db = out + "/slurm.sqlite";
  test::Result r = test::sh("sweep " + f + " -o " + out + " --slurm --time 00:05:00");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("submitted 6 points as Slurm job array"), std::string::npos) << r.out;
  LocalSlurm::drain(180);  // the array leaves the queue
  r = test::sh("sweep collect " + f + " -o " + out);
  EXPECT_EQ(r.code, 1) << r.out;  // the '3'-byte points fail, as they do locally
  EXPECT_NE(r.out.find("collected 6 points (4 ok, 2 failed), 0 not finished yet"), std::string::npos) << r.out;
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs WHERE status = 'ok' AND \"workload.verified\" = 1"),
            std::vector<std::string>{"4"});
  EXPECT_EQ(query(db,
                  "SELECT count(*) FROM runs WHERE status = 'failed' AND exit_code = 1 AND message LIKE "
                  "'%multiple of 4 bytes%'"),
            std::vector<std::string>{"2"});
  // Collecting again adds nothing; submitting again submits nothing new but the failed points on request.
  r = test::sh("sweep collect " + f + " -o " + out);
  EXPECT_NE(r.out.find("collected 0 points (0 ok, 0 failed), 0 not finished yet, 6 already recorded"),
            std::string::npos)
      << r.out;
  r = test::sh("sweep " + f + " -o " + out + " --slurm");
  EXPECT_NE(r.out.find("every point is recorded already (4 ok, 2 failed: --retry-failed)"), std::string::npos) << r.out;
}

// Issue 12's "done when": a sweep of 100 points (the shipped
// npu-3d-64-collectives.yaml) through the real single-node Slurm into one
// SQLite file, and locally into another; the two agree point by point.
TEST(Sweep, HundredPointSweepThroughSlurmEqualsTheLocalOne) {
  test::TempDir dir;
  LocalSlurm slurm(dir, 8);
  ASSERT_TRUE(slurm.started) << "single-node Slurm did not start; see " << slurm.dir() << "/log";
  const std::string f = std::string(FABRICVP_SOURCE_DIR) + "/sweeps/npu-3d-64-collectives.yaml";
  const std::string viaslurm = (dir.path / "s").string(), local = (dir.path / "l").string();
  test::Result r = test::sh("sweep " + f + " -o " + viaslurm + " --slurm --time 00:05:00");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("submitted 100 points as Slurm job array"), std::string::npos) << r.out;
  LocalSlurm::drain(300);  // the array leaves the queue
  r = test::sh("sweep collect " + f + " -o " + viaslurm);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("collected 100 points (100 ok, 0 failed), 0 not finished yet"), std::string::npos) << r.out;
  r = test::sh("sweep " + f + " -o " + local + " -j 2");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string a = viaslurm + "/npu-3d-64-collectives.sqlite", b = local + "/npu-3d-64-collectives.sqlite";
  EXPECT_EQ(query(a, "SELECT count(*) FROM runs WHERE status = 'ok'"), std::vector<std::string>{"100"});
  EXPECT_EQ(query(a, "ATTACH '" + b +
                         "' AS l; SELECT count(*) FROM runs s JOIN l.runs o ON s.point = o.point "
                         "WHERE s.\"workload.simulated_ps\" = o.\"workload.simulated_ps\" "
                         "AND s.\"workload.busbw_GBps\" = o.\"workload.busbw_GBps\""),
            std::vector<std::string>{"100"});
}

TEST(Sweep, ShippedSweepFilesLoadAndTheirQuickSubsetsAreSmaller) {
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(FABRICVP_SOURCE_DIR) + "/sweeps")) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    systems::SweepSpec s = systems::load_sweep(e.path().string());
    const size_t all = systems::sweep_points(s).size();
    systems::restrict_to_quick(s);
    const size_t quick = systems::sweep_points(s).size();
    EXPECT_LE(quick, all) << e.path();
    if (!s.quick.empty()) {
      EXPECT_LT(quick, all) << e.path();
    }
  }
  EXPECT_GE(files, 5u);
}
