// fabricvp sweep <sweep.yaml>: every point of a design-space sweep as its own
// run, N at a time, into one SQLite file (runtime/sweep.h, docs/sweeps.md).
#include <memory>
#include <string>

#include "runtime/sweep.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

const cli::Command sweep_cmd([](CLI::App& app) {
  auto o = std::make_shared<runtime::SweepOptions>();
  auto* sub = app.add_subcommand("sweep", "run every point of a sweep file, results in SQLite (docs/sweeps.md)");
  sub->add_option("file", o->file, "sweep file (YAML)")->required();
  sub->add_option("--jobs,-j", o->jobs, "simulations at a time")->check(CLI::Range(1u, 1024u));
  sub->add_option("--db", o->db, "results database (default: <out>/<sweep name>.sqlite)");
  sub->add_option("--out,-o", o->out, "output directory (<out>/<sweep name>/points/<index> per point)");
  sub->add_flag("--retry-failed", o->retry_failed, "run again the points recorded as failed");
  sub->add_flag("--quiet,-q", o->quiet, "no progress line and no per-failure messages");
  return cli::Handler{sub, [o] { return runtime::run_sweep(*o); }};
});

}  // namespace
