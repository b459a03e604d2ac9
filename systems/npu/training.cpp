#include "systems/npu/training.h"
#include "models/core/output_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "models/core/context.h"
#include "models/core/units.h"
#include "sw/optical/hybrid.h"

namespace fabricvp::npusys {

namespace {

npu::CollectiveKind kind_of(training::Comm c) {
  switch (c) {
    case training::Comm::allreduce: return npu::CollectiveKind::allreduce;
    case training::Comm::alltoall: return npu::CollectiveKind::alltoall;
    case training::Comm::allgather: return npu::CollectiveKind::allgather;
    case training::Comm::reducescatter: return npu::CollectiveKind::reducescatter;
    case training::Comm::none: break;
  }
  throw std::logic_error("a collective of type NONE");
}

uint32_t mask_of(const std::vector<uint32_t>& dims) {
  uint32_t m = 0;
  for (uint32_t d : dims) m |= 1u << d;
  return m;
}

}  // namespace

TrainingRun::TrainingRun(System& sys, const std::string& file, uint32_t iterations, core::Dtype dtype, bool data)
    : m_sys(sys), m_iterations(iterations), m_dtype(dtype), m_data(data) {
  m_p2p_whole = !m_sys.is_torus() && m_sys.ndims() == 1 && !m_sys.optical_planes().empty();
  if (optical::is_opgraph_file(file)) {
    if (iterations != 1)
      throw core::ConfigError("--iterations: an op-graph workload runs one iteration (SiP-ML's iteration time)");
    build_opgraph(file);
  } else if (training::chakra_prefix(file) != file ||
             (file.size() > 3 && file.compare(file.size() - 3, 3, ".et") == 0)) {
    if (iterations != 1)
      throw core::ConfigError("--iterations: a Chakra trace is one run of its graph (its iterations are in it)");
    m_w.file = training::chakra_prefix(file);
    m_graph = std::make_unique<training::GraphRun>(training::read_chakra(file, npus()), *this);
  } else {
    m_w = training::load_workload(file);
    split_for_model_parallelism();
    m_loop = std::make_unique<training::TrainingLoop>(m_w, *this, iterations);
  }
  if (m_graph)
    m_sys.set_forecast([this](uint64_t horizon_ps, std::vector<optical::Demand>& out) {
      m_graph->ahead(horizon_ps,
                     [&](uint32_t npu, uint32_t k) { node_demand(npu, m_graph->graphs()[npu].nodes[k], true, out); });
      return System::Progress{m_graph->finished_nodes(), m_graph->computing()};
    });
  if (m_loop)
    m_sys.set_forecast([this](uint64_t horizon_ps, std::vector<optical::Demand>& out) {
      m_loop->ahead(horizon_ps, [&](uint32_t npu, uint32_t layer, uint32_t pass) {
        const training::Pass& p = m_w.layers[layer].pass[pass];
        collective_demand(npu, m_loop->dims(layer, pass), p.comm, p.bytes, true, out);
      });
      return System::Progress{m_loop->steps_taken(), m_loop->computing()};
    });
  m_tracks = std::make_unique<training::Tracks>(npus(), "npu");
}

TrainingRun::~TrainingRun() = default;

void TrainingRun::build_opgraph(const std::string& file) {
  optical::OpGraph g = optical::parse_opgraph(file);
  m_w.file = file;
  m_opgraph = true;
  const uint32_t n = npus(), k = m_sys.choices.sipml_mp.get();
  if (m_sys.is_torus() || m_sys.ndims() != 1)
    throw core::ConfigError(
        fmt::format("{}: an op-graph workload runs on a one-dimensional fabric (topology ndim, "
                    "dims 1: a plane of all the GPUs)",
                    file));
  if (n % k != 0)
    throw core::ConfigError(fmt::format("sipml.mp: {} GPUs per model-parallel group do not divide the {} GPUs", k, n));
  const uint32_t l = n / k;
  if (const uint32_t batch = m_sys.choices.sipml_batch.get()) {
    if (batch % l != 0)
      throw core::ConfigError(
          fmt::format("sipml.batch: a global batch of {} does not split evenly over {} DP groups", batch, l));
    g = g.scaled(batch / l);
  }
  m_local_batch = g.batch;
  if (!g.accuracy_table.empty()) {
    m_accuracy = std::make_unique<optical::AccuracyTable>(optical::parse_accuracy_table(g.accuracy_table));
    m_accuracy_model = g.accuracy_model;
  }
  uint32_t delta = m_sys.choices.sipml_delta.get();
  if (delta == 0) {
    delta = k - 1;  // electrical: any GPU of the group
    for (const optical::Plane* p : m_sys.optical_planes()) {
      uint32_t degree = 0;
      if (auto* ocs = dynamic_cast<const optical::OcsFabric*>(p)) degree = ocs->degree();
      // a GPU reaches at most one peer per wavelength: fewer than the degree when W is small
      if (auto* ring = dynamic_cast<const optical::RingFabric*>(p))
        degree = std::min(ring->degree.get(), ring->spec().wavelengths);
      if (degree) delta = std::min(delta, std::max(1u, (degree - 1) / 2));
    }
  }
  if (k == 1) delta = 0;
  if (k > 1 && delta >= k)
    throw core::ConfigError(fmt::format("sipml.delta: {} must be below sipml.mp ({})", delta, k));
  m_placement = std::make_unique<optical::Placement>(optical::place(g.ops, k, delta, m_sys.choices.sipml_tau_us.get()));
  // The fullest GPU must hold its share of the model and its activations (seed 003 §4.1: Megatron "cannot
  // fit on one GPU").
  uint32_t fullest = 0;
  const std::vector<optical::Placement::DeviceMemory> mem = m_placement->memory(g.ops);
  for (uint32_t d = 1; d < mem.size(); ++d)
    if (mem[d].total() > mem[fullest].total()) fullest = d;
  m_gpu_memory_bytes = mem[fullest].total();
  const double cap = m_sys.choices.sipml_gpu_memory_GB.get();
  if (cap > 0 && m_gpu_memory_bytes > cap * 1e9)
    throw core::ConfigError(fmt::format(
        "{}: sipml.mp={}: GPU {} of each model-parallel group needs {:.1f} GB ({:.1f} GB of weights, gradients and "
        "Adam state, {:.1f} GB of activations at a local batch of {}), more than sipml.gpu_memory_GB={}; use a "
        "larger sipml.mp",
        file, k, fullest, m_gpu_memory_bytes / 1e9, mem[fullest].state / 1e9, mem[fullest].activations / 1e9,
        m_local_batch, cap));
  if (k > 1 && l > 1) m_logical = std::make_shared<collectives::ndim::Shape>(m_sys.fabric.split(0, k));
  std::vector<bool> dp_dims;  // the DP all-reduce's dimensions: the blocks of the split, or all
  if (l > 1) dp_dims = k > 1 ? std::vector<bool>{false, true} : std::vector<bool>{true};
  m_graph = std::make_unique<training::GraphRun>(
      optical::hybrid_graphs(g, *m_placement, l, dp_dims, m_sys.choices.sipml_bucket_MiB.get() * 1048576.0), *this);
}

std::vector<uint32_t> TrainingRun::node_dims(const training::GraphNode& node) const {
  std::vector<uint32_t> dims;
  for (uint32_t d = 0; d < dim_sizes().size(); ++d)
    if (node.involved_dim.empty() || node.involved_dim[d]) dims.push_back(d);
  return dims;
}

void TrainingRun::node_demand(uint32_t npu, const training::GraphNode& node, bool own_only,
                              std::vector<optical::Demand>& out) {
  if (node.kind == training::GraphNode::send) {
    // Its route (dimension order, as collectives::ndim::Shape::next_port): a hop in every dimension where the
    // coordinates differ, to the NPU with the destination's coordinate there; an optical plane sees its own.
    const collectives::ndim::Shape& f = m_sys.fabric;
    uint32_t at = npu;
    for (uint32_t d = 0; d < m_sys.ndims(); ++d) {
      const uint32_t c = f.coord(node.peer, d);
      if (f.coord(at, d) == c) continue;
      const uint32_t next = f.with(at, d, c);
      out.push_back({at, next, static_cast<double>(node.bytes)});
      at = next;
    }
    return;
  }
  collective_demand(npu, node_dims(node), node.comm, node.bytes, own_only, out);
}

void TrainingRun::collective_demand(uint32_t npu, const std::vector<uint32_t>& dims, training::Comm comm,
                                    uint64_t bytes, bool own_only, std::vector<optical::Demand>& out) {
  const uint32_t es = core::dtype_bytes(m_dtype);
  const Groups& g = groups(dims);
  const uint32_t gi = g.of_npu[npu];
  const npu::CollectiveKind kind = kind_of(comm);
  uint64_t elems = (bytes + es - 1) / es;
  if (kind != npu::CollectiveKind::allreduce)
    elems = (elems + g.groups[gi].size() - 1) / g.groups[gi].size() * g.groups[gi].size();
  m_sys.optical_demand(g.groups[gi], plans(mask_of(dims), g, kind, elems)[gi], 1, out,
                       own_only ? g.rank_of[npu] : UINT32_MAX);
}

void TrainingRun::optical_demand(std::vector<optical::Demand>& out) {
  if (m_graph) {
    // every send, and every collective once (at its group's first member)
    for (uint32_t npu = 0; npu < m_graph->graphs().size(); ++npu)
      for (const training::GraphNode& node : m_graph->graphs()[npu].nodes) {
        if (node.kind == training::GraphNode::send) {
          node_demand(npu, node, false, out);
        } else if (node.kind == training::GraphNode::coll) {
          const Groups& g = groups(node_dims(node));
          if (g.groups[g.of_npu[npu]].npus[0] == npu) node_demand(npu, node, false, out);
        }
      }
    return;
  }
  const uint32_t es = core::dtype_bytes(m_dtype);
  for (uint32_t l = 0; l < m_w.layers.size(); ++l)
    for (uint32_t p = 0; p < 3; ++p) {
      const training::Pass& pass = m_w.layers[l].pass[p];
      const std::vector<uint32_t>& dims = m_loop->dims(l, p);
      if (pass.comm == training::Comm::none || dims.empty() || pass.bytes == 0) continue;
      const Groups& g = groups(dims);
      const npu::CollectiveKind kind = kind_of(pass.comm);
      // the sizes collective() gives the collective service
      uint64_t elems = (pass.bytes + es - 1) / es;
      if (kind != npu::CollectiveKind::allreduce)
        elems = (elems + g.groups[0].size() - 1) / g.groups[0].size() * g.groups[0].size();
      const auto& pl = plans(mask_of(dims), g, kind, elems);
      for (size_t gi = 0; gi < g.groups.size(); ++gi) m_sys.optical_demand(g.groups[gi], pl[gi], m_iterations, out);
    }
}

std::vector<uint32_t> TrainingRun::dim_sizes() const {
  const collectives::ndim::Shape& sh = m_logical ? *m_logical : m_sys.fabric;
  std::vector<uint32_t> s;
  for (uint32_t d = 0; d < sh.nlogical(); ++d) s.push_back(sh.size(d));
  return s;
}

void TrainingRun::split_for_model_parallelism() {
  // As ASTRA-sim does: a model-parallel group that ends inside a dimension
  // cuts that dimension in two (the group's part, and the blocks of it).
  const uint32_t G = m_w.model_parallel_group;
  if (!m_w.is_transformer() || G <= 1 || G >= npus() || m_sys.is_torus()) return;
  uint64_t prod = 1;
  for (uint32_t d = 0; d < m_sys.fabric.nlogical(); ++d) {
    const uint32_t n = m_sys.fabric.size(d);
    if (prod * n <= G) {
      prod *= n;
      if (prod == G) return;  // ends on a boundary
      continue;
    }
    if (G % prod == 0 && n % (G / prod) == 0)
      m_logical = std::make_shared<collectives::ndim::Shape>(m_sys.fabric.split(d, static_cast<uint32_t>(G / prod)));
    return;  // otherwise the loop says what would fit
  }
}

uint64_t TrainingRun::now() const { return core::ActionQueue::now(); }

void TrainingRun::at(uint32_t, uint64_t t, std::function<void()> fn) { m_sys.actions.at(t, std::move(fn)); }

const TrainingRun::Groups& TrainingRun::groups(const std::vector<uint32_t>& dims) {
  const uint32_t mask = mask_of(dims);
  auto it = m_groups.find(mask);
  if (it != m_groups.end()) return it->second;
  Groups g;
  g.groups = m_sys.partition(dims, m_logical);
  g.of_npu.assign(m_sys.npus.size(), 0);
  g.rank_of.assign(m_sys.npus.size(), 0);
  for (uint32_t i = 0; i < g.groups.size(); ++i)
    for (uint32_t r = 0; r < g.groups[i].size(); ++r) {
      g.of_npu[g.groups[i].npus[r]] = i;
      g.rank_of[g.groups[i].npus[r]] = r;
    }
  return m_groups.emplace(mask, std::move(g)).first->second;
}

const std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>>& TrainingRun::plans(uint32_t mask,
                                                                                               const Groups& g,
                                                                                               npu::CollectiveKind kind,
                                                                                               uint64_t elems) {
  const PlanKey key{mask, static_cast<uint32_t>(kind), elems};
  auto it = m_plans.find(key);
  if (it != m_plans.end()) return it->second;
  std::vector<std::vector<std::shared_ptr<const npu::CollectivePlan>>> p;
  for (const Group& gr : g.groups) p.push_back(m_sys.plans(gr, kind, m_dtype, elems, 0));
  return m_plans.emplace(key, std::move(p)).first->second;
}

void TrainingRun::collective(const training::Call& call, std::function<void()> done) {
  const Groups& g = groups(call.dims);
  const uint32_t gi = g.of_npu[call.npu];
  const Group& grp = g.groups[gi];
  const npu::CollectiveKind kind = kind_of(call.comm);
  const uint32_t es = core::dtype_bytes(m_dtype);
  // ASTRA-sim sizes are bytes; the collective service moves elements, a block
  // collective a whole number of them per member: round up (collectives.csv
  // lists both sizes).
  uint64_t elems = (call.bytes + es - 1) / es;
  if (kind != npu::CollectiveKind::allreduce) elems = (elems + grp.size() - 1) / grp.size() * grp.size();
  const auto& p = plans(mask_of(call.dims), g, kind, elems);
  const uint32_t rank = g.rank_of[call.npu];
  auto key = std::make_tuple(call.iteration, call.layer, call.pass, gi);
  auto [rit, fresh] = m_records.try_emplace(key);
  CollectiveRecord& r = rit->second;
  if (fresh) {
    r.iteration = call.iteration;
    r.layer = call.layer;
    r.pass = call.pass;
    r.comm = call.comm;
    r.bytes = call.bytes;
    r.simulated_bytes = elems * es;
    r.group = gi;
    r.group_size = grp.size();
    r.mask = mask_of(call.dims);
    r.issue_ps = now();
    r.chunks = p[gi][0]->chunks();
    r.algorithm = p[gi][0]->describe();
    m_order.push_back(&r);
    if (m_data) {
      // One buffer for this collective at every group (the groups hold different NPUs).
      auto& b = m_buffers[std::make_tuple(call.iteration, call.layer, call.pass)];
      if (b.second++ == 0) b.first = allocate(r.simulated_bytes);
      r.address = b.first;
    }
  }
  if (m_data) {
    npu::Npu& n = *m_sys.npus[call.npu];
    core::random_elements(m_dtype, seed_of(r, call.npu), n.memory.at(r.address, r.simulated_bytes), r.simulated_bytes,
                          0, grp.size());
  }
  npu::CollectiveRequest req{p[gi][rank], r.address, grp.id, !m_data};
  m_sys.npus[call.npu]->submit(req, [done = std::move(done)](const npu::Collective&) { done(); });
}

std::string TrainingRun::name_of_record(const CollectiveRecord& r) const {
  return m_graph ? fmt::format("collective{}", r.layer) : m_w.layers[r.layer].name;
}

std::string TrainingRun::name_of(const training::Call& c) const {
  return m_graph ? fmt::format("collective{}", c.layer) : m_w.layers[c.layer].name;
}

void TrainingRun::p2p(uint32_t npu, uint32_t src, uint32_t dst, uint64_t bytes, std::function<void()> done) {
  if (m_sys.is_torus())
    throw core::ConfigError(
        "a point-to-point transfer (Chakra COMM_SEND/COMM_RECV) needs an ndim fabric (topology ndim): the torus's "
        "NPUs route nothing");
  const uint32_t es = core::dtype_bytes(m_dtype);
  const uint64_t elems = (bytes + es - 1) / es;
  const P2pKey key{src, dst, elems};
  auto it = m_p2p_plans.find(key);
  if (it == m_p2p_plans.end()) {
    collectives::ndim::PlanOptions o;
    o.chunk_bytes = uint64_t(m_sys.choices.chunk_kib.get()) * 1024;
    o.chunks = m_p2p_whole ? 1 : m_sys.choices.chunks.get();
    std::array<std::shared_ptr<const npu::CollectivePlan>, 2> p{
        collectives::ndim::make_p2p_plan(m_sys.fabric, src, dst, m_dtype, elems, o, src),
        collectives::ndim::make_p2p_plan(m_sys.fabric, src, dst, m_dtype, elems, o, dst)};
    it = m_p2p_plans.emplace(key, std::move(p)).first;
  }
  if (npu == src) ++m_p2p;
  const uint32_t id = collectives::ndim::p2p_id(m_sys.fabric, src, dst);
  if (!m_data) {
    // The workload's callback waits in a slot: the completion captures its index, small enough for
    // std::function to hold without an allocation (there is a transfer per op-graph edge and GPU pair).
    uint32_t slot;
    if (m_p2p_free.empty()) {
      slot = static_cast<uint32_t>(m_p2p_done.size());
      m_p2p_done.push_back(std::move(done));
    } else {
      slot = m_p2p_free.back();
      m_p2p_free.pop_back();
      m_p2p_done[slot] = std::move(done);
    }
    m_sys.npus[npu]->submit(npu::CollectiveRequest{it->second[npu == src ? 0 : 1], 0, id, true},
                            [this, slot](const npu::Collective&) {
                              std::function<void()> fn = std::move(m_p2p_done[slot]);
                              m_p2p_free.push_back(slot);
                              fn();
                            });
    return;
  }
  // --data: one buffer per transfer (the same address at both ends), seeded
  // at the sender; the receiver's bytes are compared when it has them; the
  // buffer is freed when both ends are done.
  const bool sender = npu == src;
  const uint32_t k = m_p2p_k[{src, dst}][sender ? 0 : 1]++;
  const auto transfer = std::make_tuple(src, dst, k);
  P2pData& d = m_p2p_data[transfer];
  if (!d.allocated) {
    d.bytes = elems * es;
    d.address = allocate(std::max<uint64_t>(d.bytes, 1));
    d.allocated = true;
  }
  if (sender)
    core::random_elements(m_dtype, m_sys.npus[src]->seed_for(fmt::format("p2p_input/{}/{}", dst, k)),
                          m_sys.npus[src]->memory.at(d.address, d.bytes), d.bytes, 0, 1);
  m_sys.npus[npu]->submit(npu::CollectiveRequest{it->second[sender ? 0 : 1], d.address, id, false},
                          [this, transfer, sender, done](const npu::Collective&) {
                            P2pData& e = m_p2p_data.at(transfer);
                            if (!sender)
                              check_p2p(std::get<0>(transfer), std::get<1>(transfer), std::get<2>(transfer), e);
                            if (++e.sides_done == 2) {
                              release(e.address);
                              m_p2p_data.erase(transfer);
                            }
                            done();
                          });
}

void TrainingRun::check_p2p(uint32_t src, uint32_t dst, uint32_t k, const P2pData& d) {
  const uint32_t es = core::dtype_bytes(m_dtype);
  std::vector<uint8_t> want(d.bytes), got(d.bytes);
  core::random_elements(m_dtype, m_sys.npus[src]->seed_for(fmt::format("p2p_input/{}/{}", dst, k)), want.data(),
                        d.bytes, 0, 1);
  m_sys.npus[dst]->memory.read(d.address, got.data(), d.bytes);
  ++m_p2p_checked;
  if (std::memcmp(want.data(), got.data(), d.bytes) == 0) return;
  for (uint64_t e = 0; e < d.bytes / es; ++e)
    if (std::memcmp(want.data() + e * es, got.data() + e * es, es) != 0) {
      ++m_mismatched;
      if (m_first_bad.size() < 5)
        m_first_bad.push_back(fmt::format("npu{} transfer {} from npu{} byte {}: expected {} got {}", dst, k, src,
                                          e * es, core::element_value(m_dtype, want.data() + e * es),
                                          core::element_value(m_dtype, got.data() + e * es)));
    }
}

uint64_t TrainingRun::compute_ps(uint32_t npu, const training::Pass& p) {
  npu::Npu& n = *m_sys.npus[npu];
  // Roofline timing needs the pass's flops or bytes; a pass that gives only its time keeps it.
  if (!n.compute.roofline() || (p.flops == 0 && p.mem_bytes == 0)) return p.compute_ns * 1000;
  return n.compute.kernel_ps(p.flops, n.memory.compute_traffic_ps(p.mem_bytes));
}

void TrainingRun::computed(uint32_t npu, uint32_t layer, uint32_t pass, uint64_t start, uint64_t end) {
  m_sys.npus[npu]->compute.ran(end - start);
  m_tracks->compute(npu, m_graph ? "compute" : training::pass_name(pass),
                    m_graph ? m_graph->graphs()[npu].nodes[layer].name : m_w.layers[layer].name, start, end);
}

void TrainingRun::communicated(const training::Call& call, uint64_t issue, uint64_t end) {
  const Groups& g = groups(call.dims);
  auto it = m_records.find(std::make_tuple(call.iteration, call.layer, call.pass, g.of_npu[call.npu]));
  if (it != m_records.end()) {
    CollectiveRecord& r = it->second;
    r.issue_ps = std::min(r.issue_ps, issue);
    r.end_ps = std::max(r.end_ps, end);
    if (++r.members_done == r.group_size && m_data) check(r);
  }
  if (core::Context::get().trace().in_window(issue, end))  // (name_of makes a string)
    m_tracks->collective(call, name_of(call), issue, end);
}

uint64_t TrainingRun::seed_of(const CollectiveRecord& r, uint32_t npu) const {
  return m_sys.npus[npu]->seed_for(fmt::format("workload_input/{}/{}/{}", r.iteration, r.layer, r.pass));
}

uint64_t TrainingRun::allocate(uint64_t bytes) {
  const uint64_t size = (bytes + 4095) / 4096 * 4096;
  uint64_t at = 0;
  for (const auto& [a, n] : m_used) {
    if (a >= at + size) break;
    at = a + n;
  }
  const uint64_t capacity = m_sys.npus[0]->memory.size_mib.get() << 20;
  if (at + size > capacity)
    throw core::ConfigError(
        fmt::format("--data: the collectives in flight need more than sys.npu*.memory.size_mib ({} MiB) of buffers",
                    capacity >> 20));
  m_used.emplace(at, size);
  return at;
}

void TrainingRun::release(uint64_t address) { m_used.erase(address); }

void TrainingRun::check(CollectiveRecord& r) {
  const Groups& g = m_groups.at(r.mask);
  const Group& grp = g.groups[r.group];
  const uint32_t es = core::dtype_bytes(m_dtype);
  const uint64_t elems = r.simulated_bytes / es;
  const npu::CollectiveKind kind = kind_of(r.comm);
  r.mismatched += m_sys.check(
      grp, plans(r.mask, g, kind, elems)[r.group], 0, r.address,
      [&](uint32_t npu, uint64_t offset, uint64_t bytes, uint8_t* dst) {
        core::random_elements(m_dtype, seed_of(r, npu), dst, bytes, offset, grp.size());
      },
      [&](uint32_t npu, uint64_t offset, const uint8_t* want, const uint8_t* got) {
        if (m_first_bad.size() < 5)
          m_first_bad.push_back(fmt::format("npu{} {} {} {} iteration {} byte {}: expected {} got {}", npu,
                                            name_of_record(r), training::pass_name(r.pass), training::comm_name(r.comm),
                                            r.iteration, offset, core::element_value(m_dtype, want),
                                            core::element_value(m_dtype, got)));
      });
  r.checked = true;
  ++m_checked;
  m_mismatched += r.mismatched;
  auto& b = m_buffers.at(std::make_tuple(r.iteration, r.layer, r.pass));
  if (--b.second == 0) {
    release(b.first);
    m_buffers.erase(std::make_tuple(r.iteration, r.layer, r.pass));
  }
}

void TrainingRun::finish() {
  if (m_graph && !m_graph->done())
    throw std::logic_error(fmt::format("the Chakra graphs ended unfinished: {}", m_graph->progress()));
  if (m_loop && !m_loop->done())
    throw std::logic_error(
        fmt::format("the training loop ended unfinished (a deadlock in the collectives): {}", m_loop->progress()));
  for (const CollectiveRecord* r : m_order)
    if (r->members_done != r->group_size)
      throw std::logic_error(fmt::format("{} {} collective of iteration {}: {} of {} members completed",
                                         m_graph ? fmt::format("collective{}", r->layer) : m_w.layers[r->layer].name,
                                         training::pass_name(r->pass), r->iteration, r->members_done, r->group_size));
}

std::vector<const CollectiveRecord*> TrainingRun::records() const { return m_order; }

void TrainingRun::write_collectives_csv(const std::string& path) const {
  core::OutputFile f(path, "collectives CSV");
  f << "iteration,layer,name,pass,kind,bytes,simulated_bytes,group,group_npus,issue_ps,end_ps,duration_ps,chunks,"
       "algorithm\n";
  for (const CollectiveRecord* r : m_order)
    f << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", r->iteration, r->layer,
                     m_graph ? fmt::format("collective{}", r->layer) : m_w.layers[r->layer].name,
                     training::pass_name(r->pass), training::comm_name(r->comm), r->bytes, r->simulated_bytes,
                     m_groups.empty() ? 0 : r->group, r->group_size, r->issue_ps, r->end_ps, r->end_ps - r->issue_ps,
                     r->chunks, r->algorithm);
  f.close();
}

