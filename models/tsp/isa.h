// TSP instruction set used by fabricvp (docs/isa.md is the reference).
//
// A chip runs one instruction stream per instruction queue (ICU). Every
// instruction issues in one core cycle except NOP n (n cycles), WAIT c (until
// cycle c), SYNC (until a NOTIFY) and a LOOP that repeats its queue (until
// the next iteration's start). SEND, RECV and ADD then run in their
// functional unit for a known, documented time; a conflicting use of a unit is
// a hardware error, because the hardware has no interlocks or back-pressure.
//
// Binary encoding: 32 bytes per instruction, little-endian
//   [0] opcode  [1] dtype  [2..3] port  [4..7] count
//   [8..11] a   [12..15] b [16..19] c   [20..27] imm  [28..31] source line
// A queue's image ends with an END instruction (opcode 0).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "models/core/dtype.h"

namespace fabricvp::tsp {

// SRAM geometry (seed 000 Fig 3): [hemisphere 2, slice 44, bank 2, offset 4096] x 320 B.
constexpr uint32_t kHemispheres = 2;
constexpr uint32_t kSlices = 44;
constexpr uint32_t kBanks = 2;
constexpr uint32_t kOffsets = 4096;
constexpr uint32_t kVectorBytes = 320;
constexpr uint32_t kVectors = kHemispheres * kSlices * kBanks * kOffsets;        // 720,896
constexpr uint64_t kSramBytes = static_cast<uint64_t>(kVectors) * kVectorBytes;  // 220 MiB

// Matrix unit (MXM, seed 000 §5.2): a unit holds a [K x 320] weight tile, K =
// 160 for fp16 (a unit is a pair of planes) and 320 for int8 (one plane); a
// tile occupies 320 SRAM vectors (fp16: row k in vectors 2k, 2k+1). A
// sub-operation [1 x K] x [K x 320] reads one vector and writes 320 fp32 or
// int32 results: 4 vectors.
constexpr uint32_t kMxmColumns = 320;
constexpr uint32_t kTileVectors = 320;
constexpr uint32_t kResultVectors = kMxmColumns * 4 / kVectorBytes;  // 4
/// K of a tile: 160 for fp16, 320 for int8, 0 for types the MXM does not take.
constexpr uint32_t mxm_k(core::Dtype d) { return d == core::Dtype::fp16 ? 160 : d == core::Dtype::int8 ? 320 : 0; }

/// [hemisphere, slice, bank, offset] of one 320-byte vector.
struct VecAddr {
  uint32_t hemisphere = 0, slice = 0, bank = 0, offset = 0;
  /// Linear vector index: offsets vary fastest, then bank, slice, hemisphere.
  uint32_t linear() const { return ((hemisphere * kSlices + slice) * kBanks + bank) * kOffsets + offset; }
  static VecAddr from_linear(uint32_t v) {
    VecAddr a;
    a.offset = v % kOffsets;
    v /= kOffsets;
    a.bank = v % kBanks;
    v /= kBanks;
    a.slice = v % kSlices;
    a.hemisphere = v / kSlices;
    return a;
  }
  bool valid() const { return hemisphere < kHemispheres && slice < kSlices && bank < kBanks && offset < kOffsets; }
  std::string str() const;
};

enum class Op : uint8_t {
  END = 0,
  NOP = 1,
  WAIT = 2,
  SEND = 3,
  RECV = 4,
  ADD = 5,
  SYNC = 6,
  NOTIFY = 7,
  COPY = 8,
  DESKEW = 9,           ///< pause until the next HAC epoch boundary (seed 000 §3.2)
  TRANSMIT = 10,        ///< notify the chip on C2C port `port` (a link control code)
  RUNTIME_DESKEW = 11,  ///< stall imm + (SAC - HAC) cycles, resynchronize the SAC (§3.3)
  POLL = 12,            ///< polling synchronization loop: at each epoch boundary, continue if port `port` was notified
  RDHAC = 13,           ///< write HAC, SAC, HAC - SAC and the cycle counters into SRAM vector a
  LW = 14,              ///< load a weight tile into buffer c of MXM unit `port` from SRAM a (count vectors)
  MXM = 15,             ///< count [1 x K] x [K x 320] sub-operations: input i at b + i * mxm_stride, results (4
                        ///< vectors each) at a
  MUL = 16,             ///< a[i] = b[i] * c[vxm_b_index(i)] (imm: BCAST period, SPREAD; see vxm_b_index)
  SUB = 17,             ///< a[i] = b[i] - c[vxm_b_index(i)]
  RSQRT = 18,           ///< a[i] = rsqrt(b[i]), binary32 lanes
  SPLAT = 19,           ///< every lane of a[i] = lane imm of b[i]
  NARROW = 20,          ///< a[i] = binary32 vectors b[2i], b[2i + 1] rounded to fp16 / bf16
  WIDEN = 21,           ///< a[2i], a[2i + 1] = fp16 / bf16 vector b[i] as binary32
  TRANSPOSE = 22,       ///< SXM: element k of a = element imm of vector b + k * c, k < count (the rest 0)
  HOSTW = 23,           ///< write count vectors from SRAM a to the host over PCIe, at host vector imm
  EXP = 24,             ///< a[i] = e^b[i], binary32 lanes
  MAX = 25,             ///< a[i] = max(b[i], c[i]) lane by lane, binary32 (BCAST / SPREAD as MUL)
  LOOP = 26,            ///< repeat the queue count more times, iteration k + 1 at program cycle (k + 1) * imm;
                        ///< WAIT and HOSTW offset by k * imm cycles, k * a host vectors (the queue's last instruction)
};

constexpr uint32_t kInstrBytes = 32;

struct Instr {
  Op op = Op::END;
  core::Dtype dtype = core::Dtype::none;
  uint16_t port = 0;
  uint32_t count = 0;  ///< vectors (MXM: sub-operations; TRANSPOSE: sources; LOOP: iterations to repeat)
  uint32_t a = 0, b = 0,
           c = 0;     ///< linear vector addresses (SEND/RECV: a; ADD: a = dst, b, c = sources; COPY: a = dst, b = src;
                      ///< LW: a = tile, c = weight buffer; MXM: a = dst, b = inputs, c = weight buffer;
                      ///< TRANSPOSE: a = dst, b = first source, c = stride between sources; LOOP: a = host-vector
                      ///< stride per iteration)
  uint32_t line = 0;  ///< source line of the assembly text (0 if none)
  uint64_t imm = 0;   ///< NOP: cycles; WAIT: absolute cycle; RUNTIME_DESKEW: target stall; SPLAT, TRANSPOSE:
                      ///< lane; HOSTW: host vector; MXM: bit 0 ACC, bits 32-63 input stride (0: 1; mxm_imm);
                      ///< MUL, SUB: bits 0-31 BCAST period, bits 32-63 SPREAD (vxm_imm); LOOP: period in cycles

