#include "systems/pspin/flare_training.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "models/core/output_file.h"
#include "models/core/param.h"
#include "systems/pspin/flare.h"

namespace fabricvp::pspin {

FlareTraining::FlareTraining(FlareSystem& sys, const flare::Job& job, const std::string& file, uint32_t iterations,
                             core::Dtype dtype, uint64_t seed, double density, uint32_t dense_block_elems)
    : m_sys(sys),
      m_job(job),
      m_iterations(iterations),
      m_dtype(dtype),
      m_seed(seed),
      m_density(density),
      m_dense_block_elems(dense_block_elems) {
  m_w = training::load_workload(file);
  m_loop = std::make_unique<training::TrainingLoop>(m_w, *this, iterations);
  // All-reduces in the switches (or the host ring: flare.algorithm=ring); the other collectives host-based, their
  // packets forwarded by the switches. Only the passes whose collective spans the hosts' one dimension run one
  // (the loop skips the others).
  uint64_t blocks = 0;
  for (uint32_t li = 0; li < m_w.layers.size(); ++li)
    for (uint32_t p = 0; p < 3; ++p) {
      const training::Layer& l = m_w.layers[li];
      const training::Pass& ps = l.pass[p];
      if (ps.comm == training::Comm::none || m_loop->dims(li, p).empty()) continue;
      flare::Job j = job;
      j.elems = std::max<uint64_t>(1, (ps.bytes + job.esize - 1) / job.esize);
      if (ps.comm == training::Comm::allreduce) {
        blocks += j.blocks();
        if (job.sparse && j.elems > UINT32_MAX)
          throw core::ConfigError(
              fmt::format("{}: layer {} ({}), its {} ALLREDUCE of {} elements: a sparse vector "
                          "has at most 2^32 elements",
                          file, l.name, li, training::pass_name(p), j.elems));
        if (job.sparse)
          m_sparse_packets += static_cast<double>(iterations) *
                              (static_cast<double>(j.blocks()) +
                               density * static_cast<double>(j.elems) / static_cast<double>(flare::kSparsePairs));
      }
      if (ps.comm == training::Comm::allreduce && !job.ring) continue;
      j.sparse = false;
      j.block_elems = dense_block_elems;
      if (const std::string why = flare::host_based_limits(j); !why.empty())
        throw core::ConfigError(fmt::format("{}: layer {} ({}), its {} {}: {}", file, l.name, li,
                                            training::pass_name(p), training::comm_name(ps.comm), why));
    }
  m_total_blocks = blocks * iterations;
  if (m_total_blocks >= flare::kPeerMessage)
    throw core::ConfigError(fmt::format("{} x {} iterations: {} blocks, more than the 2^31 block ids of a run", file,
                                        iterations, m_total_blocks));
  m_hosts.resize(job.hosts);
  m_tracks = std::make_unique<training::Tracks>(job.hosts, "host");
  for (uint32_t h = 0; h < job.hosts; ++h)
    sys.host[h]->on_done([this, h](uint32_t reduction) { host_done(h, reduction); });
}

FlareTraining::~FlareTraining() = default;  // (the hosts may be gone: no callback runs after the simulation)

uint64_t FlareTraining::now() const { return m_sys.host_actions.time(); }

void FlareTraining::at(uint32_t, uint64_t t, std::function<void()> fn) { m_sys.host_actions.at(t, std::move(fn)); }

void FlareTraining::start() { m_loop->start(); }

bool FlareTraining::done() const {
  if (!m_loop->done()) return false;
  for (const Record& r : m_records)
    if (r.hosts_done != m_job.hosts) return false;
  return true;
}

void FlareTraining::collective(const training::Call& call, std::function<void()> done) {
  HostState& hs = m_hosts.at(call.npu);
  const uint32_t k = hs.calls++;
  if (k == m_records.size()) {  // the first host to issue it
    Record r;
    r.iteration = call.iteration;
    r.layer = call.layer;
    r.pass = call.pass;
    r.bytes = call.bytes;
    r.job = m_job;
    r.job.elems = std::max<uint64_t>(1, (call.bytes + m_job.esize - 1) / m_job.esize);
    r.job.reduction = k % 0xffff + 1;
    const flare::Job* last_in_switch = nullptr;  // the allreduces number their blocks one after the other
    for (size_t i = m_records.size(); i-- > 0 && !last_in_switch;)
      if (m_records[i].job.kind == flare::Collective::allreduce) last_in_switch = &m_records[i].job;
    r.job.block_base =
        last_in_switch ? last_in_switch->block_base + static_cast<uint32_t>(last_in_switch->blocks()) : 0;
    if (call.comm != training::Comm::allreduce) {  // host-based, a whole segment per host (as the NPUs round)
      r.job.sparse = false;
      r.job.block_elems = m_dense_block_elems;
      r.job.ring = true;
      r.job.kind = call.comm == training::Comm::reducescatter ? flare::Collective::reducescatter
                   : call.comm == training::Comm::allgather   ? flare::Collective::allgather
                                                              : flare::Collective::alltoall;
      r.job.elems = (r.job.elems + m_job.hosts - 1) / m_job.hosts * m_job.hosts;
    }
    r.input.resize(m_job.hosts);
    r.result.resize(m_job.hosts);
    if (r.job.sparse) r.sparse.resize(m_job.hosts);
    m_records.push_back(std::move(r));
  }
  Record& r = m_records.at(k);
  if (r.iteration != call.iteration || r.layer != call.layer || r.pass != call.pass || r.bytes != call.bytes)
    throw std::logic_error(
        fmt::format("host{} issued collective {} as layer {} pass {}, another host as layer {} pass {}", call.npu, k,
                    call.layer, call.pass, r.layer, r.pass));
  r.issue_ps = std::min(r.issue_ps, now());
  const uint32_t h = call.npu;
  if (!hs.in_flight.emplace(r.job.reduction, std::make_pair(k, std::move(done))).second)
    throw core::ConfigError(
        fmt::format("host{}: more than 65535 collectives in flight (their reduction ids repeat)", h));
  auto seed_of = [s = m_seed, k](uint32_t host) {
    return (s * 1000003 + host) ^ ((uint64_t(k) + 1) * 0x9E3779B97F4A7C15ull);
  };
  const uint64_t seed = seed_of(h);
  if (r.job.sparse) {
    m_sys.host[h]->start_sparse(r.job, sparse_vector(r.job, m_density, m_dtype, seed));
    return;
  }
  if (!r.job.ring) {  // in-network: one set of vectors for every host, made by the first to issue it
    if (!r.shared) r.shared = std::make_shared<flare::SharedVectors>(r.job, dense_input(r.job, m_dtype, seed_of));
    m_sys.host[h]->start(r.shared);
    return;
  }
  std::vector<uint8_t> in(r.job.input_elems() * r.job.esize);
  core::random_elements(m_dtype, seed, in.data(), in.size(), 0, m_job.hosts);
  if (r.job.kind == flare::Collective::allreduce) {  // the ring runs in place on it: the check makes it again
    if (!r.fill) r.fill = dense_input(r.job, m_dtype, seed_of);
    m_sys.host[h]->start(r.job, std::move(in), false);
    return;
  }
  m_sys.host[h]->start(r.job, std::move(in));
}

std::vector<flare::Pair> FlareTraining::sparse_vector(const flare::Job& job, double density, core::Dtype dtype,
                                                      uint64_t seed) {
  // Nonzero at independent positions with probability D: geometric gaps from the host's own generator.
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> at;
  const double l = std::log1p(-density);
  auto gap = [&]() -> uint64_t {
    if (density >= 1) return 0;
    const double u = (double((rng() >> 11) + 1)) * 0x1p-53;  // (0, 1]
    return static_cast<uint64_t>(std::min(std::floor(std::log(u) / l), double(job.elems)));
  };
  for (uint64_t e = gap(); e < job.elems; e += 1 + gap()) at.push_back(e);
  std::vector<uint8_t> v(at.size() * job.esize);
  core::random_elements(dtype, seed, v.data(), v.size(), 0, job.hosts);
  std::vector<flare::Pair> out(at.size());
  for (size_t k = 0; k < at.size(); ++k) {
    out[k].index = static_cast<uint32_t>(at[k]);
    std::memcpy(&out[k].value, &v[k * job.esize], job.esize);
  }
  return out;
}

flare::SharedVectors::Fill FlareTraining::dense_input(const flare::Job& job, core::Dtype dtype,
                                                      std::function<uint64_t(uint32_t)> seed_of) {
  return [dtype, esize = job.esize, hosts = job.hosts, seed_of = std::move(seed_of)](uint32_t host, uint64_t first,
                                                                                     uint64_t count, uint8_t* out) {
    core::random_elements(dtype, seed_of(host), out, count * esize, first * esize, hosts);
  };
}

void FlareTraining::host_done(uint32_t h, uint32_t reduction) {
  HostState& hs = m_hosts[h];
  auto it = hs.in_flight.find(reduction);
  if (it == hs.in_flight.end())
    throw std::logic_error(fmt::format("host{}: reduction {} done, which it did not start", h, reduction));
  auto [k, done] = std::move(it->second);
  hs.in_flight.erase(it);
  Record& r = m_records[k];
  flare::Host::Finished f = m_sys.host[h]->take(reduction);
  if (r.job.sparse) {
    r.sparse[h] = std::move(f.sparse);
  } else if (!f.shared) {
    r.input[h] = std::move(f.input);
    r.result[h] = std::move(f.result);
  }
  ++r.hosts_done;
  r.end_ps = std::max(r.end_ps, now());
  done();
}

void FlareTraining::computed(uint32_t host, uint32_t layer, uint32_t pass, uint64_t start, uint64_t end) {
  m_tracks->compute(host, training::pass_name(pass), m_w.layers[layer].name, start, end);
}

void FlareTraining::communicated(const training::Call& call, uint64_t issue, uint64_t end) {
  m_tracks->collective(call, m_w.layers[call.layer].name, issue, end);
}

void FlareTraining::write_collectives_csv(const std::string& path) const {
  core::OutputFile f(path, "collectives CSV");
  f << "iteration,layer,name,pass,kind,bytes,simulated_bytes,hosts,issue_ps,end_ps,duration_ps,where,blocks,"
       "mismatched_elements\n";
  for (const Record& r : m_records) {
    const training::Pass& p = m_w.layers[r.layer].pass[r.pass];
    f << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.iteration, r.layer, m_w.layers[r.layer].name,
                     training::pass_name(r.pass), training::comm_name(p.comm), r.bytes, r.job.elems * r.job.esize,
                     r.hosts_done, r.issue_ps, r.end_ps, r.end_ps - r.issue_ps,
                     r.job.ring     ? "host-based"
                     : r.job.sparse ? "switches (sparse)"
                                    : "switches",
                     r.job.ring ? 0 : r.job.blocks(), r.mismatched);
  }
  f.close();
}

}  // namespace fabricvp::pspin
