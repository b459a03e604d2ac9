#include "runtime/sweep.h"
#include "models/core/output_file.h"
#include "models/core/units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"
#include "systems/experiment.h"

namespace fs = std::filesystem;

namespace fabricvp::runtime {

// ---- the database --------------------------------------------------------------

namespace {

std::string quote_id(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

class Db {
 public:
  explicit Db(const std::string& path) : m_path(path) {
    if (sqlite3_open(path.c_str(), &m_db) != SQLITE_OK) {
      const std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
      sqlite3_close(m_db);
      throw core::ConfigError(fmt::format("{}: cannot open the results database: {}", path, msg));
    }
    sqlite3_busy_timeout(m_db, 10000);
    exec(
        "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, sweep TEXT NOT NULL, point TEXT NOT NULL UNIQUE, "
        "seed INTEGER, status TEXT NOT NULL, exit_code INTEGER, message TEXT, version TEXT, platform TEXT, "
        "wall_s REAL, config_hash TEXT, out_dir TEXT, finished_utc TEXT)");
    exec(
        "CREATE TABLE IF NOT EXISTS columns (name TEXT PRIMARY KEY, kind TEXT NOT NULL, unit TEXT, "
        "description TEXT)");
    sqlite3_stmt* st = prepare("SELECT name FROM pragma_table_info('runs')");
    while (sqlite3_step(st) == SQLITE_ROW) m_cols.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
  }
  ~Db() { sqlite3_close(m_db); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw core::ConfigError(fmt::format("{}: {} (in: {})", m_path, msg, sql));
    }
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw core::ConfigError(fmt::format("{}: {} (in: {})", m_path, sqlite3_errmsg(m_db), sql));
    return st;
  }

  /// Status of a recorded point ("" if none).
  std::string status(const std::string& point) {
    sqlite3_stmt* st = prepare("SELECT status FROM runs WHERE point = ?");
    sqlite3_bind_text(st, 1, point.c_str(), -1, SQLITE_TRANSIENT);
    std::string s;
    if (sqlite3_step(st) == SQLITE_ROW) s = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
  }

  void column(const std::string& name, const std::string& kind, const std::string& unit, const std::string& desc) {
    if (!m_cols.count(name)) {
      exec("ALTER TABLE runs ADD COLUMN " + quote_id(name));
      m_cols.insert(name);
    }
    sqlite3_stmt* st = prepare(
        "INSERT INTO columns (name, kind, unit, description) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
        "kind = excluded.kind, unit = COALESCE(excluded.unit, columns.unit), "
        "description = COALESCE(excluded.description, columns.description)");
    sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, kind.c_str(), -1, SQLITE_TRANSIENT);
    if (unit.empty())
      sqlite3_bind_null(st, 3);
    else
      sqlite3_bind_text(st, 3, unit.c_str(), -1, SQLITE_TRANSIENT);
    if (desc.empty())
      sqlite3_bind_null(st, 4);
    else
      sqlite3_bind_text(st, 4, desc.c_str(), -1, SQLITE_TRANSIENT);
    step_done(st);
  }

  /// One row (replacing the point's earlier row). Values: JSON numbers and
  /// numeric text become numbers; null stays NULL.
  void insert(const std::vector<std::pair<std::string, nlohmann::json>>& row) {
    std::string names, marks;
    for (const auto& [k, v] : row) {
      names += (names.empty() ? "" : ", ") + quote_id(k);
      marks += marks.empty() ? "?" : ", ?";
    }
    sqlite3_stmt* st = prepare("INSERT OR REPLACE INTO runs (" + names + ") VALUES (" + marks + ")");
    int i = 1;
    for (const auto& [k, v] : row) {
      if (v.is_null()) {
        sqlite3_bind_null(st, i);
      } else if (v.is_boolean()) {
        sqlite3_bind_int(st, i, v.get<bool>() ? 1 : 0);
      } else if (v.is_number_integer()) {
        sqlite3_bind_int64(st, i, v.get<int64_t>());
      } else if (v.is_number()) {
        sqlite3_bind_double(st, i, v.get<double>());
      } else if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        char* end = nullptr;
        errno = 0;
        const long long n = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && end && *end == 0 && errno == 0) {
          sqlite3_bind_int64(st, i, n);
        } else {
          const double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
          if (!s.empty() && end && *end == 0 && std::isfinite(d))
            sqlite3_bind_double(st, i, d);
          else
            sqlite3_bind_text(st, i, s.c_str(), -1, SQLITE_TRANSIENT);
        }
      } else {
        const std::string s = v.dump();
        sqlite3_bind_text(st, i, s.c_str(), -1, SQLITE_TRANSIENT);
      }
      ++i;
    }
    step_done(st);
  }

 private:
  void step_done(sqlite3_stmt* st) {
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) throw core::ConfigError(fmt::format("{}: {}", m_path, sqlite3_errmsg(m_db)));
  }

  std::string m_path;
  sqlite3* m_db = nullptr;
  std::set<std::string> m_cols;
};

