// models/optical: the SiP-OCS and SiP-Ring planes refuse illegal
// configurations themselves (independently of sw/optical's checkers), and a
// message between GPUs the installed configuration does not join is a
// hardware error. One elaboration per test (each test is its own process).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "systems/kind.h"
#include "systems/npu/system.h"

using namespace fabricvp;

namespace {

std::unique_ptr<npusys::System> elaborate(const std::string& fabric, const std::string& plane = "") {
  auto& ctx = core::Context::get();
  ctx.config().load_string("sys:\n  topology: ndim\n  dims: 1\n  dim0:\n    type: Switch\n    fabric: " + fabric +
                               "\n    npus: 6\n    links: 1\n    GBps: 100\n    latency_ns: 500\n" + plane +
                               "ace: {model: none}\n",
                           "optical.yaml");
  auto sys = std::make_unique<npusys::System>("sys");
  ctx.config().check_all_used(systems::parameter_names());
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  return sys;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

}  // namespace

TEST(OpticalFabric, OcsPlaneRefusesIllegalSwitchConfigurations) {
  auto sys = elaborate("ocs");
  auto* ocs = dynamic_cast<optical::OcsFabric*>(sys->optical_planes().at(0));
  ASSERT_NE(ocs, nullptr);
  EXPECT_STREQ(ocs->name(), "sys.dim0.ocs0");
  const uint32_t N = optical::OcsConfig::kNone;
  optical::OcsConfig c{6, std::vector<std::vector<uint32_t>>(16, std::vector<uint32_t>(6, N))};
  c.out[0] = {1, 0, 3, 3, 3, 9};  // GPU 3 to itself, GPU 3's receiver twice, GPU 9 of 6
  c.out[1].resize(5);             // a switch of 5 ports
  const std::string bad = joined(ocs->install(c));
  EXPECT_NE(bad.find("switch 0: GPU 3's receiver is on two circuits (from GPU 2 and GPU 4)"), std::string::npos) << bad;
  EXPECT_NE(bad.find("switch 0: GPU 3 to itself"), std::string::npos) << bad;
  EXPECT_NE(bad.find("switch 0: GPU 5 to GPU 9, beyond the 6 ports"), std::string::npos) << bad;
  EXPECT_NE(bad.find("switch 1: 5 ports configured of 6"), std::string::npos) << bad;
  EXPECT_FALSE(ocs->configured());
  c.out.pop_back();
  EXPECT_EQ(joined(ocs->install(c)), "15 switch configurations; the fabric has 16 switches\n");
  // a legal one: every switch 0 -> 1 -> 2 -> 0, and 3 <-> 4 on switch 0 only
  c.out.assign(16, {1, 2, 0, N, N, N});
  c.out[0] = {1, 2, 0, 4, 3, N};
  EXPECT_TRUE(ocs->install(c).empty());
  EXPECT_EQ(ocs->circuits(0, 1), 16u);
  EXPECT_EQ(ocs->circuits(3, 4), 1u);
  EXPECT_EQ(ocs->circuits(1, 0), 0u);
  EXPECT_DOUBLE_EQ(ocs->pair_gbps(0, 1), 800.0);  // B = 100 GB/s
  EXPECT_DOUBLE_EQ(ocs->pair_gbps(3, 4), 50.0);   // B / 16
  EXPECT_EQ(ocs->circuits_installed.get(), 50u);
}

TEST(OpticalFabric, RingPlaneRefusesIllegalLightpaths) {
  auto sys = elaborate("ring", "    ring0: {reach: 2, degree: 1}\n");
  auto* ring = dynamic_cast<optical::RingFabric*>(sys->optical_planes().at(0));
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->spec().wavelengths, 32u);  // 800 Gbit/s / 25
  const std::string bad = joined(ring->install({
      {0, 2, true, 0},   // 0: legal
      {1, 3, true, 0},   // 1: the segment leaving GPU 1 is lit by 0
      {0, 5, false, 0},  // 2: GPU 0 transmits wavelength 0 for 0; GPU 0 to two peers
      {2, 5, true, 1},   // 3: 3 hops, reach 2
      {4, 4, true, 1},   // 4: to itself
      {3, 4, true, 32},  // 5: wavelength 32 of 32
  }));
  EXPECT_NE(bad.find("lightpath 1 (GPU 1 -> 3 clockwise, wavelength 0): GPU 1's outgoing segment is lit by "
                     "lightpath 0 already"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find("lightpath 2 (GPU 0 -> 5 counter-clockwise, wavelength 0): GPU 0 transmits this wavelength for "
                     "lightpath 0"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find("lightpath 3 (GPU 2 -> 5 clockwise, wavelength 1): 3 hops, the reach is 2"), std::string::npos)
      << bad;
  EXPECT_NE(bad.find("lightpath 4 (GPU 4 -> 4 clockwise, wavelength 1): not a lightpath"), std::string::npos) << bad;
  EXPECT_NE(bad.find("lightpath 5 (GPU 3 -> 4 clockwise, wavelength 32): not a lightpath"), std::string::npos) << bad;
  EXPECT_NE(bad.find("GPU 0 has lightpaths to 2 peers, the degree is 1"), std::string::npos) << bad;
  EXPECT_FALSE(ring->configured());
  // wavelength 0 reused on disjoint segments, two wavelengths for one pair
  EXPECT_TRUE(ring->install({{0, 2, true, 0}, {2, 4, true, 0}, {0, 2, true, 1}}).empty());
  EXPECT_EQ(ring->circuits(0, 2), 2u);
  EXPECT_DOUBLE_EQ(ring->pair_gbps(0, 2), 50.0);
}

TEST(OpticalFabric, AMessageWithoutACircuitIsAHardwareError) {
  auto sys = elaborate("ocs");
  auto* ocs = dynamic_cast<optical::OcsFabric*>(sys->optical_planes().at(0));
  // circuits i -> i + 2 only: a ring all-reduce's i -> i + 1 has none
  const uint32_t N = optical::OcsConfig::kNone;
  optical::OcsConfig c{6, std::vector<std::vector<uint32_t>>(16, std::vector<uint32_t>(6, N))};
  for (uint32_t i = 0; i < 6; ++i) c.out[0][i] = (i + 2) % 6;
  ASSERT_TRUE(ocs->install(c).empty());
  const npusys::Group g = sys->partition({0}).at(0);
  const auto plans = sys->plans(g, npu::CollectiveKind::allreduce, core::Dtype::fp32, 6 * 64, 0);
  for (uint32_t r = 0; r < g.size(); ++r)
    sys->npus[g.npus[r]]->submit(npu::CollectiveRequest{plans[r], 0, g.id, true}, nullptr);
  sc_core::sc_start();
  const auto& errors = core::Context::get().hw_errors();
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].where, "sys.dim0.ocs0");
  EXPECT_NE(errors[0].message.find("from npu0 to npu1: the installed configuration has no circuit between them"),
            std::string::npos)
      << errors[0].message;
}
