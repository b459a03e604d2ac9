// Flare (seed 004) from the command line: hosts on a PsPIN switch run an
// in-network allreduce whose aggregation is a C kernel on the switch's
// cores. Results are checked here against a reference computed from the
// hosts' seeded inputs (independently of the run's own check), the run's
// check is shown to catch a wrong kernel, and staggering is shown to lower
// the contention on the blocks' buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "models/core/dtype.h"
#include "models/flare/host.h"

using fabricvp::test::sh;
using fabricvp::test::TempDir;

namespace {

const std::string kPlatform = std::string(FABRICVP_PLATFORMS) + "/flare-switch.yaml";

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Host h's input, as the run makes it (seed 1).
std::vector<uint8_t> input(fabricvp::core::Dtype dt, uint32_t h, uint32_t hosts, uint64_t bytes) {
  std::vector<uint8_t> b(bytes);
  fabricvp::core::random_elements(dt, 1 * 1000003 + h, b.data(), bytes, 0, hosts);
  return b;
}

std::string four_hosts() { return " -p sys.hosts=4 -p sys.switch0.ports=4"; }

// Writes to `path` the project's kernel sw/handlers/flare/`name` with `from` replaced by `to`; false if `from` is
// not in it.
bool write_patched_kernel(const std::string& path, const std::string& name, const std::string& from,
                          const std::string& to) {
  std::ifstream in(std::string(FABRICVP_SOURCE_DIR) + "/sw/handlers/flare/" + name);
  std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = src.find(from);
  if (at == std::string::npos) return false;
  src.replace(at, from.size(), to);
  std::ofstream(path) << src;
  return true;
}

TEST(Flare, IntegerAndOrderFreeFloatResultsEqualAnIndependentReference) {
  TempDir dir;
  const uint32_t hosts = 4;
  const uint64_t bytes = 8 * 1024 + 12;  // a partial last block
  struct Case {
    const char* dtype;
    const char* op;
  };
  for (const Case c :
       {Case{"int32", "sum"}, Case{"int32", "min"}, Case{"int32", "max"}, Case{"fp32", "min"}, Case{"fp32", "max"}}) {
    const std::string out = dir / (std::string(c.dtype) + c.op);
    const auto r = sh("run " + kPlatform + four_hosts() + " --bytes " + std::to_string(bytes) + " --dtype " + c.dtype +
                      " -p flare.op=" + c.op + " -p flare.window=8 -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto stats = fabricvp::test::load_json(out + "/stats.json");
    EXPECT_EQ(stats["workload"]["verified"], true);
    EXPECT_EQ(stats["workload"]["blocks"], 9);
    const auto got = file_bytes(out + "/result.bin");
    ASSERT_EQ(got.size(), bytes);
    const auto dt = std::string(c.dtype) == "int32" ? fabricvp::core::Dtype::int32 : fabricvp::core::Dtype::fp32;
    std::vector<std::vector<uint8_t>> in;
    for (uint32_t h = 0; h < hosts; ++h) in.push_back(input(dt, h, hosts, bytes));
    for (uint64_t e = 0; e < bytes / 4; ++e) {
      if (dt == fabricvp::core::Dtype::int32) {
        int64_t sum = 0;
        int32_t lo = INT32_MAX, hi = INT32_MIN;
        for (const auto& v : in) {
          int32_t x;
          std::memcpy(&x, &v[4 * e], 4);
          sum += x;
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
        const int32_t want = std::string(c.op) == "sum"   ? static_cast<int32_t>(static_cast<uint32_t>(sum))
                             : std::string(c.op) == "min" ? lo
                                                          : hi;
        int32_t g;
        std::memcpy(&g, &got[4 * e], 4);
        ASSERT_EQ(g, want) << c.dtype << " " << c.op << " element " << e;
      } else {
        float lo = 0, hi = 0;
        for (size_t h = 0; h < in.size(); ++h) {
          float x;
          std::memcpy(&x, &in[h][4 * e], 4);
          lo = h == 0 ? x : std::min(lo, x);
          hi = h == 0 ? x : std::max(hi, x);
        }
        float g;
        std::memcpy(&g, &got[4 * e], 4);
        ASSERT_EQ(g, std::string(c.op) == "min" ? lo : hi) << c.dtype << " " << c.op << " element " << e;
      }
    }
  }
}

TEST(Flare, FloatSumsAreBitExactInTheSwitchOrderWithAndWithoutTheFpu) {
  TempDir dir;
  for (const char* isa : {"rv32imac", "rv32imafc"}) {
    const std::string out = dir / isa;
    const auto r = sh("run " + kPlatform +
                      " --bytes 64KiB --dtype fp32 -p flare.stagger=true -p sys.switch0.isa=" + isa + " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto stats = fabricvp::test::load_json(out + "/stats.json");
    EXPECT_EQ(stats["workload"]["verified"], true) << isa;
    EXPECT_EQ(stats["workload"]["mismatched_elements"], 0) << isa;
    // every host sent and received every block once (8 hosts, 64 blocks of 1024 B + 44 B of headers)
    EXPECT_EQ(stats["workload"]["wire_bytes_up"], 8 * 64 * (1024 + 44)) << isa;
    EXPECT_EQ(stats["workload"]["wire_bytes_down"], 8 * 64 * (1024 + 44)) << isa;
  }
}

TEST(Flare, TheTreeVariantGivesTheSameBitsWhateverTheArrivalOrder) {
  TempDir dir;
  // In order, staggered, a narrow window, slower links: contributions arrive in different orders.
  const char* variants[] = {"", " -p flare.stagger=true", " -p flare.window=4", " -p sys.link_latency_ns=1700"};
  std::vector<uint8_t> first;
  for (size_t i = 0; i < 4; ++i) {
    const std::string out = dir / std::to_string(i);
    const auto r =
        sh("run " + kPlatform + " --bytes 32KiB --dtype fp32 -p flare.algorithm=tree" + variants[i] + " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(fabricvp::test::load_json(out + "/stats.json")["workload"]["verified"], true) << variants[i];
    const auto got = file_bytes(out + "/result.bin");
    ASSERT_EQ(got.size(), 32u * 1024u);
    if (i == 0)
      first = got;
    else
      EXPECT_TRUE(got == first) << variants[i];
  }
  // The single-buffer variant applies them in arrival order: its sums differ from the tree's somewhere.
  const auto r = sh("run " + kPlatform + " --bytes 32KiB --dtype fp32 -p flare.stagger=true -q -o " + (dir / "s"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(file_bytes(dir / "s/result.bin") == first);
}

TEST(Flare, TheHostRingBaselineGivesTheSameSumAndMovesMoreBytes) {
  TempDir dir;
  std::vector<uint8_t> result[2];
  uint64_t up[2], down[2];
  const char* algs[] = {"single", "ring"};
  for (int a = 0; a < 2; ++a) {
    const std::string out = dir / algs[a];
    const auto r = sh("run " + kPlatform + four_hosts() + " --bytes 64KiB --dtype int32 -p flare.algorithm=" + algs[a] +
                      " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto w = fabricvp::test::load_json(out + "/stats.json")["workload"];
    EXPECT_EQ(w["verified"], true) << algs[a];
    result[a] = file_bytes(out + "/result.bin");
    up[a] = w["wire_bytes_up"].get<uint64_t>();
    down[a] = w["wire_bytes_down"].get<uint64_t>();
  }
  EXPECT_TRUE(result[0] == result[1]);  // integer sums: any order gives the same
  // In-network: each host sends and receives its 64 blocks once. The ring: 2 (n - 1) steps of a
  // quarter of the vector each (16 packets), so 2 (n - 1) / n = 1.5x the bytes, measured on the links.
  EXPECT_EQ(up[0], 4u * 64 * (1024 + 44));
  EXPECT_EQ(down[0], up[0]);
  EXPECT_EQ(up[1], 4u * 6 * 16 * (1024 + 44));
  EXPECT_EQ(down[1], up[1]);
}

TEST(Flare, AFatTreeAggregatesAtTheLeavesThenTheSpines) {
  TempDir dir;
  // 8 hosts, 2 leaves of 4, 2 spines (block b at spine b mod 2).
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml -p sys.hosts=8 -p sys.leaves=2 " +
                           "-p sys.spines=2 -p 'sys.leaf*.ports=6' -p 'sys.spine*.ports=2'";
  const uint64_t bytes = 16 * 1024;
  std::vector<uint8_t> results[3];
  const char* algs[] = {"single", "tree", "ring"};
  for (int a = 0; a < 3; ++a) {
    const std::string out = dir / algs[a];
    const auto r = sh("run " + tree + " --bytes 16KiB --dtype int32 -p flare.algorithm=" + algs[a] + " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto w = fabricvp::test::load_json(out + "/stats.json")["workload"];
    EXPECT_EQ(w["verified"], true) << algs[a];
    results[a] = file_bytes(out + "/result.bin");
    if (a < 2) {
      // in-network: each host sends and gets 16 blocks; each leaf sends each block's partial up once and
      // gets its result down once
      EXPECT_EQ(w["wire_bytes_up"], 8 * 16 * (1024 + 44)) << algs[a];
      EXPECT_EQ(w["wire_bytes_fabric"], 2 * 2 * 16 * (1024 + 44)) << algs[a];
    }
  }
  // integer sums: the same whatever the order, and equal to the hosts' inputs summed here
  EXPECT_TRUE(results[0] == results[1]);
  EXPECT_TRUE(results[0] == results[2]);
  std::vector<std::vector<uint8_t>> in;
  for (uint32_t h = 0; h < 8; ++h) in.push_back(input(fabricvp::core::Dtype::int32, h, 8, bytes));
  for (uint64_t e = 0; e < bytes / 4; ++e) {
    uint32_t want = 0;
    for (uint32_t h = 0; h < 8; ++h) {
      uint32_t x;
      std::memcpy(&x, &in[h][4 * e], 4);
      want += x;
    }
    uint32_t got;
    std::memcpy(&got, &results[0][4 * e], 4);
    ASSERT_EQ(got, want) << "element " << e;
  }
  // floats, in the order each switch applied them
  const auto r = sh("run " + tree + " --bytes 16KiB --dtype fp32 -p flare.stagger=true -q -o " + (dir / "f"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(fabricvp::test::load_json(dir / "f/stats.json")["workload"]["verified"], true);
}

TEST(Flare, TheMultipleBuffersVariantIsCheckedInTheOrderItLogged) {
  TempDir dir;
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml -p sys.hosts=8 -p sys.leaves=2 " +
                           "-p sys.spines=1 -p 'sys.leaf*.ports=5' -p 'sys.spine*.ports=2'";
  double tau[3];
  int i = 0;
  for (const char* buffers : {"1", "2", "4"}) {
    const std::string out = dir / buffers;
    const auto r =
        sh("run " + kPlatform + " --bytes 64KiB --dtype fp32 -p flare.algorithm=multiple -p flare.buffers=" + buffers +
           " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto w = fabricvp::test::load_json(out + "/stats.json")["workload"];
    EXPECT_EQ(w["verified"], true) << buffers;
    tau[i++] = w["ph_cycles_mean"].get<double>();
  }
  // more buffers per block: fewer contributions waiting for one
  EXPECT_LT(tau[1], tau[0]);
  EXPECT_LT(tau[2], tau[1]);
  const auto r =
      sh("run " + tree + " --bytes 16KiB --dtype fp32 -p flare.algorithm=multiple -p flare.buffers=3 -q -o " +
         (dir / "tree"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(fabricvp::test::load_json(dir / "tree/stats.json")["workload"]["verified"], true);
}

TEST(Flare, AUserOperatorInCRunsInTheSwitchAndInTheReference) {
  TempDir dir;
  std::filesystem::create_directories(dir.path);
  // Neither commutative nor associative: only a reference in the switch's exact order can match.
  std::ofstream(dir / "mix.c")
      << "#include <stdint.h>\n"
         "uint32_t flare_user_op(uint32_t acc, uint32_t in) { return (acc ^ (in * 3u)) + 1u; }\n";
  std::ofstream(dir / "blend.c") << "#include <stdint.h>\n#include <string.h>\n"
                                    "uint32_t flare_user_op(uint32_t acc, uint32_t in) {\n"
                                    "  float a, b; memcpy(&a, &acc, 4); memcpy(&b, &in, 4);\n"
                                    "  a = a * 0.75f + b / 3.0f; memcpy(&acc, &a, 4); return acc; }\n";
  for (const char* alg : {"single", "multiple", "tree", "ring"})
    for (const char* c : {"int32 --operator mix.c", "fp32 --operator blend.c"}) {
      const std::string out = dir / (std::string(alg) + c[0]);
      const auto r = sh("run " + kPlatform + four_hosts() + " --bytes 8KiB -p flare.op=user -p flare.stagger=true " +
                            "-p flare.algorithm=" + alg + " --dtype " + c + " -q -o " + out,
                        dir.path);
      ASSERT_EQ(r.code, 0) << alg << " " << c << "\n" << r.out;
      EXPECT_EQ(fabricvp::test::load_json(out + "/stats.json")["workload"]["verified"], true) << alg << " " << c;
    }
  auto r = sh("run " + kPlatform + " -p flare.op=user -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find("flare.op user: give the operator with --operator FILE.c"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + " --operator " + (dir / "mix.c") + " -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find("also give -p flare.op=user"), std::string::npos) << r.out;
  std::ofstream(dir / "bad.c") << "uint32_t flare_user_op(uint32_t acc, uint32_t in) { return acc +; }\n";
  r = sh("run " + kPlatform + " -p flare.op=user --operator " + (dir / "bad.c") + " -q -o " + (dir / "o"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("does not compile for the host"), std::string::npos) << r.out;
  std::ofstream(dir / "none.c") << "int other(int x) { return x; }\n";
  r = sh("run " + kPlatform + " -p flare.op=user --operator " + (dir / "none.c") + " -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find("no function uint32_t flare_user_op(uint32_t acc, uint32_t in)"), std::string::npos) << r.out;
  // Compiled after the declaration the kernels call: a variable of that name, or another signature, is refused
  // (the switch's cores would jump into data, or the bits would be read as the wrong type).
  std::ofstream(dir / "var.c") << "int flare_user_op;\n";
  std::ofstream(dir / "float.c") << "float flare_user_op(float a, float b) { return a + b; }\n";
  for (const char* f : {"var.c", "float.c"}) {
    r = sh("run " + kPlatform + " -p flare.op=user --operator " + (dir / f) + " -q -o " + (dir / "o"));
    EXPECT_EQ(r.code, 1) << f;
    EXPECT_NE(r.out.find("does not compile for the host"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string(f) + ":1:"), std::string::npos) << r.out;  // the user's file and line
  }
  r = sh("run " + kPlatform + " -p flare.op=user --operator " + dir.path.string() + " -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find(": not a file"), std::string::npos) << r.out;
}

TEST(Flare, HalfPrecisionResultsEqualFabricvpsOwnIeeeAdders) {
  // The kernels compute a 16-bit sum in binary32 and round once; the check's reference uses
  // core::ieee::add_fp16 / add_bf16 (held to a binary64 oracle in vxm_test): the same bits or a mismatch.
  TempDir dir;
  for (const char* dt : {"fp16", "bf16"})
    for (const char* op : {"sum", "min", "max"})
      for (const char* alg : {"single", "tree", "ring"}) {
        const std::string out = dir / (std::string(dt) + op + alg);
        const auto r = sh("run " + kPlatform + four_hosts() + " --bytes 8KiB --dtype " + dt + " -p flare.op=" + op +
                          " -p flare.algorithm=" + alg + " -p flare.stagger=true -q -o " + out);
        ASSERT_EQ(r.code, 0) << dt << " " << op << " " << alg << "\n" << r.out;
        const auto w = fabricvp::test::load_json(out + "/stats.json")["workload"];
        EXPECT_EQ(w["verified"], true) << dt << " " << op << " " << alg;
        EXPECT_EQ(w["blocks"], 8);  // 1024-byte blocks of 512 elements
      }
  const auto r =
      sh("run " + kPlatform + " --bytes 8KiB --dtype fp16 -p sys.switch0.isa=rv32imafc -q -o " + (dir / "f"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(fabricvp::test::load_json(dir / "f/stats.json")["workload"]["verified"], true);
}

// The hosts of an in-network dense allreduce share their vectors: inputs made on demand, the same every time;
// one copy of each result block, and only the copies that differ kept, with their hosts.
TEST(Flare, SharedVectorsKeepOneCopyAndEveryCopyThatDiffers) {
  fabricvp::flare::Job job;
  job.hosts = 3;
  job.elems = 10;
  job.block_elems = 4;  // blocks of 4, 4 and 2 elements
  uint32_t fills = 0;
  fabricvp::flare::SharedVectors v(job, [&fills](uint32_t host, uint64_t first, uint64_t count, uint8_t* out) {
    ++fills;
    for (uint64_t k = 0; k < count; ++k) {
      const uint32_t w = host * 100 + static_cast<uint32_t>(first + k);
      std::memcpy(out + k * 4, &w, 4);
    }
  });
  std::vector<uint8_t> in(8);
  v.input(2, 5, 2, in.data());
  uint32_t w[2];
  std::memcpy(w, in.data(), 8);
  EXPECT_EQ(w[0], 205u);
  EXPECT_EQ(w[1], 206u);
  EXPECT_EQ(fills, 1u);
  EXPECT_EQ(v.block_bytes(1), 16u);
  EXPECT_EQ(v.block_bytes(2), 8u);
  const std::vector<uint8_t> good(16, 7), bad = [] {
    std::vector<uint8_t> b(16, 7);
    b[5] = 9;
    return b;
  }();
  v.arrived(1, 1, good.data(), 16);  // the first copy of block 1
  v.arrived(0, 1, bad.data(), 16);   // differs: kept
  v.arrived(2, 1, good.data(), 16);  // the same: not kept
  EXPECT_EQ(v.differing(1), 1u);
  EXPECT_EQ(v.differing(0), 0u);
  ASSERT_NE(v.block(0, 1), nullptr);
  EXPECT_EQ(std::memcmp(v.block(0, 1), bad.data(), 16), 0);
  EXPECT_EQ(std::memcmp(v.block(1, 1), good.data(), 16), 0);
  EXPECT_EQ(std::memcmp(v.block(2, 1), good.data(), 16), 0);
  EXPECT_EQ(v.block(2, 0), nullptr);  // never arrived
  const std::vector<uint8_t> r0 = v.result(0);
  ASSERT_EQ(r0.size(), 40u);
  EXPECT_EQ(r0[0], 0);  // block 0 missing: zeros
  EXPECT_EQ(r0[16 + 5], 9);
  EXPECT_EQ(v.result(2)[16 + 5], 7);
  EXPECT_THROW(v.arrived(0, 1, good.data(), 16), std::logic_error);  // a second time
  EXPECT_THROW(v.arrived(0, 2, good.data(), 16), std::logic_error);  // block 2 has 8 bytes
  EXPECT_THROW(v.arrived(3, 0, good.data(), 16), std::logic_error);  // no host 3
  job.ring = true;
  EXPECT_THROW(fabricvp::flare::SharedVectors(job, nullptr), std::logic_error);
}

// The host ring's check makes its inputs again (the hosts run in place on theirs and keep no copy): a switch that
// adds 1 to element 7 of every packet it forwards is caught.
TEST(Flare, AWrongForwardIsCaughtByTheRingsCheck) {
  TempDir dir;
  const std::string from = "fabricvp_nic_command(flare_port_to(", wrong = dir / "wrong.c";
  ASSERT_TRUE(write_patched_kernel(wrong, "forward.c", from,  // past the IPv4, UDP and Flare headers
                                   "((uint32_t *)((uint8_t *)task->pkt_mem + 44))[7] += 1; " + from));
  auto r = sh("run " + kPlatform + four_hosts() + " --bytes 4KiB --dtype int32 -p flare.algorithm=ring -q -o " +
              (dir / "good"));
  EXPECT_EQ(r.code, 0) << r.out;
  r = sh("run " + kPlatform + four_hosts() + " --bytes 4KiB --dtype int32 -p flare.algorithm=ring --handlers " + wrong +
         " -q -o " + (dir / "o"));
  EXPECT_NE(r.code, 0) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["workload"]["verified"], false);
  // element 7 of each host's segment, wrong at every host (3 hops of the reduce-scatter, then 0-3 of the all-gather)
  EXPECT_EQ(stats["workload"]["mismatched_elements"], 4 * 4);
}

TEST(Flare, AWrongKernelIsCaughtByTheRunsCheck) {
  TempDir dir;
  // The project's kernel with an off-by-one: element 7 gains 1 at every combination.
  const std::string from = "combine(h->dtype, h->op, (uint32_t *)s->data, in, h->count);", wrong = dir / "wrong.c";
  ASSERT_TRUE(write_patched_kernel(wrong, "dense.c", from, from + " ((uint32_t *)s->data)[7] += 1;"));
  const auto r = sh("run " + kPlatform + four_hosts() + " --bytes 4KiB --dtype int32 --handlers " + wrong + " -q -o " +
                    (dir / "o"));
  EXPECT_NE(r.code, 0) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["workload"]["verified"], false);
  EXPECT_EQ(stats["workload"]["mismatched_elements"], 4 * 4);  // element 7 of each of 4 blocks, at 4 hosts
}

TEST(Flare, StaggeredHostsWaitLessForTheBlocksBuffers) {
  TempDir dir;
  double tau[2];
  uint64_t open[2], memory[2];
  for (int s = 0; s < 2; ++s) {
    const std::string out = dir / std::to_string(s);
    const auto r = sh("run " + kPlatform + " --bytes 128KiB --dtype int32 -p flare.window=16 -p flare.stagger=" +
                      (s ? "true" : "false") + " -q -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto w = fabricvp::test::load_json(out + "/stats.json")["workload"];
    tau[s] = w["ph_cycles_mean"].get<double>();
    open[s] = w["open_blocks_peak"].get<uint64_t>();
    memory[s] = w["working_memory_peak_bytes"].get<uint64_t>();
    EXPECT_LE(open[s], 32u);  // the window's bound: 2 x 16 blocks
    EXPECT_EQ(memory[s], open[s] * 1596);
  }
  // The handler's cycles include the spinning on a block's lock: staggered
  // hosts spread each group's blocks over the clusters, so handlers wait less,
  // at the price of more blocks open at once (switch memory).
  EXPECT_LT(tau[1], 0.7 * tau[0]) << tau[0] << " " << tau[1];
  EXPECT_GT(open[1], open[0]);
}

TEST(Flare, SameInputsGiveIdenticalStatistics) {
  TempDir dir;
  // dense, sparse (a hash store that flushes) and a training workload on the ring, each run twice
  const std::string workload = dir / "w.yaml";
  std::ofstream(workload) << "workload:\n  parallelism: DATA\n  layers:\n"
                          << "    - name: a\n      fwd: {compute_ns: 500, comm: NONE, bytes: 0}\n"
                          << "      ig: {compute_ns: 500, comm: NONE, bytes: 0}\n"
                          << "      wg: {compute_ns: 500, comm: ALLREDUCE, bytes: 3000}\n      update_ns: 1\n";
  for (const std::string& args : {std::string(" --bytes 32KiB --dtype fp32 -p flare.stagger=true"),
                                  std::string(" --bytes 32KiB --dtype fp32 --sparse 0.05 -p flare.span=1024 "
                                              "-p flare.entries=16"),
                                  " --workload " + workload + " --iterations 2 -p flare.algorithm=ring"}) {
    std::string stats[2];
    for (int i = 0; i < 2; ++i) {
      const std::string out = dir / std::to_string(i);
      const auto r = sh("run " + kPlatform + args + " -q -o " + out + " --seed 3");
      ASSERT_EQ(r.code, 0) << r.out;
      auto j = fabricvp::test::load_json(out + "/stats.json");
      j.erase("run");
      stats[i] = j.dump();
    }
    EXPECT_EQ(stats[0], stats[1]) << args;
  }
}

TEST(Flare, TheSingleSwitchExperimentPutsTheModelNextToEachRun) {
  TempDir dir;
  const auto r = sh("experiment flare-single --quick -o " + (dir / "x"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = fabricvp::test::load_json(dir / "x/flare-single.json");
  ASSERT_EQ(j["points"].size(), 12u);  // 8 and 32 cores x single, multiple, tree x in order, staggered
  for (const auto& p : j["points"]) {
    EXPECT_GT(p["algbw_GBps"].get<double>(), 0);
    // the model is an upper bound: the cores cannot serve more than K / tau
    EXPECT_LE(p["algbw_GBps"].get<double>(), p["model_GBps"].get<double>() * 1.001) << p.dump();
  }
  // one cluster of cores, hosts in order: every core always busy, the model holds within 2 %
  EXPECT_NEAR(j["points"][0]["algbw_GBps"].get<double>(), j["points"][0]["model_GBps"].get<double>(),
              0.02 * j["points"][0]["model_GBps"].get<double>());
  EXPECT_TRUE(std::filesystem::exists(dir / "x/flare-single.png"));
}

TEST(Flare, TheScaleExperimentComparesEveryKernelAndTypeWithLineRate) {
  TempDir dir;
  const auto r = sh("experiment flare-scale --quick -o " + (dir / "x"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = fabricvp::test::load_json(dir / "x/flare-scale.json");
  ASSERT_EQ(j["points"].size(), 12u);  // 64 and 512 cores x 3 kernels x int32, fp32
  EXPECT_NEAR(j["line_rate_GBps"].get<double>(), 400.0 / 8 * 1024 / 1068, 1e-9);
  for (const auto& p : j["points"]) {
    EXPECT_LE(p["algbw_GBps"].get<double>(), p["model_GBps"].get<double>() * 1.001) << p.dump();
    EXPECT_NEAR(p["line_fraction"].get<double>(), p["algbw_GBps"].get<double>() / j["line_rate_GBps"].get<double>(),
                1e-12);
  }
  // more cores, more bandwidth, for every kernel and type (point k and k + 6 differ only in the cores)
  for (size_t k = 0; k < 6; ++k)
    EXPECT_GT(j["points"][k + 6]["algbw_GBps"].get<double>(), j["points"][k]["algbw_GBps"].get<double>()) << k;
}

TEST(Flare, TheFatTreeExperimentMeasuresTheTrafficAgainstTheRing) {
  TempDir dir;
  const auto r = sh("experiment flare-fattree --quick -o " + (dir / "x"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = fabricvp::test::load_json(dir / "x/flare-fattree.json");
  ASSERT_EQ(j["points"].size(), 3u);  // 64 KiB: single, ring, and the sparse kernel at 0.2 %
  // 64 blocks of 1068 bytes up and down per host in-network; the ring 2 x 63 steps of 1/64 of the vector
  EXPECT_EQ(j["points"][0]["host_link_bytes"].get<double>(), 2.0 * 64 * 64 * 1068);
  EXPECT_NEAR(j["points"][0]["ring_over_this"].get<double>(), 2.0 * 63 / 64, 0.01);
  EXPECT_EQ(j["points"][1]["ring_over_this"].get<double>(), 1.0);
  // 33 pairs of 8 bytes per host where the ring moves 64 KiB: far less traffic, even with the result's fill-in
  EXPECT_EQ(j["points"][2]["kernel"], "sparse 0.002");
  EXPECT_GT(j["points"][2]["ring_over_this"].get<double>(), 8.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "x/flare-fattree.png"));
}

TEST(Flare, TheTrainingExperimentRunsResNet50OnTheHosts) {
  // --quick: the ResNet-50 iteration with its all-reduces on the host ring (the in-switch kernels take
  // minutes): the workload file's compute, and an iteration of compute plus exposed communication.
  TempDir dir;
  const auto r = sh("experiment flare-training --quick -o " + (dir / "x"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("every all-reduce checked"), std::string::npos) << r.out;
  const auto j = fabricvp::test::load_json(dir / "x/flare-training.json");
  ASSERT_EQ(j["points"].size(), 1u);
  const auto& p = j["points"][0];
  EXPECT_EQ(p["algorithm"], "ring");
  EXPECT_EQ(p["compute_ps"].get<uint64_t>(), 12854436000u);
  EXPECT_EQ(p["iteration_ps"].get<uint64_t>(), p["compute_ps"].get<uint64_t>() + p["exposed_comm_ps"].get<uint64_t>());
  EXPECT_LE(p["exposed_comm_ps"].get<uint64_t>(), p["comm_busy_ps"].get<uint64_t>());
  EXPECT_GT(p["host_link_bytes"].get<double>(), 2.0 * 51114064);  // every gradient leaves every host at least once
  EXPECT_TRUE(std::filesystem::exists(dir / "x/flare-training.png"));
}

// Host h's sparse input as the run makes it (seed 1): nonzero with probability d at geometric gaps, values from
// the dtype's seeded generator.
std::map<uint32_t, int32_t> sparse_input(uint32_t h, uint32_t hosts, uint64_t elems, double d) {
  std::mt19937_64 rng(1 * 1000003 + h);
  const double l = std::log1p(-d);
  auto gap = [&]() -> uint64_t {
    const double u = (double((rng() >> 11) + 1)) * 0x1p-53;
    return static_cast<uint64_t>(std::min(std::floor(std::log(u) / l), double(elems)));
  };
  std::vector<uint64_t> at;
  for (uint64_t e = gap(); e < elems; e += 1 + gap()) at.push_back(e);
  std::vector<uint8_t> v(at.size() * 4);
  fabricvp::core::random_elements(fabricvp::core::Dtype::int32, 1 * 1000003 + h, v.data(), v.size(), 0, hosts);
  std::map<uint32_t, int32_t> out;
  for (size_t k = 0; k < at.size(); ++k) std::memcpy(&out[static_cast<uint32_t>(at[k])], &v[4 * k], 4);
  return out;
}

TEST(Flare, SparseBlocksInEveryStoreAndTypeEqualTheReferenceAlsoWhenTheStoreFills) {
  TempDir dir;
  const uint32_t hosts = 4;
  const uint64_t elems = 8192;
  // Small stores: the hash (16 entries, full at 12) and the two levels (2 chunks of 32) flush many times.
  for (const char* format : {"array", "hash", "twolevel"}) {
    const std::string small = std::string(format) == "hash"       ? " -p flare.entries=16"
                              : std::string(format) == "twolevel" ? " -p flare.entries=2"
                                                                  : "";
    for (const char* dtype : {"int32", "fp32", "fp16"}) {
      const std::string out = dir / (std::string(format) + dtype);
      const uint32_t es = std::string(dtype) == "fp16" ? 2 : 4;
      const auto r =
          sh("run " + kPlatform + four_hosts() + " --bytes " + std::to_string(elems * es) + " --dtype " + dtype +
             " --sparse 0.05 -p flare.span=1024 -p flare.sparse_format=" + format + small + " -q -o " + out);
      ASSERT_EQ(r.code, 0) << format << " " << dtype << "\n" << r.out;
      const auto stats = fabricvp::test::load_json(out + "/stats.json");
      EXPECT_EQ(stats["workload"]["verified"], true) << format << " " << dtype;
      EXPECT_EQ(stats["workload"]["blocks"], 8);
      if (std::string(format) == "array")
        EXPECT_EQ(stats["workload"]["sparse_flushes"], 0);
      else
        EXPECT_GT(stats["workload"]["sparse_flushes"].get<uint64_t>(), 8u) << format << " " << dtype;
      if (std::string(dtype) != "int32") continue;
      // The integer sum, independently: result.bin holds host0's (index, value) words in index order.
      std::map<uint32_t, int32_t> want;
      uint64_t sent = 0;
      for (uint32_t h = 0; h < hosts; ++h)
        for (const auto& [i, v] : sparse_input(h, hosts, elems, 0.05)) {
          want[i] = static_cast<int32_t>(static_cast<uint32_t>(want[i]) + static_cast<uint32_t>(v));
          ++sent;
        }
      EXPECT_EQ(stats["workload"]["sparse_pairs_in"], sent);
      const auto got = file_bytes(out + "/result.bin");
      ASSERT_EQ(got.size(), want.size() * 8) << format;
      size_t k = 0;
      for (const auto& [i, v] : want) {
        uint32_t w[2];
        std::memcpy(w, &got[8 * k++], 8);
        ASSERT_EQ(w[0], i) << format;
        ASSERT_EQ(static_cast<int32_t>(w[1]), v) << format << " element " << i;
      }
    }
  }
}

TEST(Flare, DenseSparseBlocksOfManyPacketsFinishWithinThePlatformsWatchdog) {
  // Every element nonzero: 8 packets per host per block, 32 per block waiting for its lock one after the other.
  TempDir dir;
  const auto r = sh("run " + kPlatform + four_hosts() + " --bytes 16KiB --dtype int32 --sparse 1 -p flare.span=1024 " +
                    "-p flare.sparse_format=array -q -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["workload"]["verified"], true);
  EXPECT_EQ(stats["workload"]["sparse_pairs_out"], 4096);
}

TEST(Flare, SparseBlocksAggregateAtTheLeavesThenTheSpinesAndAWrongStoreIsCaught) {
  TempDir dir;
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml";
  auto r = sh("run " + tree + " -p sys.hosts=16 -p sys.leaves=4 -p sys.spines=2 -p sys.leaf*.ports=6 -p " +
              "sys.spine*.ports=4 --bytes 64KiB --dtype bf16 -p flare.op=max --sparse 0.01 -p flare.span=2048 " +
              "-p flare.sparse_format=hash -p flare.entries=64 -q -o " + (dir / "t"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto stats = fabricvp::test::load_json(dir / "t/stats.json");
  EXPECT_EQ(stats["workload"]["verified"], true);
  EXPECT_GT(stats["workload"]["wire_bytes_fabric"].get<uint64_t>(), 0u);
  // The array store replacing an element instead of combining it: the run's check fails.
  const std::string wrong = dir / "wrong.c";
  ASSERT_TRUE(write_patched_kernel(wrong, "sparse.c", "sparse_apply(h, &val[off], v);", "val[off] = v;"));
  r = sh("run " + kPlatform + four_hosts() + " --bytes 16KiB --dtype int32 --sparse 0.1 -p flare.span=1024 " +
         "-p flare.sparse_format=array --handlers " + wrong + " -q -o " + (dir / "w"));
  EXPECT_NE(r.code, 0) << r.out;
  stats = fabricvp::test::load_json(dir / "w/stats.json");
  EXPECT_EQ(stats["workload"]["verified"], false);
  EXPECT_GT(stats["workload"]["mismatched_elements"].get<uint64_t>(), 0u);
}

// A small data-parallel workload: 3 layers whose weight gradients are all-reduced (24, 20000 and 40000 bytes).
std::string small_workload(const std::string& dir, const char* comm = "ALLREDUCE") {
  const std::string path = dir + "/small.yaml";
  std::ofstream(path) << "workload:\n  parallelism: DATA\n  layers:\n"
                      << "    - name: conv1\n      fwd: {compute_ns: 2000, comm: NONE, bytes: 0}\n"
                      << "      ig: {compute_ns: 0, comm: NONE, bytes: 0}\n"
                      << "      wg: {compute_ns: 2000, comm: ALLREDUCE, bytes: 24}\n      update_ns: 10\n"
                      << "    - name: conv2\n      fwd: {compute_ns: 3000, comm: NONE, bytes: 0}\n"
                      << "      ig: {compute_ns: 3000, comm: NONE, bytes: 0}\n"
                      << "      wg: {compute_ns: 3000, comm: " << comm << ", bytes: 20000}\n      update_ns: 10\n"
                      << "    - name: fc\n      fwd: {compute_ns: 1000, comm: NONE, bytes: 0}\n"
                      << "      ig: {compute_ns: 1000, comm: NONE, bytes: 0}\n"
                      << "      wg: {compute_ns: 1000, comm: ALLREDUCE, bytes: 40000}\n      update_ns: 10\n";
  return path;
}

TEST(Flare, ATrainingWorkloadRunsOnTheHostsWithItsAllReducesInTheSwitchesOrOnTheRing) {
  TempDir dir;
  const std::string w = small_workload(dir.path.string());
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml";
  nlohmann::json in_network, ring;
  for (const char* alg : {"single", "ring", "tree"}) {
    const std::string out = dir / alg;
    // the fat tree (16 hosts, 4 leaves, 2 spines: the all-reduces' blocks go to both)
    const auto r = sh("run " + tree + " -p sys.hosts=16 -p sys.leaves=4 -p sys.spines=2 -p sys.leaf*.ports=6 " +
                      "-p sys.spine*.ports=4 --workload " + w +
                      " --iterations 2 --dtype fp32 -p flare.algorithm=" + alg + " -p flare.stagger=true -q -o " + out);
    ASSERT_EQ(r.code, 0) << alg << "\n" << r.out;
    const auto stats = fabricvp::test::load_json(out + "/stats.json");
    const auto& wl = stats["workload"];
    EXPECT_EQ(wl["verified"], true) << alg;
    EXPECT_EQ(wl["mismatched_elements"], 0) << alg;
    EXPECT_EQ(wl["collectives"], 6) << alg;  // 3 layers x 2 iterations
    EXPECT_EQ(wl["collective_bytes"], 2 * (24 + 20000 + 40000)) << alg;
    // forward 6 us, input gradients 4 us, weight gradients 6 us per iteration
    EXPECT_EQ(wl["compute_ps"], 2 * 16000000) << alg;
    EXPECT_GT(wl["exposed_comm_ps"].get<uint64_t>(), 0u) << alg;
    EXPECT_LE(wl["exposed_comm_ps"].get<uint64_t>(), wl["comm_busy_ps"].get<uint64_t>()) << alg;
    EXPECT_EQ(wl["iteration_ps"].get<uint64_t>(), wl["simulated_ps"].get<uint64_t>() / 2) << alg;
    if (std::string(alg) == "single") in_network = wl;
    if (std::string(alg) == "ring") ring = wl;
  }
  // In-network aggregation halves the bytes on the host links.
  EXPECT_LT(in_network["wire_bytes_up"].get<double>() * 1.8, ring["wire_bytes_up"].get<double>());
}

TEST(Flare, ATrainingWorkloadsAllReducesTakeAUserOperator) {
  // The training run's job carries the operator too (it once copied the job before the operator was loaded, and
  // the host reference called a null function): every all-reduce of two iterations checked.
  TempDir dir;
  const std::string w = small_workload(dir.path.string());
  std::ofstream(dir / "mix.c")
      << "#include <stdint.h>\n"
         "uint32_t flare_user_op(uint32_t acc, uint32_t in) { return (acc ^ (in * 3u)) + 1u; }\n";
  const auto r = sh("run " + kPlatform + " --workload " + w + " --iterations 2 --dtype int32 -p flare.op=user " +
                        "--operator mix.c -q -o " + (dir / "o"),
                    dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto wl = fabricvp::test::load_json(dir / "o/stats.json")["workload"];
  EXPECT_EQ(wl["verified"], true);
  EXPECT_EQ(wl["mismatched_elements"], 0);
}

TEST(Flare, ATrainingWorkloadsAllReducesRunSparseInTheSwitches) {
  // --sparse 0.05 with a training workload: conv1's and fc's all-reduces (6 and 10000 elements) run sparse in the
  // switches (a hash store of 16 entries that flushes), conv2's all-to-all host-based through them; two
  // iterations, each all-reduce with new nonzero positions; every host's result of every collective checked
  // against the reference replayed in the switches' order. On one switch and on a fat tree of 16 hosts.
  TempDir dir;
  const std::string w = small_workload(dir.path.string(), "ALLTOALL");
  const std::string sparse = " --sparse 0.05 -p flare.span=1024 -p flare.sparse_format=hash -p flare.entries=16";
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml -p sys.hosts=16 -p " +
                           "sys.leaves=4 -p sys.spines=2 -p sys.leaf*.ports=6 -p sys.spine*.ports=4";
  auto run = [&](const std::string& platform, const std::string& args, const std::string& name) {
    const std::string out = dir / name;
    const auto r = sh("run " + platform + " --workload " + w + " --iterations 2" + args + " -q -o " + out);
    EXPECT_EQ(r.code, 0) << name << "\n" << r.out;
    return r.code == 0 ? fabricvp::test::load_json(out + "/stats.json") : nlohmann::json();
  };
  const nlohmann::json dense = run(kPlatform, " --dtype fp32", "dense")["workload"];
  ASSERT_EQ(dense["verified"], true);
  for (const char* dtype : {"fp32", "int32"})
    for (const std::string& platform : {kPlatform, tree}) {
      const std::string name = std::string(dtype) + (platform == kPlatform ? "-switch" : "-tree");
      const nlohmann::json s = run(platform, std::string(" --dtype ") + dtype + sparse, name);
      const nlohmann::json& wl = s["workload"];
      EXPECT_EQ(wl["verified"], true) << name;
      EXPECT_EQ(wl["mismatched_elements"], 0) << name;
      EXPECT_EQ(wl["collectives"], 6) << name;
      EXPECT_GT(wl["sparse_pairs_in"].get<uint64_t>(), 0u) << name;
      EXPECT_GT(wl["sparse_flushes"].get<uint64_t>(), 0u) << name;
      if (platform == kPlatform && std::string(dtype) == "fp32") {
        // 5 % of the elements as (index, value) pairs: far fewer bytes up than the dense all-reduces
        EXPECT_LT(wl["wire_bytes_up"].get<double>(), 0.5 * dense["wire_bytes_up"].get<double>()) << name;
        const nlohmann::json again = run(platform, std::string(" --dtype ") + dtype + sparse, name + "-again");
        nlohmann::json a = s, b = again;
        a.erase("run");
        b.erase("run");
        EXPECT_EQ(a.dump(), b.dump());
      }
    }
  // The switches' order log must hold every sparse all-reduce's packets of the run.
  const auto r = sh("run " + kPlatform + " --workload " + FABRICVP_SOURCE_DIR +
                    "/sw/workloads/resnet50.yaml --sparse 0.5 -p sys.switch0.host_mem_MiB=1 -q -o " + (dir / "o"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--sparse 0.5: sys.switch0's order log (about"), std::string::npos) << r.out;
}

TEST(Flare, ATrainingWorkloadsOtherCollectivesRunHostBasedThroughTheSwitches) {
  // conv2's weight gradients (20000 B: a segment of 625 fp32 per host, 3 packets of up to 256) by an all-gather,
  // a reduce-scatter or an all-to-all: host-based, every host sending 7 segments through the switch, the other
  // layers' all-reduces in it; every result checked. The host links carry exactly those packets more than
  // with no collective for conv2.
  TempDir dir;
  auto run = [&](const char* comm, const std::string& args, const std::string& name) {
    const std::string w = dir / (std::string(name) + ".yaml");
    std::ifstream in(small_workload(dir.path.string(), comm));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (comm == std::string("NONE")) text.replace(text.find("bytes: 20000"), 12, "bytes: 0");
    std::ofstream(w) << text;
    const std::string out = dir / name;
    const auto r = sh("run " + args + " --workload " + w + " --iterations 2 --dtype fp32 -q -o " + out);
    EXPECT_EQ(r.code, 0) << name << "\n" << r.out;
    return r.code == 0 ? fabricvp::test::load_json(out + "/stats.json")["workload"] : nlohmann::json();
  };
  const nlohmann::json none = run("NONE", kPlatform + " -p flare.stagger=true", "none");
  ASSERT_EQ(none["verified"], true);
  ASSERT_EQ(none["collectives"], 4);
  const uint64_t segments = 2ull * 8 * 7, bytes = 625 * 4 + 3 * 44;
  for (const char* comm : {"ALLGATHER", "REDUCESCATTER", "ALLTOALL"}) {
    const nlohmann::json w = run(comm, kPlatform + " -p flare.stagger=true", comm);
    ASSERT_EQ(w["verified"], true) << comm;
    EXPECT_EQ(w["mismatched_elements"], 0) << comm;
    EXPECT_EQ(w["collectives"], 6) << comm;
    EXPECT_EQ(w["wire_bytes_up"].get<uint64_t>() - none["wire_bytes_up"].get<uint64_t>(), segments * bytes) << comm;
    // collectives.csv: the hosts start conv2's collective while fc's all-reduce (issued before it) is still in
    // the switch, and both take time (the switch's cores forward conv2's packets among fc's blocks).
    std::map<std::string, std::pair<uint64_t, uint64_t>> span;  // first iteration: layer -> issue, end
    std::ifstream csv(dir / comm + "/collectives.csv");
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line.rfind("iteration,layer,name,pass,kind,bytes,simulated_bytes,hosts,issue_ps,end_ps,", 0), 0u);
    while (std::getline(csv, line)) {
      std::vector<std::string> f;
      for (size_t at = 0, next; at <= line.size(); at = next + 1) {
        next = std::min(line.find(',', at), line.size());
        f.push_back(line.substr(at, next - at));
      }
      ASSERT_EQ(f.size(), 14u) << line;
      if (f[0] == "0") span[f[2]] = {std::stoull(f[8]), std::stoull(f[9])};
    }
    ASSERT_EQ(span.size(), 3u) << comm;
    EXPECT_LT(span["fc"].first, span["conv2"].first) << comm;
    EXPECT_LT(span["conv2"].first, span["fc"].second) << comm;
    EXPECT_GT(span["conv2"].second, span["conv2"].first) << comm;
  }
  // The Perfetto trace: host0's collectives track has a span per collective (3 layers x 2 iterations).
  ASSERT_EQ(run("ALLGATHER", kPlatform + " -p flare.stagger=true --trace", "traced")["verified"], true);
  const nlohmann::json traced = fabricvp::test::load_json(dir / "traced" + "/stats.json");
  EXPECT_GE(traced["sys"]["host0"]["peak_collectives"].get<uint64_t>(), 2u);  // fc's and conv2's at once
  const nlohmann::json trace = fabricvp::test::load_json(dir / "traced" + "/trace.json");
  std::multiset<std::string> host0;  // the layers of host0's collective spans
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "collective" && e["tid"] == 2) host0.insert(e["args"]["layer"].get<std::string>());
  EXPECT_EQ(host0, (std::multiset<std::string>{"conv1", "conv1", "conv2", "conv2", "fc", "fc"}));
  // With the all-reduces on the host ring too, and through a fat tree (16 hosts, 4 leaves, 2 spines).
  EXPECT_EQ(run("ALLTOALL", kPlatform + " -p flare.algorithm=ring", "ring")["verified"], true);
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml -p sys.hosts=16 -p " +
                           "sys.leaves=4 -p sys.spines=2 -p sys.leaf*.ports=6 -p sys.spine*.ports=4";
  for (const char* comm : {"ALLGATHER", "ALLTOALL"})
    EXPECT_EQ(run(comm, tree + " -p flare.algorithm=tree", std::string("tree-") + comm)["verified"], true) << comm;
}

TEST(Flare, BadSettingsAreClearErrors) {
  TempDir dir;
  auto run = [&](const std::string& args) { return sh("run " + kPlatform + args + " -q -o " + (dir / "o")); };
  auto r = run(" -p flare.window=1000");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("flare.window 1000: up to 2000 blocks are open at once, sys.switch0 holds 1024 block buffers"),
            std::string::npos)
      << r.out;
  r = run(" -p sys.hosts=4");
  EXPECT_NE(r.out.find("flare-switch.yaml:15:5: sys.switch0.ports is 8; it must be 4 (a Flare switch has one port per "
                       "host: sys.hosts)"),
            std::string::npos)
      << r.out;
  // A typo leaves the port count at its default, which the check refuses: the typo is named with it.
  r = run(" -p sys.hosts=4 -p sys.switch0.portz=4");
  EXPECT_NE(r.out.find("sys.switch0.ports is 8; it must be 4 (a Flare switch has one port per host: sys.hosts)\n  -p "
                       "sys.switch0.portz=4: key 'sys.switch0.portz' has set no parameter (did you mean "
                       "'sys.switch0.ports'?)"),
            std::string::npos)
      << r.out;
  const std::string tree = std::string(FABRICVP_PLATFORMS) + "/flare-fattree-64.yaml";
  r = sh("run " + tree + " -p sys.leaves=7 -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find("sys.hosts = 64: not a multiple of sys.leaves = 7"), std::string::npos) << r.out;
  r = sh("run " + tree + " -p sys.spines=2 -q -o " + (dir / "o"));
  EXPECT_NE(r.out.find("sys.leaf0.ports is 9; it must be 10 (8 hosts, then an uplink to each of 2 spines)"),
            std::string::npos)
      << r.out;
  r = run(" --dtype fp16 -p flare.op=user --operator " + std::string(FABRICVP_SOURCE_DIR) + "/README.md");
  EXPECT_NE(r.out.find("--dtype fp16: a user operator takes 32-bit elements (int32, fp32)"), std::string::npos)
      << r.out;
  r = run(" --bytes 10");
  EXPECT_NE(r.out.find("--bytes 10: not a whole number of 4-byte elements"), std::string::npos) << r.out;
  r = run(" --workload broadcast");
  EXPECT_NE(r.out.find("--workload broadcast: a Flare platform runs an allreduce in the switch"), std::string::npos)
      << r.out;
  r = run(" -p flare.op=prod");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("flare.op"), std::string::npos) << r.out;
  r = run(" --sparse ''");
  EXPECT_NE(r.out.find("--sparse: an empty value"), std::string::npos) << r.out;
  for (const char* d : {"0", "1.5", "x", "0.1x", "0x0.1", " 0.01"}) {
    r = run(std::string(" --sparse '") + d + "'");
    EXPECT_NE(r.out.find(std::string("--sparse '") + d + "': expected the share of each host's elements"),
              std::string::npos)
        << r.out;
  }
  r = run(" -p flare.sparse_format=array");
  EXPECT_NE(r.out.find("flare.sparse_format: only with --sparse D"), std::string::npos) << r.out;
  r = run(" --sparse 0.1 -p flare.entries=100");
  EXPECT_NE(r.out.find("flare.entries 100: the hash table takes a power of 2"), std::string::npos) << r.out;
  r = run(" --sparse 0.1 -p flare.span=100");
  EXPECT_NE(r.out.find("flare.span 100: not a multiple of 32 elements"), std::string::npos) << r.out;
  // Settings the chosen kernel never reads.
  r = run(" --sparse 0.1 -p flare.sparse_format=array -p flare.entries=64");
  EXPECT_NE(r.out.find("flare.entries: the array store holds a value per element"), std::string::npos) << r.out;
  for (const char* alg : {"single", "tree", "ring"}) {
    r = run(std::string(" -p flare.buffers=4 -p flare.algorithm=") + alg);
    EXPECT_NE(r.out.find(std::string("flare.buffers: only with flare.algorithm=multiple (not ") + alg + ")"),
              std::string::npos)
        << r.out;
  }
  r = run(" --bytes 16MiB --sparse 0.5 -p sys.switch0.host_mem_MiB=1");
  EXPECT_NE(r.out.find("--sparse 0.5: sys.switch0's order log (1081040 B: 8 per packet applied, 135130 packets from "
                       "its hosts) does not fit sys.switch0.host_mem_MiB (1 MiB)"),
            std::string::npos)
      << r.out;
  const std::string w = small_workload(dir.path.string(), "ALLTOALL");
  r = run(" --workload " + w + " --bytes 1MiB");
  EXPECT_NE(r.out.find("--bytes: a training workload's all-reduce sizes come from its file"), std::string::npos)
      << r.out;
  r = run(" --iterations 2");
  EXPECT_NE(r.out.find("--iterations: only a training workload (--workload FILE) has iterations"), std::string::npos)
      << r.out;
  r = run(" --workload gnmt");
  EXPECT_NE(r.out.find("--workload gnmt: a Flare platform runs an allreduce in the switch, or a training workload"),
            std::string::npos)
      << r.out;
  r = run(" --sparse 0.1 -p flare.span=65536 -p flare.sparse_format=twolevel -p flare.entries=8");
  EXPECT_NE(r.out.find("flare.span 65536 with flare.sparse_format twolevel of 8 entries: a switch could send up to "
                       "69633 packets for one block"),
            std::string::npos)
      << r.out;
  r = run(" --sparse 0.1 -p flare.algorithm=tree");
  EXPECT_NE(r.out.find("flare.algorithm tree: with --sparse the blocks are reduced by the sparse kernel"),
            std::string::npos)
      << r.out;
}

}  // namespace
