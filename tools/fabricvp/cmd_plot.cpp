// fabricvp plot <results.sqlite> --x KEY --y STAT [--by KEY]: a PNG from a
// sweep's database (runtime/plot.h, docs/sweeps.md).
#include <memory>
#include <string>

#include "runtime/plot.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

const cli::Command plot_cmd([](CLI::App& app) {
  auto o = std::make_shared<runtime::PlotOptions>();
  auto* sub = app.add_subcommand("plot", "draw a statistic against a parameter from a sweep database (PNG)");
  sub->add_option("db", o->db, "results database (fabricvp sweep)")->required();
  sub->add_option("--x", o->x, "column on the x axis (a parameter)")->required();
  sub->add_option("--y", o->y, "column on the y axis (a recorded statistic)")->required();
  sub->add_option("--by", o->by, "one line per value of this column");
  sub->add_option("--sweep", o->sweep, "only the rows of this sweep");
  sub->add_option("--where", o->where, "an extra SQL condition on the runs table");
  sub->add_option("--out,-o", o->out, "PNG file (default: <db>_<y>.png)");
  sub->add_flag("--logx", o->logx, "logarithmic x axis (automatic for sizes spanning 16x or more)");
  sub->add_flag("--logy", o->logy, "logarithmic y axis");
  return cli::Handler{sub, [o] { return runtime::run_plot(*o); }};
});

}  // namespace
