// `fabricvp plot`: a statistic against a parameter from a sweep's SQLite file
// (runtime/sweep.h), one line per value of a third column, drawn by Debian's
// matplotlib into a PNG. Axis labels carry the units of the database's
// `columns` table; points with several seeds show their mean and range.
#pragma once

#include <string>

namespace fabricvp::runtime {

struct PlotOptions {
  std::string db;
  std::string x, y, by;  ///< columns of `runs` (by: optional)
  std::string sweep;     ///< only rows of this sweep (optional)
  std::string where;     ///< an extra SQL condition on runs (optional)
  std::string out;       ///< PNG (default: <db without .sqlite>_<y>.png)
  bool logx = false, logy = false;
  std::string python = "/usr/bin/python3";  ///< Debian's, with python3-matplotlib
};

/// Returns the exit code (0; 1 for bad input: a missing database or column,
/// no rows; 5 if matplotlib fails).
int run_plot(const PlotOptions& o);

}  // namespace fabricvp::runtime
