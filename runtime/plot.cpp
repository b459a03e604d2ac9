#include "runtime/plot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/core/config.h"

extern char** environ;

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

// Draws what run_plot() prepared: argv[1] the data (JSON), argv[2] the PNG.
constexpr const char* kScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = json.load(open(sys.argv[1]))
fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=120)
markers = "osD^v<>ph*"
for i, s in enumerate(d["series"]):
    x, y = s["x"], s["y"]
    err = None
    if any(a != b for a, b in zip(s["ymin"], s["ymax"])):
        err = [[m - lo for m, lo in zip(y, s["ymin"])], [hi - m for m, hi in zip(y, s["ymax"])]]
    ax.errorbar(x, y, yerr=err, marker=markers[i % len(markers)], markersize=4, linewidth=1.4, capsize=3,
                label=s["label"])
if d["categories"]:
    ax.set_xticks(range(len(d["categories"])))
    ax.set_xticklabels(d["categories"], rotation=30 if len(d["categories"]) > 6 else 0, ha="right" if len(d["categories"]) > 6 else "center")
if d["xticks"]:
    ax.set_xticks([t[0] for t in d["xticks"]])
    ax.set_xticklabels([t[1] for t in d["xticks"]], rotation=30 if len(d["xticks"]) > 8 else 0)
    ax.minorticks_off()
if d["logx"]:
    ax.set_xscale("log", base=2 if d["xticks"] else 10)
    if d["xticks"]:
        ax.set_xticks([t[0] for t in d["xticks"]])
        ax.set_xticklabels([t[1] for t in d["xticks"]], rotation=30 if len(d["xticks"]) > 8 else 0)
        ax.minorticks_off()
if d["logy"]:
    ax.set_yscale("log")
ax.set_xlabel(d["xlabel"])
ax.set_ylabel(d["ylabel"])
ax.set_title(d["title"], fontsize=10)
ax.grid(True, which="major", alpha=0.35)
if len(d["series"]) > 1:
    ax.legend(title=d["legend"], fontsize=8, title_fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2])
)PY";

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};

/// "64KiB" -> 65536 (B, kB, KiB, MB, MiB, GB, GiB); false if not a size.
bool parse_size(const std::string& s, double& out) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  const std::string unit = s.substr(used);
  static const std::map<std::string, double> k = {{"B", 1},    {"kB", 1e3},        {"KB", 1e3}, {"KiB", 1024.0},
                                                  {"MB", 1e6}, {"MiB", 1048576.0}, {"GB", 1e9}, {"GiB", 1073741824.0}};
  auto it = k.find(unit);
  if (it == k.end() || used == 0) return false;
  out = v * it->second;
  return true;
}

std::string label(const std::string& name, const std::string& unit) {
  return unit.empty() ? name : fmt::format("{} ({})", name, unit);
}

}  // namespace

