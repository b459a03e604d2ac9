// Compile-time scheduler for collectives on a fully connected group of TSPs
// (the 8-TSP GroqNode). It turns a collective into per-chip instruction streams
// in which every vector's link, cycle and buffer are fixed, and predicts the
// completion time from the documented instruction timing. The simulation must
// complete at exactly the predicted picosecond.
//
// Algorithms (n chips, every ordered pair has its own link direction):
//   allreduce      reduce-scatter then all-gather over the n-1 direct links of
//                  every chip. Shard j of every chip goes to chip j, which sums
//                  the n contributions in rank order (((x0+x1)+x2)+...) chunk by
//                  chunk as they land, then sends the reduced shard to everyone.
//                  Both phases keep all n(n-1) link directions busy.
//   allgather      every chip sends its piece to every other chip directly.
//   reducescatter  the first phase of allreduce; chip j keeps shard j.
//   broadcast      the root splits the data into n-1 parts and sends part k to
//                  non-root k, which forwards it to the other non-roots as it
//                  arrives (cut-through): all links but the ones into the root busy.
// Buffers are in-place and vector aligned (docs/collectives.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/tsp/isa.h"
#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

enum class Kind { allreduce, allgather, reducescatter, broadcast };
const char* kind_name(Kind k);
bool parse_kind(const std::string& s, Kind& out);

struct Request {
  Kind kind = Kind::allreduce;
  uint64_t bytes = 0;  ///< nccl-tests convention: total buffer size (see docs/collectives.md)
  tsp::Dtype dtype = tsp::Dtype::fp32;
  uint32_t root = 0;             ///< broadcast only
  uint32_t chunk_vectors = 64;   ///< reduction granularity (raised to fit instruction memory)
  uint32_t staging_chunks = 4;   ///< receive ring per source, in chunks (doubled if the reduction lags)
};

/// A byte range of chip SRAM starting at a vector boundary.
struct Region {
  uint32_t vec = 0;
  uint64_t bytes = 0;
};

struct Plan {
  std::vector<sw::Program> programs;        ///< per chip
  std::vector<std::vector<Region>> inputs;  ///< per chip: where its input bytes go, in order
  std::vector<std::vector<Region>> outputs; ///< per chip: where its result bytes are, in order
  uint64_t input_bytes = 0;                 ///< input bytes per participating chip
  uint64_t predicted_ps = 0;                ///< completion: last result vector written
  uint32_t chunk_vectors = 0;
  uint32_t staging_chunks = 0;              ///< ring depth actually used
  double bus_factor = 1.0;                  ///< busbw / algbw (nccl-tests)
};

/// Throws core::ConfigError for requests the machine cannot run.
Plan plan(const Machine& m, const Request& r);

}  // namespace fabricvp::sched
