// Quantities as users write and read them: sizes and times on the command
// line and in summaries.
#pragma once

#include <cstdint>
#include <string>

namespace fabricvp::core {

/// "64MiB", "1GiB", "1000", "4KiB", "100kB", "1.5MiB", "1e6"; throws ConfigError naming `what`.
uint64_t parse_bytes(const std::string& s, const std::string& what = "--bytes");
/// "10us", "2.5ms", "100ns", "5000ps", "1e3ns"; throws ConfigError naming `what`.
uint64_t parse_time_ps(const std::string& s, const std::string& what = "time");
/// 64 MiB, 100 KiB, 4097 B.
std::string human_bytes(uint64_t bytes);
/// Wall time: 42s, 3m05s, 2h07m.
std::string human_duration(double seconds);
/// About: 2.2 GiB, 709 MiB, 12 KiB, 100 B (for estimates).
std::string approx_bytes(uint64_t bytes);
/// 722.222 ns, 36.241 us, 1.376 ms.
std::string human_time(uint64_t ps);

}  // namespace fabricvp::core
