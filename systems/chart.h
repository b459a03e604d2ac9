// Line charts as PNG files, drawn by Debian's matplotlib (python3 in a child
// process): `fabricvp plot` draws sweeps with it and every `fabricvp
// experiment` draws its figure next to its JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fabricvp::systems {

struct Series {
  Series() = default;
  Series(std::string l, std::vector<double> xs, std::vector<double> ys)
      : label(std::move(l)), x(std::move(xs)), y(std::move(ys)) {}
  std::string label;
  std::vector<double> x, y;
  std::vector<double> ymin, ymax;  ///< optional: a range around each y (error bars)
};

/// A matrix drawn as an image (row i, column j: the cell's value), e.g. a traffic matrix.
struct Heatmap {
  std::string label;
  std::vector<std::vector<double>> cells;
};

struct Chart {
  Chart() = default;
  Chart(std::string t, std::string xl, std::string yl, std::string lg)
      : title(std::move(t)), xlabel(std::move(xl)), ylabel(std::move(yl)), legend(std::move(lg)) {}
  std::string title, xlabel, ylabel, legend;  ///< legend: the title of the series' legend
  std::vector<Series> series;
  std::vector<std::string> categories;                 ///< x is the index into these (optional)
  std::vector<std::pair<double, std::string>> xticks;  ///< x tick positions and labels (optional)
  bool logx = false, logy = false;
  bool bars = false;  ///< bars instead of lines (categories on x)
  /// Images side by side instead of series (xlabel: columns, ylabel: rows,
  /// legend: the colour scale's label); zero cells blank, the scale logarithmic.
  std::vector<Heatmap> heatmaps;
};

/// Draw `c` into the PNG file `out`. Throws core::ConfigError if python3
/// cannot be started, std::runtime_error with matplotlib's output if it fails.
void draw_png(const Chart& c, const std::string& out, const std::string& python = "/usr/bin/python3");

/// x ticks for byte sizes (320 B, 64 KiB, 4 MiB ...), at each value given.
std::vector<std::pair<double, std::string>> size_ticks(const std::vector<double>& bytes);

}  // namespace fabricvp::systems
