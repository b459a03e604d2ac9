// A training workload (sw/training, docs/workloads.md) on the hosts of a
// Flare platform: every host is an NPU of one dimension, and the collective
// service runs each all-reduce as one Flare allreduce of real bytes, in the
// switches (flare.algorithm single, multiple or tree) or as the host ring
// through them (ring); reduce-scatter and all-gather run host-based as the
// ring's halves and all-to-all directly between the hosts, the switches
// forwarding their packets (flare::Collective; their sizes rounded up to a
// whole segment per host). A host starts each collective when the loop
// issues it (every host issues the same sequence), so several may be in
// flight at once, told apart by their reduction ids; its window bounds its
// blocks in flight over all of them (flare::Host). The
// allreduces in the switches number their blocks one after the other
// (flare::Job::block_base). With a density (--sparse D) the all-reduces are
// sparse (flare/sparse.c): every host's gradient has a share D of nonzero
// elements, drawn anew for each all-reduce. Every collective's inputs and
// results are kept for the run's check (FlareScenario::check): an in-network
// dense all-reduce's once for all its hosts (flare::SharedVectors). docs/flare.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/core/dtype.h"
#include "models/flare/host.h"
#include "sw/training/loop.h"
#include "sw/training/workload.h"

namespace fabricvp::pspin {

class FlareSystem;

class FlareTraining : public training::Platform {
 public:
  /// `job`: the settings every allreduce shares (dtype, op, blocks, window, stagger, ring, fan-in; job.sparse:
  /// the all-reduces are sparse, with `density` of each host's elements nonzero); `dense_block_elems`: the
  /// elements of a packet of the host-based collectives.
  FlareTraining(FlareSystem& sys, const flare::Job& job, const std::string& file, uint32_t iterations,
                core::Dtype dtype, uint64_t seed, double density, uint32_t dense_block_elems);
  ~FlareTraining() override;

  uint32_t npus() const override { return m_job.hosts; }
  std::vector<uint32_t> dim_sizes() const override { return {m_job.hosts}; }
  uint64_t now() const override;
  void at(uint32_t npu, uint64_t t, std::function<void()> fn) override;
  void collective(const training::Call& call, std::function<void()> done) override;
  void computed(uint32_t host, uint32_t layer, uint32_t pass, uint64_t start, uint64_t end) override;
  void communicated(const training::Call& call, uint64_t issue, uint64_t end) override;

  void start();
  bool done() const;
  std::string progress() const { return m_loop->progress(); }
  double fraction_done() const { return m_loop->fraction_done(); }

  /// One collective of the run (the k-th every host issues).
  struct Record {
    uint32_t iteration = 0, layer = 0, pass = 0;
    uint64_t bytes = 0;  ///< as the workload gives it; the allreduce moves whole elements
    flare::Job job;
    uint64_t issue_ps = UINT64_MAX, end_ps = 0;  ///< first host issued, last host had its result
    uint32_t hosts_done = 0;
    std::vector<std::vector<uint8_t>> input, result;  ///< per host (host-based collectives)
    std::shared_ptr<flare::SharedVectors> shared;     ///< an in-network dense all-reduce's vectors
    flare::SharedVectors::Fill fill;                  ///< a ring all-reduce's inputs (its hosts keep none)
    std::vector<flare::SparseRun> sparse;             ///< per host: a sparse all-reduce's pairs
    uint64_t mismatched = 0;
  };
  std::vector<Record>& records() { return m_records; }
  const std::vector<Record>& records() const { return m_records; }
  const training::Workload& workload() const { return m_w; }
  const training::TrainingLoop& loop() const { return *m_loop; }
  uint32_t iterations() const { return m_iterations; }
  /// Every collective of the run: when it was issued (first host) and done (last host), where it ran, its
  /// mismatched elements (after the check).
  void write_collectives_csv(const std::string& path) const;
  /// Blocks of every allreduce of the run, summed (each switch logs them).
  uint64_t total_blocks() const { return m_total_blocks; }
  /// Sparse: the packets a host sends for every all-reduce of the run, expected at the density (every block
  /// one at least, then one per flare::kSparsePairs pairs).
  double sparse_packets_per_host() const { return m_sparse_packets; }
  /// The nonzero elements of host `host`'s input of the sparse all-reduce `job`, from `seed` (the single
  /// allreduce's too).
  static std::vector<flare::Pair> sparse_vector(const flare::Job& job, double density, core::Dtype dtype,
                                                uint64_t seed);
  /// Host h's dense input of `job`, made slice by slice (flare::SharedVectors): random elements of `dtype` from
  /// seed_of(h), the same stream whatever the slices (the single allreduce's too).
  static flare::SharedVectors::Fill dense_input(const flare::Job& job, core::Dtype dtype,
                                                std::function<uint64_t(uint32_t)> seed_of);

 private:
  void host_done(uint32_t host, uint32_t reduction);
  FlareSystem& m_sys;
  flare::Job m_job;
  training::Workload m_w;
  std::unique_ptr<training::TrainingLoop> m_loop;
  uint32_t m_iterations;
  core::Dtype m_dtype;
  uint64_t m_seed;
  double m_density;
  uint32_t m_dense_block_elems;
  double m_sparse_packets = 0;
  std::vector<Record> m_records;
  std::unique_ptr<training::Tracks> m_tracks;  // Perfetto: each host's compute and collectives
  struct HostState {
    uint32_t calls = 0;                                                        // collectives it issued
    std::map<uint32_t, std::pair<uint32_t, std::function<void()>>> in_flight;  // reduction -> record, callback
  };
  std::vector<HostState> m_hosts;
  uint64_t m_total_blocks = 0;
};

}  // namespace fabricvp::pspin
