// Platform YAML and -p overrides: the input is the platform file's text, then
// optionally a NUL byte and -p assignments, one per line. Every entry's value
// goes through the parameter parsers (the ones Param<T> uses) and the units.
#include <vector>

#include "fuzz.h"
#include "models/core/config.h"
#include "models/core/param.h"
#include "models/core/units.h"

namespace {

using namespace fabricvp;

// Parameter names as the platforms declare them (groq-node, npu-3d-64), for
// resolve() and the "did you mean" search.
const std::vector<std::string> kKnown = {
    "sys.nodes",     "sys.node0.tsp0.clock_mhz", "sys.node0.link3.lane_gbps", "sys.node0.link3.fec", "sys.npu12.cores",
    "sys.dim0.GBps", "sys.dim1.latency_ns",      "collective.chunks",         "collective.policy",   "trace.window",
    "ace.model",     "sys.npu0.compute.timing",  "sys.npu0.memory.GBps"};

template <typename T>
void round_trip(const std::string& v) {
  T x{};
  if (!core::detail::parse_value(v, x)) return;
  T y{};
  fuzz::require(core::detail::parse_value(core::detail::to_text(x), y), "to_text of a parsed value parses");
  fuzz::require(core::detail::to_text(x) == core::detail::to_text(y), "a parsed value round-trips through to_text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = fuzz::text(data, size);
  const size_t cut = in.find('\0');
  core::Config c;
  try {
    c.load_string(in.substr(0, cut), "fuzz.yaml");
    if (cut != std::string::npos) {
      size_t at = cut + 1;
      while (at <= in.size()) {
        const size_t nl = std::min(in.find('\n', at), in.size());
        if (nl > at) c.add_override(in.substr(at, nl - at));
        at = nl + 1;
      }
    }
  } catch (const core::ConfigError&) {
    return 0;
  }
  for (const core::ConfigEntry& e : c.entries()) {
    round_trip<bool>(e.value);
    round_trip<int64_t>(e.value);
    round_trip<uint64_t>(e.value);
    round_trip<uint32_t>(e.value);
    round_trip<int>(e.value);
    round_trip<double>(e.value);
    try {
      const uint64_t b = core::parse_bytes(e.value, e.key);
      fuzz::require(!core::human_bytes(b).empty(), "human_bytes of parsed bytes");
    } catch (const core::ConfigError&) {
    }
    try {
      const uint64_t t = core::parse_time_ps(e.value, e.key);
      fuzz::require(!core::human_time(t).empty(), "human_time of a parsed time");
    } catch (const core::ConfigError&) {
    }
    fuzz::require(c.find(e.key) != nullptr || e.key.find('*') != std::string::npos, "an exact key finds its entry");
  }
  for (const std::string& k : kKnown) {
    const core::ConfigEntry* f = c.find(k);
    const core::ConfigEntry* r = c.resolve(k);
    fuzz::require(f == r, "find and resolve agree");
  }
  try {
    c.check_all_used(kKnown);
  } catch (const core::ConfigError&) {
  }
  return 0;
}