int run_plot(const PlotOptions& o) {
  try {
    std::error_code ec;
    if (!fs::is_regular_file(o.db, ec)) throw core::ConfigError(fmt::format("{}: no such database", o.db));
    Db db;
    if (sqlite3_open_v2(o.db.c_str(), &db.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      throw core::ConfigError(fmt::format("{}: cannot open: {}", o.db, sqlite3_errmsg(db.db)));
    // Columns and units.
    std::map<std::string, std::pair<std::string, std::string>> cols;  // name -> (kind, unit)
    {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db.db, "SELECT name, kind, COALESCE(unit, '') FROM columns", -1, &st, nullptr) !=
          SQLITE_OK)
        throw core::ConfigError(fmt::format("{}: not a fabricvp sweep database ({})", o.db, sqlite3_errmsg(db.db)));
      while (sqlite3_step(st) == SQLITE_ROW)
        cols[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = {
            reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
            reinterpret_cast<const char*>(sqlite3_column_text(st, 2))};
      sqlite3_finalize(st);
    }
    auto known = [&](const std::string& c, const char* what) {
      if (c.empty() || cols.count(c)) return;
      std::vector<std::string> names;
      for (const auto& [n, ku] : cols) names.push_back(fmt::format("{} ({})", n, ku.first));
      throw core::ConfigError(
          fmt::format("{}: no column '{}' for {}; the database has: {}", o.db, c, what, fmt::join(names, ", ")));
    };
    if (o.x.empty() || o.y.empty()) throw core::ConfigError("fabricvp plot needs --x and --y");
    known(o.x, "--x");
    known(o.y, "--y");
    known(o.by, "--by");
    auto q = [](const std::string& s) {
      std::string r = "\"";
      for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
      return r + "\"";
    };
    std::string sql = fmt::format("SELECT {}, {}, {} FROM runs WHERE status = 'ok' AND {} IS NOT NULL", q(o.x), q(o.y),
                                  o.by.empty() ? "''" : q(o.by), q(o.y));
    if (!o.sweep.empty()) sql += " AND sweep = ?1";
    if (!o.where.empty()) sql += " AND (" + o.where + ")";
    sql += " ORDER BY id";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db.db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw core::ConfigError(fmt::format("{}: {} (in: {})", o.db, sqlite3_errmsg(db.db), sql));
    if (!o.sweep.empty()) sqlite3_bind_text(st, 1, o.sweep.c_str(), -1, SQLITE_TRANSIENT);
    // Group: series (by value) -> x -> y samples. x is numeric, a size, or a category.
    struct Sample {
      std::string xs;
      double x = 0;
      bool numeric = false, size = false;
      double y;
      std::string by;
    };
    std::vector<Sample> rows;
    while (sqlite3_step(st) == SQLITE_ROW) {
      Sample s;
      const int t = sqlite3_column_type(st, 0);
      s.xs = sqlite3_column_text(st, 0) ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
      if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
        s.x = sqlite3_column_double(st, 0);
        s.numeric = true;
      } else if (parse_size(s.xs, s.x)) {
        s.numeric = s.size = true;
      }
      if (sqlite3_column_type(st, 1) != SQLITE_INTEGER && sqlite3_column_type(st, 1) != SQLITE_FLOAT) {
        sqlite3_finalize(st);
        throw core::ConfigError(fmt::format("{}: '{}' is not a number (value '{}')", o.db, o.y,
                                            reinterpret_cast<const char*>(sqlite3_column_text(st, 1))));
      }
      s.y = sqlite3_column_double(st, 1);
      if (sqlite3_column_type(st, 2) == SQLITE_FLOAT && std::fabs(sqlite3_column_double(st, 2)) < 9e15 &&
          sqlite3_column_double(st, 2) == std::floor(sqlite3_column_double(st, 2)))
        s.by = fmt::format("{}", static_cast<int64_t>(sqlite3_column_double(st, 2)));  // 25, not 25.0
      else
        s.by = sqlite3_column_text(st, 2) ? reinterpret_cast<const char*>(sqlite3_column_text(st, 2)) : "";
      rows.push_back(std::move(s));
    }
    sqlite3_finalize(st);
    if (rows.empty())
      throw core::ConfigError(fmt::format("{}: no successful runs with a value of '{}'{}", o.db, o.y,
                                          o.sweep.empty() ? "" : " in sweep " + o.sweep));
    const bool numeric = std::all_of(rows.begin(), rows.end(), [](const Sample& s) { return s.numeric; });
    const bool sizes = numeric && std::all_of(rows.begin(), rows.end(), [](const Sample& s) { return s.size; });
    std::vector<std::string> categories;
    if (!numeric)
      for (const Sample& s : rows)
        if (std::find(categories.begin(), categories.end(), s.xs) == categories.end()) categories.push_back(s.xs);
    // series label -> x -> samples (first-appearance order of series)
    std::vector<std::string> order;
    std::map<std::string, std::map<double, std::vector<double>>> groups;
    std::map<double, std::string> size_names;
    for (const Sample& s : rows) {
      const double x =
          numeric ? s.x
                  : static_cast<double>(std::find(categories.begin(), categories.end(), s.xs) - categories.begin());
      if (!groups.count(s.by)) order.push_back(s.by);
      groups[s.by][x].push_back(s.y);
      if (sizes) size_names[x] = s.xs;
    }
    nlohmann::json d;
    const std::string xunit = sizes ? "bytes" : cols[o.x].second, yunit = cols[o.y].second;
    d["xlabel"] = label(o.x, xunit);
    d["ylabel"] = label(o.y, yunit);
    d["legend"] = o.by;
    d["title"] = fmt::format("{}{}: {} runs{}", fs::path(o.db).stem().string(), o.sweep.empty() ? "" : " / " + o.sweep,
                             rows.size(), o.where.empty() ? "" : ", where " + o.where);
    d["categories"] = categories;
    d["xticks"] = nlohmann::json::array();
    if (sizes)
      for (const auto& [x, n] : size_names) d["xticks"].push_back({x, n});
    double lo = 0, hi = 0;
    if (numeric) {
      lo = rows[0].x;
      hi = rows[0].x;
      for (const Sample& s : rows) lo = std::min(lo, s.x), hi = std::max(hi, s.x);
    }
    // Values spanning 16x or more (sizes, bandwidths doubling) go on a log2
    // axis, ticked at the values themselves when there are few.
    const bool auto_log = numeric && lo > 0 && hi / lo >= 16;
    if (auto_log && !sizes) {
      std::set<double> xs;
      for (const Sample& s : rows) xs.insert(s.x);
      if (xs.size() <= 12)
        for (double x : xs)
          d["xticks"].push_back({x, x == std::floor(x) && std::fabs(x) < 9e15
                                        ? fmt::format("{}", static_cast<int64_t>(x))
                                        : fmt::format("{}", x)});
    }
    d["logx"] = o.logx || auto_log;
    d["logy"] = o.logy;
    size_t points = 0;
    for (const std::string& b : order) {
      nlohmann::json s = {{"label", o.by.empty() ? o.y : fmt::format("{} = {}", o.by, b)}};
      for (const auto& [x, ys] : groups[b]) {
        double sum = 0, mn = ys[0], mx = ys[0];
        for (double y : ys) sum += y, mn = std::min(mn, y), mx = std::max(mx, y);
        s["x"].push_back(x);
        s["y"].push_back(sum / static_cast<double>(ys.size()));
        s["ymin"].push_back(mn);
        s["ymax"].push_back(mx);
        ++points;
      }
      d["series"].push_back(s);
    }
    std::string out = o.out;
    if (out.empty()) {
      fs::path p(o.db);
      p.replace_extension();
      std::string y = o.y;
      std::replace_if(
          y.begin(), y.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)) && c != '_'; }, '_');
      out = p.string() + "_" + y + ".png";
    }
    const std::string data = out + ".json";
    std::ofstream(data) << d.dump(1);
    // matplotlib in a child process: argv python -c script data out.
    std::vector<std::string> args = {o.python, "-c", kScript, data, out};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = out + ".log";
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(&pid, o.python.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
      throw core::ConfigError(fmt::format("cannot start {} (python3-matplotlib: scripts/install-deps.sh)", o.python));
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream lf(log);
    const std::string text((std::istreambuf_iterator<char>(lf)), {});
    fs::remove(log, ec);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fmt::print(stderr, "fabricvp: internal error: matplotlib failed drawing {} (data in {}):\n{}", out, data, text);
      return 5;
    }
    fs::remove(data, ec);
    fmt::print("wrote {}: {} against {}, {} series, {} points from {} runs\n", out, o.y, o.x, order.size(), points,
               rows.size());
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace fabricvp::runtime
