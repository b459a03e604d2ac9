// Test harness: elaborate a node from YAML text, load hand-written assembly,
// run, and inspect SRAM, statistics and hardware errors. One per process.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <systemc>
#include <vector>

#include "models/core/context.h"
#include "runtime/driver.h"
#include "sw/asm/program.h"
#include "sw/sched/collectives.h"
#include "systems/groq/collective_data.h"
#include "systems/groq/machine.h"
#include "systems/groq/programs.h"
#include "systems/groq/system.h"

namespace fabricvp::test {

/// Built with AddressSanitizer (the `make test` sanitizer tree): a few runs
/// too slow or too large there are release-only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

/// A node of `tsps` chips with the given extra YAML (nested under sys.node0).
inline std::string node_yaml(uint32_t tsps, const std::string& extra = "") {
  return "sys:\n  tsps_per_node: " + std::to_string(tsps) + "\n" + extra;
}

class Bench {
 public:
  explicit Bench(const std::string& yaml, const std::string& name = "bench.yaml") {
    auto& ctx = core::Context::get();
    ctx.config().load_string(yaml, name);
    params = std::make_unique<groq::CompilerParams>();
    sys = std::make_unique<groq::System>("sys");
    ctx.config().check_all_used(systems::parameter_names());
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  tsp::Tsp& chip(uint32_t i) { return *sys->chips.at(i); }
  const core::Clock& clk(uint32_t i = 0) { return chip(i).clock(); }

  void load(uint32_t c, const std::string& text) {
    sw::Program p = sw::assemble(text, "chip" + std::to_string(c) + ".s");
    for (uint32_t q = 0; q < p.queues.size(); ++q) {
      auto img = sw::encode_queue(p.queues[q]);
      sys->host.write(c, tsp::kImemBase + q * tsp::kImemStride, img.data(), img.size());
    }
    loaded.push_back(c);
  }
  void write_vec(uint32_t c, uint32_t vec, const std::vector<uint8_t>& data) {
    sys->host.write(c, uint64_t(vec) * tsp::kVectorBytes, data.data(), data.size());
  }
  std::vector<uint8_t> read_vec(uint32_t c, uint32_t vec, uint32_t count = 1) {
    std::vector<uint8_t> out(count * tsp::kVectorBytes);
    sys->host.read(c, uint64_t(vec) * tsp::kVectorBytes, out.data(), out.size());
    return out;
  }
  /// Start the loaded chips, simulate to the end, apply everything.
  void run() {
    for (uint32_t c : loaded) chip(c).start();
    sc_core::sc_start();
    for (auto* t : sys->chips) t->finish();
  }
  const std::vector<core::HardwareError>& errors() const { return core::Context::get().hw_errors(); }
  uint64_t now_ps() const { return sc_core::sc_time_stamp().value(); }

  std::unique_ptr<groq::CompilerParams> params;
  std::unique_ptr<groq::System> sys;
  std::vector<uint32_t> loaded;
};

/// A vector whose 80 fp32/int32 lanes (or 160 16-bit lanes) hold a recognizable pattern.
inline std::vector<uint8_t> pattern(uint32_t seed, uint32_t vectors = 1) {
  std::vector<uint8_t> v(vectors * tsp::kVectorBytes);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + 1) & 0xff);
  return v;
}

/// The bit pattern of a float and back.
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float flt(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Assemble one line of a queue that must be refused: the error names
/// bad.s line 2 and contains `what`.
inline void expect_asm_error(const std::string& line, const std::string& what) {
  try {
    sw::assemble(".queue 0\n" + line + "\n", "bad.s");
    ADD_FAILURE() << "accepted: " << line;
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.s:2:"), std::string::npos) << e.what();
  }
}

/// Output and exit code of a command-line run.
struct Result {
  int code;
  std::string out;  ///< stdout and stderr
};

/// Run a shell command line; `out` is what it writes to stdout (redirect in `cmd` for more).
inline Result shell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Run the fabricvp binary with `args` (a shell word list), in directory `cwd` if given.
inline Result sh(const std::string& args, const std::string& cwd = "") {
  return shell((cwd.empty() ? "" : "cd '" + cwd + "' && ") + std::string(FABRICVP_BIN) + " " + args + " 2>&1");
}

/// A scratch directory removed at the end of the test.
/// An ndim platform of one Ring of 4 NPUs, 100 GB/s links, 500 ns latency,
/// one chunk per collective, NPU memory and ALUs fast enough that the network
/// alone sets collective times (closed-form checks).
inline const char* const kIdleNdimRing =
    "sys:\n"
    "  topology: ndim\n"
    "  dims: 1\n"
    "  dim0: {type: Ring, npus: 4, links: 1, GBps: 100, latency_ns: 500}\n"
    "  npu*:\n"
    "    memory: {GBps: 1000000}\n"
    "    compute: {vector_tflops: 1000000}\n"
    "ace: {model: none}\n"
    "collective: {chunks: 1, align_elems: 1}\n";

class TempDir {
 public:
  TempDir() : path(std::filesystem::temp_directory_path() / ("fabricvp-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  std::string operator/(const std::string& s) const { return (path / s).string(); }
  std::filesystem::path path;
};

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

/// `fabricvp run` in-process: quiet, into a scratch folder removed after;
/// expects exit code `rc` and returns the run's stats.json (null if none).
/// Load one binary instruction (one the assembler would refuse) into queue 4
/// of chip 0 of a 2-TSP node and run: the chip's refusal when it decodes it,
/// or "" if it accepted the instruction. One elaboration: once per process.
inline std::string refusal_at_load(const tsp::Instr& in) {
  Bench b(node_yaml(2));
  const std::vector<uint8_t> img = sw::encode_queue({in});
  b.sys->host.write(0, tsp::kImemBase + 4 * tsp::kImemStride, img.data(), img.size());
  b.loaded.push_back(0);
  try {
    b.run();
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

/// The run stopped on exactly one hardware error, and its message says `what`.
inline void expect_hardware_error(const Bench& b, const std::string& what) {
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find(what), std::string::npos) << b.errors()[0].message;
}

inline nlohmann::json run_stats(systems::RunOptions o, int rc = 0) {
  o.quiet = true;
  o.out_dir = (std::filesystem::temp_directory_path() / ("fabricvp-run-" + std::to_string(::getpid()))).string();
  EXPECT_EQ(runtime::run(o), rc);
  nlohmann::json j;
  std::ifstream f(o.out_dir + "/stats.json");
  if (f) j = nlohmann::json::parse(f);
  std::filesystem::remove_all(o.out_dir);
  return j;
}

}  // namespace fabricvp::test