  std::array<uint8_t, kInstrBytes> encode() const;  // (the in-memory struct is 32 bytes too)
  static Instr decode(const uint8_t* bytes);
  bool operator==(const Instr& o) const;
};

static_assert(sizeof(Instr) == kInstrBytes, "instruction streams are held in memory at their encoded size");

const char* op_name(Op op);

// MXM immediate (docs/isa.md "LW and MXM"): bit 0 = ACC, bits 32-63 = the
// distance between consecutive input vectors, 0 encoding 1 (so an MXM without
// STRIDE keeps imm 0 or 1). Bits 1-31 are zero.

/// MXM: the results are added to the destination (ACC).
inline bool mxm_acc(const Instr& in) { return (in.imm & 1) != 0; }
/// MXM: the input stride s >= 1: sub-operation i reads vector b + i * s.
inline uint32_t mxm_stride(const Instr& in) {
  const uint32_t s = static_cast<uint32_t>(in.imm >> 32);
  return s ? s : 1;
}
/// MXM: the input vector (linear address) sub-operation i reads.
inline uint64_t mxm_input(const Instr& in, uint32_t i) { return in.b + uint64_t(i) * mxm_stride(in); }
/// MXM: the immediate of ACC and stride (>= 1; stride 1 is encoded as 0).
inline uint64_t mxm_imm(bool acc, uint32_t stride) { return (stride > 1 ? uint64_t(stride) << 32 : 0) | (acc ? 1 : 0); }

/// LOOP n, P, HOST s (docs/isa.md "LOOP"): n x P (the cycles the repetitions
/// add) and n x s (the host vectors they add) are at most this, as a WAIT's
/// cycle is: offset WAIT targets and host vectors stay far inside 64 bits.
constexpr uint64_t kMaxLoopSpan = uint64_t(1) << 40;

// MUL and SUB immediate (docs/isa.md "MUL, SUB, ..."): bits 0-31 = BCAST
// period p (0: none), bits 32-63 = SPREAD q (0: none); at most one is nonzero.
// Step i reads the second operand's (c's) vector c + vxm_b_index(i):
// i without either, i mod p with BCAST p (BCAST 1, imm 1: c[0] for every i),
// i / q with SPREAD q (each c vector serves q consecutive steps).

/// MUL, SUB: the BCAST period p (0: no BCAST).
inline uint32_t vxm_bcast(const Instr& in) { return static_cast<uint32_t>(in.imm); }
/// MUL, SUB: the SPREAD q (0: no SPREAD).
inline uint32_t vxm_spread(const Instr& in) { return static_cast<uint32_t>(in.imm >> 32); }
/// MUL, SUB: the index into the second operand (vector c + index) step i reads.
inline uint32_t vxm_b_index(const Instr& in, uint32_t i) {
  const uint32_t p = vxm_bcast(in), q = vxm_spread(in);
  return p ? i % p : q ? i / q : i;
}
/// MUL, SUB: how many vectors of the second operand the count steps read (c .. c + this - 1).
inline uint32_t vxm_b_vectors(const Instr& in) {
  if (in.count == 0) return 0;
  const uint32_t p = vxm_bcast(in);
  if (p) return p < in.count ? p : in.count;
  return vxm_b_index(in, in.count - 1) + 1;
}
/// MUL, SUB: the immediate of a BCAST period and a SPREAD (at most one nonzero).
inline uint64_t vxm_imm(uint32_t bcast, uint32_t spread) { return uint64_t(spread) << 32 | bcast; }

// VXM fly-by (docs/isa.md "Fly-by", seed 000 §5.5): consecutive instructions
// of one queue chained through the vector ALUs in one pass, each on its own
// ALU, so that only the first reads its operand from SRAM and only the last
// writes SRAM. Flags in the port field (unused otherwise by these ops):

/// The instruction's result goes on to the next instruction's ALU, not to SRAM (its dst field is unused: 0).
constexpr uint16_t kFlyOut = 1;
/// The instruction's first operand is the previous instruction's result (its field b is unused: 0).
constexpr uint16_t kFlyIn = 2;
/// The operations a fly-by chains (same count and type all along it).
constexpr bool fly_capable(Op op) {
  return op == Op::MUL || op == Op::SUB || op == Op::MAX || op == Op::RSQRT || op == Op::EXP || op == Op::SPLAT;
}
/// MUL, SUB, MAX: the operations with a second operand (field c, BCAST / SPREAD).
constexpr bool vxm_two_operands(Op op) { return op == Op::MUL || op == Op::SUB || op == Op::MAX; }
inline bool fly_out(const Instr& in) { return fly_capable(in.op) && (in.port & kFlyOut) != 0; }
inline bool fly_in(const Instr& in) { return fly_capable(in.op) && (in.port & kFlyIn) != 0; }
/// What is wrong with instruction `in` after `prev` (nullptr: the first of
/// its queue) as far as fly-bys go, or "" (docs/isa.md "Fly-by"): flags only
/// on the chained operations, no destination before FLY-out and no first
/// operand with FLY-in, a FLY-out followed by a FLY-in of the same count and
/// type and the other way round. The assembler and the chip both apply it.
std::string fly_error(const Instr* prev, const Instr& in);
/// A queue may not end with a FLY-out: "" or why (`last` nullptr: empty queue).
std::string fly_end_error(const Instr* last);

}  // namespace fabricvp::tsp
