// Compile-time scheduler for collectives and transfers (docs/collectives.md).
//
// Ranks are arranged in a hierarchy of levels, innermost first: the TSPs of a
// node, the nodes of a rack, the racks (levels of size 1 are skipped). At level
// l a rank's group is the ranks that differ from it only in that coordinate.
// The buffer is split recursively: level 1 splits it over a node's TSPs, level 2
// splits each piece over the rack's nodes, level 3 over the racks.
//
//   allreduce      reduce-scatter up the levels (each rank sums its piece's
//                  contributions from its group, in member order), then
//                  all-gather down. On one node this is the 8-way
//                  reduce-scatter + all-gather over the direct links; on a
//                  Dragonfly it is the 3-stage hierarchical all-reduce of seed
//                  000 §5.6 (intra-node, over the global links, intra-node).
//   reducescatter  the reduce-scatter half; allgather the all-gather half.
//   broadcast      the root scatters one piece to every other rank, then an
//                  all-gather down the levels (the root receives nothing).
//   alltoall       every rank sends block s of its buffer to rank s.
//   p2p            one rank sends a tensor to another, over the minimal route or
//                  spread over several routes (sched.routing).
// Every vector's cable, cycle and buffer is fixed here, and the completion time
// predicted; the simulation must agree to the picosecond.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/tsp/isa.h"
#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

enum class Kind { allreduce, allgather, reducescatter, broadcast, alltoall, p2p };
const char* kind_name(Kind k);
bool parse_kind(const std::string& s, Kind& out);

enum class Routing { minimal, spread, automatic };
bool parse_routing(const std::string& s, Routing& out);

struct Request {
  Kind kind = Kind::allreduce;
  uint64_t bytes = 0;  ///< nccl-tests convention: total buffer size (docs/collectives.md)
  core::Dtype dtype = core::Dtype::fp32;
  uint32_t root = 0;                     ///< broadcast root rank; p2p source rank
  uint32_t peer = 1;                     ///< p2p destination rank
  uint32_t chunk_vectors = 64;           ///< reduction granularity (raised to fit instruction memory)
  uint32_t staging_chunks = 4;           ///< receive ring per source, in chunks (doubled if the reduction lags)
  uint32_t min_piece_vectors = 8;        ///< allreduce: smallest piece worth splitting a level's data into
  Routing routing = Routing::automatic;  ///< p2p and alltoall: route choice
  uint32_t max_paths = 7;                ///< most routes one tensor is spread over
  /// Per-level staging ring override (0 = staging_chunks); plan() grows the
  /// ring of only the level whose reduction cannot drain it in time.
  std::vector<uint32_t> level_staging;
};

/// A byte range of SRAM starting at a vector boundary.
struct Region {
  uint32_t vec = 0;
  uint64_t bytes = 0;
};

struct Plan {
  std::vector<sw::Program> programs;         ///< per physical chip
  std::vector<std::vector<Region>> inputs;   ///< per rank: where its input bytes go, in order
  std::vector<std::vector<Region>> outputs;  ///< per rank: where its result bytes are, in order
  std::vector<uint32_t> collective_rank;     ///< per rank: its position in allgather/reducescatter order
  uint64_t input_bytes = 0;                  ///< input bytes per rank that has an input
  uint64_t predicted_ps = 0;                 ///< completion: last SRAM write of the schedule
  uint32_t chunk_vectors = 0;
  uint32_t staging_chunks = 0;          ///< innermost level's ring
  std::vector<uint32_t> level_staging;  ///< ring per level (chunks), innermost first
  double bus_factor = 1.0;              ///< busbw / algbw (nccl-tests)
  std::vector<uint32_t> levels;         ///< group size per level, innermost first
  uint32_t paths = 0;                   ///< p2p: routes used
  uint32_t max_hops = 0;                ///< longest route used (cables)
  uint64_t bursts = 0, forwarded_vectors = 0;
  uint64_t scratch_vectors = 0;  ///< most forwarding SRAM any chip needed
};

/// Throws core::ConfigError for requests the machine cannot run.
Plan plan(const Machine& m, const Request& r);

}  // namespace fabricvp::sched
