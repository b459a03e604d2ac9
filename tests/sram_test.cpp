#include <gtest/gtest.h>

#include <random>

#include "models/core/zero_pages.h"
#include "models/tsp/sram.h"

using namespace fabricvp::tsp;

TEST(Sram, GeometryIs220MiB) {
  EXPECT_EQ(kVectors, 720896u);
  EXPECT_EQ(kSramBytes, 220ull * 1024 * 1024);
}

TEST(Sram, AddressesRoundTripAndOffsetsVaryFastest) {
  for (uint32_t v = 0; v < kVectors; v += 997) EXPECT_EQ(VecAddr::from_linear(v).linear(), v);
  EXPECT_EQ((VecAddr{0, 0, 0, 1}.linear()), 1u);
  EXPECT_EQ((VecAddr{0, 0, 1, 0}.linear()), 4096u);
  EXPECT_EQ((VecAddr{0, 1, 0, 0}.linear()), 8192u);
  EXPECT_EQ((VecAddr{1, 0, 0, 0}.linear()), 44u * 8192u);
  EXPECT_EQ((VecAddr{1, 43, 1, 4095}.linear()), kVectors - 1);
  EXPECT_FALSE((VecAddr{2, 0, 0, 0}.valid()));
  EXPECT_FALSE((VecAddr{0, 44, 0, 0}.valid()));
  EXPECT_EQ((VecAddr{1, 2, 1, 7}.str()), "[1,2,1,7]");
}

TEST(Sram, UntouchedMemoryReadsZeroWithoutAllocating) {
  Sram s;
  for (uint32_t v = 0; v < kVectors; v += 4093)
    for (uint32_t b = 0; b < kVectorBytes; ++b) ASSERT_EQ(s.read(v)[b], 0);
  EXPECT_EQ(s.pages(), 0u);
  EXPECT_LT(s.bytes_allocated(), 4096u);  // bank pointers and written-page masks only
}

TEST(Sram, StorageIsSparseInPagesOf64Vectors) {
  Sram s;
  s.write(0)[0] = 1;
  s.write(63)[0] = 2;  // same page
  EXPECT_EQ(s.pages(), 1u);
  s.write(64)[0] = 3;            // next page
  s.write(kVectors - 1)[0] = 4;  // last bank
  EXPECT_EQ(s.pages(), 3u);
  EXPECT_EQ(s.read(0)[0], 1);
  EXPECT_EQ(s.read(63)[0], 2);
  EXPECT_EQ(s.read(64)[0], 3);
  EXPECT_EQ(s.read(kVectors - 1)[0], 4);
  EXPECT_EQ(s.read(1)[0], 0);
  // Host memory is the OS pages really written: vector 0, vector 63 (bytes
  // 20160..20479: another 4-KiB page), vector 64, and the last vector's page.
  EXPECT_EQ(s.bytes_allocated(), 4u * 4096u + sizeof(Sram));
}

TEST(Sram, ByteAccessCrossesVectorAndPageBoundaries) {
  Sram s;
  std::vector<uint8_t> in(100000), out(100000);
  std::mt19937 rng(5);
  for (auto& b : in) b = static_cast<uint8_t>(rng());
  uint64_t addr = 63ull * kVectorBytes + 17;
  s.write_bytes(addr, in.data(), in.size());
  s.read_bytes(addr, out.data(), out.size());
  EXPECT_EQ(in, out);
  uint8_t x = 0;
  s.read_bytes(addr - 1, &x, 1);
  EXPECT_EQ(x, 0);
  EXPECT_THROW(s.read_bytes(kSramBytes - 10, out.data(), 11), std::out_of_range);
  EXPECT_THROW(s.write_bytes(kSramBytes, in.data(), 1), std::out_of_range);
}

// An NPU memory's contents (core::ZeroPages): new bytes read as zero, growing
// keeps what was written (also past a first mapping's end), size is the most asked.
TEST(ZeroPages, GrowsKeepingContentsAndNewBytesReadZero) {
  fabricvp::core::ZeroPages z;
  EXPECT_EQ(z.size(), 0u);
  z.grow(100);
  ASSERT_NE(z.data(), nullptr);
  EXPECT_EQ(z.size(), 100u);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(z.data()[i], 0) << i;
  for (size_t i = 0; i < 100; ++i) z.data()[i] = static_cast<uint8_t>(i + 1);
  z.grow(50);  // never shrinks
  EXPECT_EQ(z.size(), 100u);
  const size_t big = (size_t(5) << 20) + 3;  // past the first 2 MiB mapping
  z.grow(big);
  EXPECT_EQ(z.size(), big);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(z.data()[i], i + 1) << i;
  for (size_t i = 100; i < big; i += 4093) ASSERT_EQ(z.data()[i], 0) << i;
  EXPECT_EQ(z.data()[big - 1], 0);
  z.data()[big - 1] = 7;
  z.grow(big * 3);
  EXPECT_EQ(z.data()[big - 1], 7);
  EXPECT_EQ(z.data()[99], 100);
}
