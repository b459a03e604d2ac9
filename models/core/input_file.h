// Reading the user's input files (platform files, workloads, programs, traces,
// captures, sweep files) without being fooled by them: only a regular file of
// at most a size limit is read. A directory, FIFO, device or socket, or a file
// over the limit, is refused at once with a ConfigError naming the file and
// what it is, before anything is read (a FIFO or /dev/zero would otherwise
// block or be read forever). The file is opened without blocking and checked
// on the open descriptor, so what is checked is what is read.
#pragma once

#include <cstdint>
#include <string>

namespace fabricvp::core {

constexpr uint64_t kTextInputLimit = uint64_t(64) << 20;   ///< YAML, workload text, assembly
constexpr uint64_t kBinaryInputLimit = uint64_t(1) << 30;  ///< ELF, Chakra traces, pcap (read whole)

/// The whole file (`what` names it in errors: "platform file", "workload").
std::string read_input_file(const std::string& path, const char* what, uint64_t max_bytes = kTextInputLimit);
/// The same checks only, for readers that stream the file themselves.
void check_input_file(const std::string& path, const char* what, uint64_t max_bytes = kBinaryInputLimit);

}  // namespace fabricvp::core
