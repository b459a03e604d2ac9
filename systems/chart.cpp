#include "systems/chart.h"
#include "models/core/output_file.h"
#include "systems/spawn.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "models/core/config.h"
#include "models/core/units.h"

namespace fs = std::filesystem;

namespace fabricvp::systems {

namespace {

// Draws a chart: argv[1] the chart (JSON), argv[2] the PNG.
constexpr const char* kScript = R"PY(
import json, sys
import math
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = json.load(open(sys.argv[1]))
if d["heatmaps"]:
    from matplotlib.colors import LogNorm
    import numpy as np
    h = d["heatmaps"]
    vals = [v for m in h for row in m["cells"] for v in row if v > 0]
    norm = LogNorm(vmin=min(vals), vmax=max(vals)) if vals else None
    fig, axes = plt.subplots(1, len(h), figsize=(4.2 * len(h) + 1.0, 4.4), dpi=120, squeeze=False)
    for ax, m in zip(axes[0], h):
        a = np.ma.masked_less_equal(np.array(m["cells"], dtype=float), 0)
        im = ax.imshow(a, cmap="viridis", norm=norm, interpolation="nearest")
        ax.set_title(m["label"], fontsize=9)
        ax.set_xlabel(d["xlabel"])
        ax.set_ylabel(d["ylabel"])
    fig.suptitle(d["title"], fontsize=10)
    fig.colorbar(im, ax=list(axes[0]), label=d["legend"], shrink=0.8)
    fig.savefig(sys.argv[2])
    sys.exit(0)
fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=120)
markers = "osD^v<>ph*"
n = len(d["series"])
for i, s in enumerate(d["series"]):
    x, y = s["x"], s["y"]
    if d["bars"]:
        w = 0.8 / n
        ax.bar([v - 0.4 + w * (i + 0.5) for v in x], y, width=w, label=s["label"])
        continue
    err = None
    if s["ymin"] and any(a != b for a, b in zip(s["ymin"], s["ymax"])):
        err = [[m - lo for m, lo in zip(y, s["ymin"])], [hi - m for m, hi in zip(y, s["ymax"])]]
    ax.errorbar(x, y, yerr=err, marker=markers[i % len(markers)], markersize=4, linewidth=1.4, capsize=3,
                label=s["label"])
if d["logx"]:
    ax.set_xscale("log", base=2 if d["xticks"] else 10)
if d["logy"]:
    ax.set_yscale("log")
if d["categories"]:
    c = d["categories"]
    ax.set_xticks(range(len(c)))
    ax.set_xticklabels(c, rotation=30 if len(c) > 5 else 0, ha="right" if len(c) > 5 else "center")
if d["xticks"]:
    # Labels closer than 3.5 % of the axis to the previous one would overlap: drop them.
    pos = lambda v: math.log(v) if d["logx"] and v > 0 else v
    ticks = sorted(d["xticks"], key=lambda t: t[0])
    span = (pos(ticks[-1][0]) - pos(ticks[0][0])) or 1.0
    kept = []
    for t in ticks:
        if not kept or (pos(t[0]) - pos(kept[-1][0])) / span >= 0.035:
            kept.append(t)
    ax.set_xticks([t[0] for t in kept])
    ax.set_xticklabels([t[1] for t in kept], rotation=30 if len(kept) > 8 else 0)
    ax.minorticks_off()
ax.set_xlabel(d["xlabel"])
ax.set_ylabel(d["ylabel"])
ax.set_title(d["title"], fontsize=10)
ax.grid(True, which="major", alpha=0.35)
if n > 1:
    ax.legend(title=d["legend"] or None, fontsize=8, title_fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2])
)PY";

}  // namespace

void draw_png(const Chart& c, const std::string& out, const std::string& python) {
  nlohmann::json d = {{"title", c.title},
                      {"xlabel", c.xlabel},
                      {"ylabel", c.ylabel},
                      {"legend", c.legend},
                      {"logx", c.logx},
                      {"logy", c.logy},
                      {"categories", c.categories},
                      {"bars", c.bars},
                      {"xticks", nlohmann::json::array()},
                      {"series", nlohmann::json::array()},
                      {"heatmaps", nlohmann::json::array()}};
  for (const Heatmap& h : c.heatmaps) d["heatmaps"].push_back({{"label", h.label}, {"cells", h.cells}});
  for (const auto& [x, label] : c.xticks) d["xticks"].push_back({x, label});
  for (const Series& s : c.series)
    d["series"].push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}, {"ymin", s.ymin}, {"ymax", s.ymax}});
  const std::string data = out + ".json";
  core::write_file(data, d.dump(1), "plot data");
  const std::string log = out + ".log";
  int err = 0;
  const pid_t pid = spawn_logged({python, "-c", kScript, data, out}, log, err);
  if (pid < 0)
    throw core::ConfigError(
        fmt::format("cannot start {}: {} (python3-matplotlib: scripts/install-deps.sh)", python, std::strerror(err)));
  const int code = wait_exit_code(pid);
  std::ifstream lf(log);
  const std::string text((std::istreambuf_iterator<char>(lf)), {});
  std::error_code ec;
  fs::remove(log, ec);
  if (code != 0)
    throw std::runtime_error(fmt::format("matplotlib failed drawing {} (chart in {}):\n{}", out, data, text));
  fs::remove(data, ec);
}

std::vector<std::pair<double, std::string>> size_ticks(const std::vector<double>& bytes) {
  std::vector<std::pair<double, std::string>> t;
  for (double b : bytes) t.emplace_back(b, core::human_bytes(static_cast<uint64_t>(b)));
  return t;
}

}  // namespace fabricvp::systems