/// The file a point leaves its numbers in.
const char* result_file(const systems::SweepSpec& s) {
  return s.command == "topology" ? "topology.json" : "stats.json";
}

/// stats.json value at a dotted path (null if absent).
const nlohmann::json* find_stat(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* cur = &j;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
  return nullptr;
}

/// Unit and description of a statistic from stats.json's schema: the path
/// itself, or with its instance names replaced by their module types
/// (sys.npu3.memory.comm_bytes -> npu.memory.comm_bytes) as far as they match.
std::pair<std::string, std::string> stat_unit(const nlohmann::json& stats, const std::string& path) {
  const auto sc = stats.find("schema");
  if (sc == stats.end() || !sc->is_object()) return {};
  for (const auto& [k, v] : sc->items()) {
    bool match = k == path;
    if (!match && path.size() > k.size()) {
      // suffix match on whole components: ".memory.comm_bytes" of the path against the schema key's tail
      const size_t dot = k.find('.');
      const std::string tail = dot == std::string::npos ? k : k.substr(dot);
      match = path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0 &&
              dot != std::string::npos;
    }
    if (match) return {v.value("unit", ""), v.value("description", "")};
  }
  return {};
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

/// The last line of a failed run's log that says what went wrong.
std::string failure_message(const std::string& log) {
  std::string last;
  size_t pos = 0;
  while (pos < log.size()) {
    const size_t nl = log.find('\n', pos);
    const std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.find("error") != std::string::npos || line.find("mismatch") != std::string::npos) return line;
    if (!line.empty()) last = line;
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return last;
}

}  // namespace

namespace {
void on_signal(int sig) { systems::jobs_signal = sig; }

/// SIGINT / SIGTERM stop the sweep: they interrupt its wait for its points
/// (no SA_RESTART), or, when they come while it records a point or starts
/// the next, run_jobs sees them before its next wait (systems::jobs_signal).
/// The running points are killed, what finished stays recorded.
class SignalGuard {
 public:
  SignalGuard() {
    systems::jobs_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, &m_int);
    sigaction(SIGTERM, &sa, &m_term);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGTERM, &m_term, nullptr);
  }

 private:
  struct sigaction m_int {
  }, m_term{};
};
}  // namespace