void TrainingRun::write_links_csv(const std::string& path) const {
  core::OutputFile f(path, "links CSV");
  f << "link,dimension,direction,GBps,messages,bytes,busy_ps,utilization_pct\n";
  for (size_t k = 0; k < m_sys.all_links.size(); ++k) {
    const npu::FabricLink& l = *m_sys.all_links[k];
    for (const auto& [dir, ch] : {std::pair{"a_to_b", &l.a_to_b}, std::pair{"b_to_a", &l.b_to_a}})
      f << fmt::format("{},{},{},{},{},{},{},{:.3f}\n", l.name(), m_sys.dim_name(m_sys.link_dim[k]), dir,
                       l.payload_GBps(), ch->transfers.get(), ch->payload_bytes.get(), ch->busy_ps.get(),
                       ch->utilization_pct());
  }
  f.close();
}

bool TrainingRun::write_traffic_csv(const std::string& path) const {
  const auto planes = m_sys.optical_planes();
  if (planes.empty()) return false;
  core::OutputFile f(path, "traffic CSV");
  f << "plane,src_npu,dst_npu,messages,bytes\n";
  for (const optical::Plane* p : planes)
    for (const optical::Plane::PairTraffic& t : p->pair_traffic())
      f << fmt::format("{},{},{},{},{}\n", p->name(), p->shape().npus[t.src], p->shape().npus[t.dst], t.messages,
                       t.bytes);
  f.close();
  return true;
}

}  // namespace fabricvp::npusys
