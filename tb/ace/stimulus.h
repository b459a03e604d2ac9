// Seeded stimulus for the ACE datapath equivalence bench: chunks (op, dtype,
// partition, row, flags, valid gap, lane values), partition tables and the
// send side's back-pressure. Everything derives from one seed; the same seed
// gives the same stream.
//
// Lane values mix uniform random bit patterns with the corner cases of each
// format (+-0, smallest and largest subnormals, smallest normal, largest
// finite, infinities, quiet/signalling/negative NaNs) and with values made
// from the local partial the chunk will meet (read from the C++ model, whose
// buffer is always up to date): its negation (exact cancellation), its
// negation a few ulps off (massive cancellation), itself (doubling, overflow
// near the top), and half an ulp of it (ties to even) or a little more.
// 16-bit elements carry random upper halves, which the adder must ignore.
#pragma once

#include <cstdint>
#include <vector>

#include "models/ace/datapath.h"

namespace fabricvp::tb {

/// SplitMix64 stream.
class Rng {
 public:
  explicit Rng(uint64_t seed) : m_state(seed) {}
  uint64_t next();
  /// Uniform in [0, n) (multiply-shift: no division).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
  bool chance(uint32_t percent) { return below(100) < percent; }

 private:
  uint64_t m_state;
};

struct Partition {
  uint32_t base = 0, size = 0;
};

class Stimulus {
 public:
  /// `saturate`: no valid gaps, out_ready always high, deep lookahead (the
  /// datapath takes a chunk every cycle unless a hazard stalls it).
  Stimulus(uint64_t seed, const ace::Geometry& g, bool saturate = false);

  /// Partition table for the random phase: random bases and sizes; partitions
  /// may overlap, and some run past the end of the buffer (their last rows do
  /// not exist).
  std::vector<Partition> partitions();
  /// A chunk that stores random lanes into physical row `addr` through partition
  /// 0 (which then covers the whole buffer). Written into `c` (its storage reused).
  void fill(uint32_t addr, uint32_t tag, ace::Chunk& c);
  /// A random chunk; `model` supplies the partition map and the local partials.
  void random(const ace::Datapath& model, const std::vector<Partition>& parts, uint32_t tag, ace::Chunk& c);
  /// Chunks submitted ahead of the completions being collected, for the next
  /// stretch of the run (0: one at a time ... 16: deep pipelining).
  uint32_t lookahead();

  /// out_ready in `cycle`: a pure function of the seed and the cycle (bursts
  /// of always ready, random, mostly stalled and fully stalled 32-cycle windows).
  bool ready(uint64_t cycle) const;

 private:
  uint32_t gap();
  uint32_t value(core::Dtype dt, uint32_t local);
  uint32_t float_value(core::Dtype dt, uint32_t local);

  ace::Geometry m_geo;
  bool m_saturate;
  Rng m_rng;
  uint64_t m_ready_seed;
  struct Recent {
    uint32_t part, row;
  };
  std::vector<Recent> m_recent;  // rows of the last chunks, for read-after-write hazards
  size_t m_recent_next = 0;
};

}  // namespace fabricvp::tb