namespace {

/// What run_sweep and collect share: the database, the spec, the points and
/// which of them still need a result.
struct Prepared {
  systems::SweepSpec s;
  std::vector<systems::SweepPoint> all;
  fs::path out;
  std::string db_path;
  std::unique_ptr<Db> db;
  std::vector<const systems::SweepPoint*> to_run;
  size_t skipped_ok = 0, skipped_failed = 0;
  std::set<std::string> units_known;
};

Prepared prepare(const SweepOptions& o) {
  Prepared p;
  p.s = systems::load_sweep(o.file);
  if (o.quick) systems::restrict_to_quick(p.s);
  p.all = systems::sweep_points(p.s);
  p.out = fs::path(o.out) / p.s.name;
  fs::create_directories(p.out);
  p.db_path = o.db.empty() ? (fs::path(o.out) / (p.s.name + ".sqlite")).string() : o.db;
  if (fs::path(p.db_path).has_parent_path()) fs::create_directories(fs::path(p.db_path).parent_path());
  p.db = std::make_unique<Db>(p.db_path);
  for (const systems::SweepAxis& a : p.s.axes)
    for (const std::string& k : a.keys) p.db->column(k, "param", "", k.rfind("-", 0) == 0 ? "run option" : "parameter");
  for (const systems::SweepPoint& pt : p.all) {
    const std::string st = p.db->status(pt.key);
    if (st == "ok") {
      ++p.skipped_ok;
    } else if (!st.empty() && !o.retry_failed) {
      ++p.skipped_failed;
    } else {
      p.to_run.push_back(&pt);
    }
  }
  return p;
}

std::string point_dir(const Prepared& p, const systems::SweepPoint& pt) {
  return (p.out / "points" / std::to_string(pt.index)).string();
}

/// Record one finished point; returns its exit code (0: ok) and sets `message`.
int record(Prepared& p, const systems::SweepPoint& pt, const std::string& dir, const systems::JobEnd& end,
           const nlohmann::json& result, std::string& message) {
  const systems::SweepSpec& s = p.s;
  std::vector<std::pair<std::string, nlohmann::json>> row = {
      {"sweep", s.name}, {"point", pt.key}, {"seed", pt.seed}, {"out_dir", dir}, {"finished_utc", utc_now()}};
  for (const auto& [k, v] : pt.params) row.emplace_back(k, v);
  std::string status = "ok";
  message.clear();
  int code = end.exit_code;
  if (end.exit_code == 0) {
    if (const auto* run = find_stat(result, "run")) {
      row.emplace_back("version", run->value("version", ""));
      row.emplace_back("config_hash", run->value("config_hash", ""));
      row.emplace_back("platform", run->value("platform", ""));
      row.emplace_back("wall_s", run->value("wall_s", 0.0));
    }
    std::vector<std::string> missing;
    for (const std::string& k : s.record) {
      const nlohmann::json* v = find_stat(result, k);
      if (!v || v->is_object() || v->is_array()) {
        missing.push_back(k);
        p.db->column(k, "stat", "", "");  // the column exists (NULL here); a point that has the value gives its unit
        row.emplace_back(k, nullptr);
        continue;
      }
      if (p.units_known.insert(k).second) {
        const auto [unit, desc] = stat_unit(result, k);
        p.db->column(k, "stat", unit, desc);
      }
      row.emplace_back(k, *v);
    }
    if (!missing.empty()) {
      status = "failed";
      code = 1;
      message = fmt::format("{} has no value {} (record: in {})", result_file(s), fmt::join(missing, ", "), s.file);
    }
  } else {
    status = "failed";
    if (end.exit_code < 0) code = 5;
    message = end.signal ? fmt::format("killed by signal {}", end.signal) : failure_message(end.log);
    for (const std::string& k : s.record) {
      p.db->column(k, "stat", "", "");
      row.emplace_back(k, nullptr);
    }
  }
  row.emplace_back("status", status);
  row.emplace_back("exit_code", code);
  row.emplace_back("message", message);
  p.db->insert(row);
  return code;
}

/// A shell word.
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const fs::path& f) {
  std::ifstream in(f);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// --slurm: one job array, task i runs point to_run[i] into its folder and
/// leaves its exit code in <folder>/exit_code (written last, atomically).
int submit_slurm(const SweepOptions& o, Prepared& p) {
  if (p.to_run.empty()) {
    fmt::print("sweep {}: every point is recorded already ({} ok{}); nothing to submit\n", p.s.name, p.skipped_ok,
               p.skipped_failed ? fmt::format(", {} failed: --retry-failed", p.skipped_failed) : std::string());
    return 0;
  }
  const fs::path dir = fs::absolute(p.out / "slurm");
  fs::create_directories(dir);
  const std::string exe = systems::fabricvp_executable();
  std::string job = "#!/bin/sh\n# fabricvp sweep " + p.s.file + ": one array task per point (docs/sweeps.md)\n";
  job += fmt::format("#SBATCH --job-name=fabricvp-{}\n#SBATCH --array=0-{}\n#SBATCH --output={}\n", p.s.name,
                     p.to_run.size() - 1, (dir / "task_%a.log").string());
  if (!o.partition.empty()) job += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time.empty()) job += "#SBATCH --time=" + o.time + "\n";
  if (!o.mem.empty()) job += "#SBATCH --mem=" + o.mem + "\n";
  job += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\nset -u\ncase \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (size_t i = 0; i < p.to_run.size(); ++i) {
    const std::string d = fs::absolute(point_dir(p, *p.to_run[i])).string();
    fs::remove_all(d);  // no stale outputs (or exit code) of an earlier attempt
    std::string args;
    for (const std::string& a : systems::point_args(p.s, *p.to_run[i], d)) args += " " + sh_quote(a);
    job += fmt::format("{}) dir={}; set --{} ;;\n", i, sh_quote(d), args);
  }
  job += "*) echo \"no point for array task $SLURM_ARRAY_TASK_ID\" >&2; exit 1 ;;\nesac\n";
  job += "mkdir -p \"$dir\"\n" + sh_quote(exe) + " \"$@\" > \"$dir/log.txt\" 2>&1\n";
  job += "echo $? > \"$dir/exit_code.tmp\" && mv \"$dir/exit_code.tmp\" \"$dir/exit_code\"\n";
  const fs::path script = dir / "job.sh";
  core::write_file(script.string(), job, "Slurm job script");
  fs::permissions(script, fs::perms::owner_all, fs::perm_options::add);
  const std::string cmd = sh_quote(o.sbatch) + " --parsable " + sh_quote(script.string()) + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) throw core::ConfigError("cannot run " + o.sbatch);
  std::string text;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const int status = pclose(f);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw core::ConfigError(fmt::format("{} refused the job array {}: {}", o.sbatch, script.string(), text));
  fmt::print(
      "sweep {}: submitted {} points as Slurm job array {} ({}); {} already ok. When they finish: fabricvp sweep "
      "collect {}{}{}\n",
      p.s.name, p.to_run.size(), text, script.string(), p.skipped_ok, o.file,
      o.out == SweepOptions{}.out ? std::string() : " --out " + o.out, o.db.empty() ? std::string() : " --db " + o.db);
  return 0;
}

