#include "runtime/plot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/core/config.h"
#include "systems/chart.h"

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

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
    systems::Chart d;
    const std::string xunit = sizes ? "bytes" : cols[o.x].second, yunit = cols[o.y].second;
    d.xlabel = label(o.x, xunit);
    d.ylabel = label(o.y, yunit);
    d.legend = o.by;
    d.title = fmt::format("{}{}: {} runs{}", fs::path(o.db).stem().string(), o.sweep.empty() ? "" : " / " + o.sweep,
                          rows.size(), o.where.empty() ? "" : ", where " + o.where);
    d.categories = categories;
    if (sizes)
      for (const auto& [x, n] : size_names) d.xticks.emplace_back(x, n);
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
          d.xticks.emplace_back(x, x == std::floor(x) && std::fabs(x) < 9e15
                                       ? fmt::format("{}", static_cast<int64_t>(x))
                                       : fmt::format("{}", x));
    }
    d.logx = o.logx || auto_log;
    d.logy = o.logy;
    size_t points = 0;
    for (const std::string& b : order) {
      systems::Series s;
      s.label = o.by.empty() ? o.y : fmt::format("{} = {}", o.by, b);
      for (const auto& [x, ys] : groups[b]) {
        double sum = 0, mn = ys[0], mx = ys[0];
        for (double y : ys) sum += y, mn = std::min(mn, y), mx = std::max(mx, y);
        s.x.push_back(x);
        s.y.push_back(sum / static_cast<double>(ys.size()));
        s.ymin.push_back(mn);
        s.ymax.push_back(mx);
        ++points;
      }
      d.series.push_back(std::move(s));
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
    try {
      systems::draw_png(d, out, o.python);
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const core::ConfigError*>(&e)) throw;
      fmt::print(stderr, "fabricvp: internal error: {}", e.what());
      return 5;
    }
    fmt::print("wrote {}: {} against {}, {} series, {} points from {} runs\n", out, o.y, o.x, order.size(), points,
               rows.size());
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace fabricvp::runtime
