// fabricvp params <platform.yaml> [-p key=value ...]: every parameter of the
// elaborated platform with its value, unit, origin and meaning.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "models/core/param.h"
#include "runtime/driver.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

struct Options {
  std::string platform;
  std::vector<std::string> overrides;
};

int params(const Options& o) {
  try {
    auto scenario = runtime::elaborate(o.platform, o.overrides);
    fmt::print("{:<44} {:>12} {:<8} {:<14} {}\n", "parameter", "value", "unit", "set by", "description");
    for (const core::ParamBase* p : core::all_params())
      fmt::print("{:<44} {:>12} {:<8} {:<14} {}\n", p->name(), p->value_str(), p->unit(),
                 p->source() ? p->source()->origin.str() : "default", p->description());
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

const cli::Command params_cmd([](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("params", "list every parameter of a platform with value, unit and origin");
  sub->add_option("platform", o->platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  sub->add_option("-p,--param", o->overrides, "override a parameter: key=value");
  return cli::Handler{sub, [o] { return params(*o); }};
});

}  // namespace