/// collect: record the points whose array task left an exit code.
int collect(const SweepOptions& o, Prepared& p) {
  size_t ok = 0, failed = 0, pending = 0;
  int first_failure = 0;
  for (const systems::SweepPoint* pt : p.to_run) {
    const fs::path d = point_dir(p, *pt);
    const fs::path code_file = d / "exit_code";
    if (!fs::exists(code_file)) {
      ++pending;
      continue;
    }
    systems::JobEnd end;
    const std::string code_text = read_text(code_file);
    try {
      end.exit_code = std::stoi(code_text);
    } catch (const std::exception&) {
      end.exit_code = -1;
    }
    end.log = read_text(d / "log.txt");
    nlohmann::json result;
    if (end.exit_code == 0) {
      try {
        result = nlohmann::json::parse(read_text(d / result_file(p.s)));
      } catch (const std::exception& e) {
        end.exit_code = 5;
        end.log = fmt::format("unreadable {}: {}", result_file(p.s), e.what());
      }
    }
    std::string message;
    const int code = record(p, *pt, d.string(), end, result, message);
    if (code == 0) {
      ++ok;
    } else {
      ++failed;
      if (!first_failure) first_failure = code;
      if (!o.quiet) fmt::print(stderr, "fabricvp sweep: point {} failed (exit {}): {}\n", pt->index, code, message);
    }
  }
  fmt::print(
      "sweep {}: collected {} points ({} ok, {} failed), {} not finished yet, {} already recorded; results in "
      "{}\n",
      p.s.name, ok + failed, ok, failed, pending, p.skipped_ok + p.skipped_failed, p.db_path);
  return first_failure;
}

}  // namespace

int run_sweep(const SweepOptions& o) {
  try {
    Prepared p = prepare(o);
    if (o.collect) return collect(o, p);
    if (o.slurm) return submit_slurm(o, p);
    const SignalGuard guard;  // the points run here: a signal stops them, what finished stays recorded
    const systems::SweepSpec& s = p.s;
    std::vector<systems::Job> jobs;
    for (const systems::SweepPoint* pt : p.to_run) {
      const std::string dir = point_dir(p, *pt);
      fs::remove_all(dir);  // no stale outputs of an earlier attempt
      jobs.push_back(systems::Job{systems::point_args(s, *pt, dir), dir, {}});
    }
    const bool tty = !o.quiet && isatty(2);
    const auto t0 = std::chrono::steady_clock::now();
    size_t done = 0, failed = 0;
    int first_failure = 0;
    auto progress = [&](bool final) {
      if (!tty) return;
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double eta = done ? el / done * (jobs.size() - done) : 0;
      fmt::print(stderr, "\r{}: {}/{} points, {} failed, {} elapsed{}   ", s.name, done, jobs.size(), failed,
                 core::human_duration(el), final || !done ? std::string() : ", ETA " + core::human_duration(eta));
      if (final) fmt::print(stderr, "\n");
    };
    progress(false);
    systems::run_jobs(jobs, o.jobs, [&](size_t i, systems::Job& j, const systems::JobEnd& end) {
      const systems::SweepPoint& pt = *p.to_run[i];
      std::string message;
      const int code = record(p, pt, j.dir, end, j.result, message);
      ++done;
      if (code != 0) {
        ++failed;
        if (!first_failure) first_failure = code;
        if (!tty && !o.quiet)
          fmt::print(stderr, "fabricvp sweep: point {} failed (exit {}): {}\n", pt.index, code, message);
      }
      progress(false);
    });
    if (systems::jobs_signal) throw systems::Interrupted();  // it came as the last point ended
    progress(true);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(
        "sweep {}: {} points: {} run ({} ok, {} failed), {} already ok{} in {}; results in {} (table runs), "
        "outputs in {}\n",
        s.name, p.all.size(), jobs.size(), jobs.size() - failed, failed, p.skipped_ok,
        p.skipped_failed ? fmt::format(", {} failed before (--retry-failed runs them)", p.skipped_failed)
                         : std::string(),
        core::human_duration(el), p.db_path, (p.out / "points").string());
    return first_failure;
  } catch (const systems::Interrupted&) {
    fmt::print(stderr,
               "\nfabricvp sweep: stopped by signal {}; the points that finished are recorded, running them "
               "again resumes the sweep\n",
               static_cast<int>(systems::jobs_signal));
    return 128 + static_cast<int>(systems::jobs_signal);
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fabricvp: internal error: {}\n", e.what());
    return 5;
  }
}

}  // namespace fabricvp::runtime
