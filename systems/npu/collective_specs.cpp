#include "systems/npu/collective_specs.h"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "models/core/config.h"
#include "models/core/units.h"

namespace fabricvp::npusys {

Spec parse_spec(const std::string& text, const systems::RunOptions& opt) {
  Spec s;
  s.text = text;
  s.bytes = opt.bytes;
  s.dtype = opt.reduction_dtype();
  std::stringstream ss(text);
  std::string item;
  bool first = true;
  while (std::getline(ss, item, ',')) {
    if (first) {
      if (!npu::parse_collective(item, s.kind))
        throw core::ConfigError(fmt::format(
            "--collective '{}': unknown collective '{}' (allreduce, reducescatter, allgather, alltoall, broadcast)",
            text, item));
      first = false;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      throw core::ConfigError(fmt::format("--collective '{}': expected key=value, got '{}'", text, item));
    if (key == "bytes") {
      s.bytes = core::parse_bytes(value, "--collective " + text + ": bytes");
    } else if (key == "dtype") {
      if (!core::parse_dtype(value, s.dtype) || !core::is_reduction_dtype(s.dtype))
        throw core::ConfigError(fmt::format("--collective '{}': dtype '{}' (fp32, bf16, fp16, int32)", text, value));
    } else if (key == "group") {
      s.group = value;
    } else if (key == "root") {
      char* end = nullptr;
      const unsigned long v = std::strtoul(value.c_str(), &end, 10);
      if (!end || *end || value[0] == '-')
        throw core::ConfigError(fmt::format("--collective '{}': root '{}' is not a rank", text, value));
      s.root = static_cast<uint32_t>(v);
    } else if (key == "at") {
      s.at_ps = core::parse_time_ps(value, "--collective " + text + ": at");
    } else {
      throw core::ConfigError(
          fmt::format("--collective '{}': unknown key '{}' (bytes, dtype, group, root, at)", text, key));
    }
  }
  if (first) throw core::ConfigError("--collective '': expected a collective");
  return s;
}

}  // namespace fabricvp::npusys
