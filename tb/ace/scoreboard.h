// In-order scoreboard of the ACE equivalence bench: every completion of the
// design under test is compared with the reference model's, field by field
// (tag, err, sent, accept cycle, retire cycle, every result bit).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "models/ace/datapath.h"

namespace fabricvp::tb {

/// What the compared results covered (sent results of add chunks, per lane).
struct Coverage {
  uint64_t fp_lanes = 0;    ///< floating-point sums
  uint64_t nan = 0;         ///< NaN results
  uint64_t inf = 0;         ///< infinite results
  uint64_t overflow = 0;    ///< of which from finite operands
  uint64_t cancel = 0;      ///< zero results from nonzero operands (exact cancellation)
  uint64_t neg_zero = 0;    ///< -0 results
  uint64_t subnormal = 0;   ///< subnormal results
  uint64_t int_wraps = 0;   ///< int32 sums that overflowed
  uint64_t err_chunks = 0;  ///< chunks completed with err
};

class Scoreboard {
 public:
  /// Mismatches beyond `report_limit` are counted, not described.
  explicit Scoreboard(std::ostream* log, uint64_t report_limit = 8) : m_log(log), m_limit(report_limit) {}

  /// A chunk was submitted to both models, meeting `lanes` words `local` in the
  /// buffer (null: no row). Both are kept to describe mismatches.
  void submitted(const ace::Chunk& c, const uint32_t* local, size_t lanes);
  /// Compare the completions of the oldest submitted chunk; false on a mismatch.
  bool compare(const ace::Completion& expected, const ace::Completion& actual);
  /// One side ended early (model failure): counts as a mismatch.
  void missing(const std::string& why);

  uint64_t compared() const { return m_compared; }
  uint64_t mismatches() const { return m_mismatches; }
  /// Index (0-based, in completion order) of the first mismatch, or -1.
  int64_t first_mismatch() const { return m_first; }
  const std::string& first_description() const { return m_first_text; }
  /// Earliest accept cycle (either side) of the first mismatching completion.
  uint64_t first_cycle() const { return m_first_cycle; }
  const Coverage& coverage() const { return m_cov; }
  /// Chunks submitted and not compared yet.
  size_t outstanding() const { return m_chunks.size(); }

 private:
  void report(const std::string& text, uint64_t cycle);
  void cover(const ace::Chunk& c, const std::vector<uint32_t>& local, const ace::Completion& e);

  std::ostream* m_log;
  uint64_t m_limit;
  struct Entry {
    ace::Chunk chunk;
    std::vector<uint32_t> local;
  };
  ace::Ring<Entry> m_chunks;
  uint64_t m_compared = 0;
  uint64_t m_mismatches = 0;
  int64_t m_first = -1;
  std::string m_first_text;
  uint64_t m_first_cycle = 0;
  Coverage m_cov;
};

}  // namespace fabricvp::tb
