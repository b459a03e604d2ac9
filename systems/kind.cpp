#include "systems/kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "models/core/context.h"
#include "models/core/param.h"

namespace fabricvp::systems {

namespace {
std::map<std::string, Kind>& kind_registry() {
  static std::map<std::string, Kind> kinds;
  return kinds;
}
}  // namespace

void Summary::line(const std::string& label, const std::string& text) {
  m_out += fmt::format("  {:<12} {}\n", label, text);
}

void Summary::text(const std::string& text) { m_out += text + "\n"; }

void RunOptions::refuse(const std::string& option, const std::string& why) const {
  if (!given.count(option) && !kind_options.count(option)) return;
  static const std::map<std::string, std::string> aliases = {{"src", "--src/--root"}, {"dst", "--dst/--peer"}};
  const auto a = aliases.find(option);
  throw core::ConfigError(fmt::format("{}: {}", a == aliases.end() ? "--" + option : a->second, why));
}

core::Dtype RunOptions::reduction_dtype() const {
  if (!core::is_reduction_dtype(dtype))
    throw core::ConfigError(fmt::format(
        "--dtype {}: collectives reduce fp32, bf16, fp16 or int32 ({} is an input type of the TSP matrix unit: "
        "--workload matmul)",
        core::dtype_name(dtype), core::dtype_name(dtype)));
  return dtype;
}

bool register_kind(Kind kind) {
  auto& r = kind_registry();
  if (r.count(kind.name)) throw std::logic_error("system kind '" + kind.name + "' registered twice");
  r.emplace(kind.name, std::move(kind));
  return true;
}

std::vector<const Kind*> kinds() {
  std::vector<const Kind*> out;
  for (const auto& [name, k] : kind_registry()) out.push_back(&k);
  return out;
}

const Kind& kind_for(const core::Config& config) {
  const core::ConfigEntry* t = config.find("sys.topology");
  std::string known;
  for (const Kind* k : kinds()) {
    if (!t && k->default_kind) return *k;
    if (t && std::find(k->topologies.begin(), k->topologies.end(), t->value) != k->topologies.end()) return *k;
    for (const auto& top : k->topologies) known += (known.empty() ? "" : ", ") + top;
  }
  if (!t) throw core::ConfigError("no system kind is the default (sys.topology is not set)");
  throw core::ConfigError(fmt::format("{}: key 'sys.topology': no system kind elaborates '{}' (topologies: {})",
                                      t->origin.str(), t->value, known));
}

std::vector<std::string> parameter_names() {
  std::vector<std::string> out;
  for (const auto* p : core::all_params()) out.push_back(p->name());
  return out;
}

std::unique_ptr<Scenario> elaborate(const Kind& kind, const RunOptions& opt) {
  core::Context& ctx = core::Context::get();
  const size_t unwound_before = ctx.unwound_params().size();  // another elaboration's, in this process
  struct Noting {
    core::Context& ctx;
    explicit Noting(core::Context& c) : ctx(c) { ctx.set_noting_unwound_params(true); }
    ~Noting() { ctx.set_noting_unwound_params(false); }
  };
  try {
    const Noting noting(ctx);
    return kind.elaborate(opt);
  } catch (const core::ConfigError& e) {
    std::vector<std::string> known = parameter_names();
    known.insert(known.end(), ctx.unwound_params().begin() + unwound_before, ctx.unwound_params().end());
    const std::string typos = ctx.config().likely_typos(known);
    if (typos.empty()) throw;
    throw core::ConfigError(std::string(e.what()) + typos);
  }
}

}  // namespace fabricvp::systems
