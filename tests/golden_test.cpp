// Regression goldens: whole-platform runs whose stats.json must stay byte for
// byte what tests/golden/<case>.json holds, apart from the fields that measure
// the host (wall times, peak RSS, resident SRAM pages) or name the build
// (version). The cases are listed in tests/golden/cases.txt; each runs from
// the source tree, so the platform path in the manifest is the same on every
// machine. FABRICVP_UPDATE_GOLDENS=1 rewrites the goldens instead of
// comparing (a change of numbers is its own commit that says why).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace fs = std::filesystem;

namespace {

struct Case {
  std::string name, args;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::string kGoldenDir = std::string(FABRICVP_SOURCE_DIR) + "/tests/golden";

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  std::ifstream f(kGoldenDir + "/cases.txt");
  std::string line;
  while (std::getline(f, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    out.push_back(Case{trim(line.substr(0, bar)), trim(line.substr(bar + 1))});
  }
  return out;
}

/// Remove what measures the host or names the build; the rest must not move.
void drop_host_fields(nlohmann::json& j) {
  for (const char* k : {"version", "wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s",
                        "sim_ns_per_wall_s", "peak_rss_mib", "rtl_eval_s"})
    j["run"].erase(k);
  // Resident OS pages of the sparse SRAM (mincore): host memory, not the model.
  std::vector<nlohmann::json*> todo{&j["sys"]};
  while (!todo.empty()) {
    nlohmann::json* o = todo.back();
    todo.pop_back();
    if (!o->is_object()) continue;
    o->erase("sram_host_bytes");
    for (auto& [k, v] : o->items()) todo.push_back(&v);
  }
}

std::string text_of(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Golden : public ::testing::TestWithParam<Case> {};

TEST_P(Golden, StatsMatchByteForByte) {
  const Case& c = GetParam();
  fabricvp::test::TempDir dir;
  const std::string out = dir / "out";
  const fabricvp::test::Result r = fabricvp::test::sh("run " + c.args + " -q -o " + out, FABRICVP_SOURCE_DIR);
  ASSERT_EQ(r.code, 0) << c.args << "\n" << r.out;
  nlohmann::json got = fabricvp::test::load_json(out + "/stats.json");
  drop_host_fields(got);
  const std::string got_text = got.dump(1) + "\n";
  const std::string file = kGoldenDir + "/" + c.name + ".json";
  if (const char* u = std::getenv("FABRICVP_UPDATE_GOLDENS"); u && std::string(u) == "1") {
    std::ofstream(file) << got_text;
    GTEST_SKIP() << "wrote " << file;
  }
  ASSERT_TRUE(fs::exists(file)) << file << " is missing (FABRICVP_UPDATE_GOLDENS=1 writes it)";
  const std::string want_text = text_of(file);
  if (got_text == want_text) return;
  // Name what moved, as JSON pointers.
  const nlohmann::json diff = nlohmann::json::diff(nlohmann::json::parse(want_text), got);
  std::string moved;
  for (size_t i = 0; i < diff.size() && i < 40; ++i) moved += "  " + diff[i].dump() + "\n";
  FAIL() << c.name << ": stats.json differs from " << file << " (" << diff.size() << " change(s)):\n" << moved;
}

INSTANTIATE_TEST_SUITE_P(Runs, Golden, ::testing::ValuesIn(cases()), [](const auto& test_info) {
  std::string n = test_info.param.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

}  // namespace
