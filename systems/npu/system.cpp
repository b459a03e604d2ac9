#include "systems/npu/system.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "models/ace/rtl_datapath.h"
#include "sw/optical/relabel.h"
#include "sw/optical/ring.h"

namespace fabricvp::npusys {

namespace ndim = collectives::ndim;

Choices::Choices()
    : ace_model("ace", "model", "tlm", "",
                "collective engine: tlm (ACE, C++ datapath), rtl (ACE, verilated datapath), none (baseline: NPU cores "
                "reduce through memory), ideal (seed 002's Ideal: every message handled in the endpoint delay, no "
                "memory traffic or SMs)",
                {"tlm", "rtl", "none", "ideal"}),
      algorithm("collective", "algorithm", "enhanced", "",
                "multi-dimensional all-reduce: enhanced (reduce-scatter down the dimensions, all-reduce on the last, "
                "all-gather back up; ASTRA-sim's localBWAware) or baseline (all-reduce on every dimension in turn) "
                "(seed 001 §II-D)",
                {"enhanced", "baseline"}),
      chunk_kib("collective", "chunk_kib", 16, "KiB",
                "a collective is split into chunks of this size, pipelined within and across phases", 1u, 1u << 20),
      chunks("collective", "chunks", 0, "chunks",
             "if > 0: split every collective into this many chunks instead (ASTRA-sim's preferred-dataset-splits)", 0u,
             1u << 20),
      align_elems("collective", "align_elems", 64, "elements",
                  "segments are split on multiples of this many elements (ACE: a multiple of alu_lanes)", 1u, 1u << 20),
      allreduce_implementation("collective", "allreduce_implementation", "ring", "",
                               "all-reduce algorithm per dimension, comma-separated (one value: every dimension): "
                               "ring, direct, halvingDoubling, doubleBinaryTree (torus: ring)"),
      reducescatter_implementation("collective", "reducescatter_implementation", "ring", "",
                                   "reduce-scatter algorithm per dimension: ring, direct, halvingDoubling"),
      allgather_implementation("collective", "allgather_implementation", "ring", "",
                               "all-gather algorithm per dimension: ring, direct, halvingDoubling"),
      alltoall_implementation("collective", "alltoall_implementation", "direct", "",
                              "all-to-all algorithm per dimension: direct"),
      sipml_mp("sipml", "mp", 1, "GPUs",
               "op-graph workloads: GPUs per model-parallel group k (consecutive GPUs); the l = GPUs / k groups "
               "are data-parallel replicas (seed 003 §3.2)",
               1u, 4096u),
      sipml_delta("sipml", "delta", 0, "GPUs",
                  "op-graph workloads: a GPU sends only to GPUs at most delta ahead in its group (Algorithm 1); 0: "
                  "from the optical plane's degree D, (D - 1) / 2 as gradients flow back (electrical: k - 1)",
                  0u, 4095u),
      sipml_batch("sipml", "batch", 0, "samples",
                  "op-graph workloads: the global batch, split evenly over the l DP groups (each group's op graph "
                  "scaled from the file's batch); 0: every group runs the file's batch",
                  0u, 1u << 30),
      sipml_tau_us("sipml", "tau_us", 10.0, "us",
                   "op-graph workloads: the computation quantum ops are split near (seed 003 §4: 10 us)", 0.001, 1e9),
      sipml_bucket_MiB("sipml", "bucket_MiB", 25.0, "MiB",
                       "op-graph workloads: a GPU's weight gradients are all-reduced in buckets of at least this "
                       "much, in the order they are computed (PyTorch DDP's default 25 MiB); 0: one all-reduce per "
                       "sub-op",
                       0.0, 1e6),
      sipml_gpu_memory_GB("sipml", "gpu_memory_GB", 32.0, "GB",
                          "op-graph workloads: a GPU's memory (seed 003 profiles a 32 GB V100); a placement whose "
                          "fullest GPU needs more (its sub-ops' weights with their gradients and Adam state, 16 "
                          "bytes per 2-byte parameter, and their activations kept for the backward pass) is "
                          "refused; 0: not checked",
                          0.0, 1e9) {}

DimParams::DimParams(const std::string& p)
    : prefix(p),
      type(prefix.c_str(), "type", "Ring", "", "Ring, FullyConnected or Switch (ASTRA-sim's topology names)",
           {"Ring", "FullyConnected", "Switch"}),
      npus(prefix.c_str(), "npus", 4, "NPUs", "NPUs along this dimension", 1u, 4096u),
      links(prefix.c_str(), "links", 1, "links",
            "links per NPU (Ring: to each neighbour; FullyConnected: to each peer; Switch: to the switch)", 1u, 64u),
      GBps(prefix.c_str(), "GBps", 50.0, "GB/s", "bandwidth of one link direction (1 GB = 1e9 bytes)", 0.001, 100000.0),
      latency_ns(prefix.c_str(), "latency_ns", 500.0, "ns", "link latency, end of serialization to the receiver", 0.0,
                 1e9),
      efficiency(prefix.c_str(), "efficiency", 1.0, "", "data flits / all flits on this dimension's links", 0.01, 1.0),
      packet_bytes(prefix.c_str(), "packet_bytes", 256, "bytes", "payload per packet (counted)", 1u, 1u << 20),
      fabric(prefix.c_str(), "fabric", "packet", "",
             "what joins a Switch dimension's NPUs: packet (ASTRA-sim's store-and-forward switch per link), or a "
             "plane of seed 003 (docs/sipml.md): ocs (SiP-OCS, sys.dim<d>.ocs<g>), ring (SiP-Ring, "
             "sys.dim<d>.ring<g>), flat (Elect-Flat, sys.dim<d>.flat<g>), cluster (Elect-Cluster, "
             "sys.dim<d>.cluster<g>)",
             {"packet", "ocs", "ring", "flat", "cluster"}) {}

ndim::DimSpec DimParams::spec() const {
  ndim::DimSpec s;
  if (!ndim::parse_dim_type(type.get(), s.type))
    throw core::ConfigError(fmt::format("{}.type: '{}' is not a dimension type", prefix, type.get()));
  s.size = npus.get();
  s.links = links.get();
  if (fabric.get() != "packet") {
    if (s.type != ndim::DimType::sw)
      throw core::ConfigError(
          fmt::format("{}.fabric: '{}' is a plane every NPU of the dimension reaches through one "
                      "port: the dimension's type must be Switch, not {}",
                      prefix, fabric.get(), type.get()));
    if (s.links != 1)
      throw core::ConfigError(
          fmt::format("{}.links: {}: the '{}' plane is one port per GPU (its transceivers, switches and NICs are the "
                      "plane's)",
                      prefix, s.links, fabric.get()));
  }
  return s;
}

Dim::Dim(const sc_core::sc_module_name& nm, System& sys, uint32_t d, const DimParams& p) : core::Module(nm, "npu.dim") {
  const ndim::Shape& sh = sys.fabric;
  const ndim::DimSpec& ds = sh.dims()[d];
  const uint32_t n = ds.size;
  // Latency in 1-GHz cycles = ns (rounded to the picosecond by the channel).
  npu::FabricLink::Defaults def{p.GBps.get(), static_cast<uint32_t>(p.latency_ns.get() + 0.5), p.packet_bytes.get(),
                                p.efficiency.get()};
  if (std::abs(p.latency_ns.get() - def.latency_cycles) > 1e-9)
    throw core::ConfigError(
        fmt::format("{}.latency_ns: {} is not a whole number of nanoseconds", p.prefix, p.latency_ns.get()));
  auto add = [&](npu::FabricLink* l) {
    sys.all_links.push_back(l);
    sys.link_dim.push_back(d);
  };
  // A full-duplex link between NPU a's port pa and NPU b's port pb.
  auto join = [&](uint32_t a, uint32_t pa, uint32_t b, uint32_t pb, uint32_t k) {
    links.push_back(std::make_unique<npu::FabricLink>(fmt::format("link{}_{}_{}", a, b, k).c_str(), def, a, pa, b, pb));
    npu::FabricLink& l = *links.back();
    sys.npus[a]->tx(pa).bind(l.a_to_b.in);
    l.a_to_b.out.bind(sys.npus[b]->rx(pb));
    sys.npus[b]->tx(pb).bind(l.b_to_a.in);
    l.b_to_a.out.bind(sys.npus[a]->rx(pa));
    add(&l);
  };
  if (n < 2) return;
  switch (ds.type) {
    case ndim::DimType::ring:
      for (uint32_t a = 0; a < sh.npus(); ++a) {
        const uint32_t b = sh.with(a, d, (sh.coord(a, d) + 1) % n);
        for (uint32_t k = 0; k < ds.links; ++k)
          join(a, sh.port(d, 2 * k), b, sh.port(d, 2 * k + 1), k);  // a's + side, b's - side
      }
      break;
    case ndim::DimType::fully_connected:
      for (uint32_t a = 0; a < sh.npus(); ++a) {
        const uint32_t x = sh.coord(a, d);
        for (uint32_t y = x + 1; y < n; ++y) {
          const uint32_t b = sh.with(a, d, y);
          for (uint32_t k = 0; k < ds.links; ++k) join(a, sh.first_port(a, b, k), b, sh.first_port(b, a, k), k);
        }
      }
      break;
    case ndim::DimType::sw:
      for (uint32_t g = 0; g < sh.npus(); ++g) {
        if (sh.coord(g, d) != 0) continue;  // one switch (per link) per group, named by its lowest NPU
        std::vector<uint32_t> members;
        for (uint32_t x = 0; x < n; ++x) members.push_back(sh.with(g, d, x));
        if (p.fabric.get() != "packet") {
          optical::FabricShape fs;
          fs.npus = members;
          fs.afi_port = sh.port(d, 0);
          fs.gbps = p.GBps.get() * 8 * p.efficiency.get();
          fs.latency_ps = static_cast<uint64_t>(std::llround(p.latency_ns.get() * 1000));
          fs.port_of = [&sh, d](uint32_t dst) { return sh.coord(dst, d); };
          fs.actions = &sys.actions;
          const std::string kind = p.fabric.get(), plane_name = fmt::format("{}{}", kind, g);
          if (kind == "ocs")
            planes.push_back(std::make_unique<optical::OcsFabric>(plane_name.c_str(), std::move(fs)));
          else if (kind == "ring")
            planes.push_back(std::make_unique<optical::RingFabric>(plane_name.c_str(), std::move(fs)));
          else
            planes.push_back(
                std::make_unique<optical::ElectricalFabric>(plane_name.c_str(), std::move(fs), kind == "cluster"));
          optical::Plane& f = *planes.back();
          for (uint32_t x = 0; x < n; ++x) {
            sys.npus[members[x]]->tx(sh.port(d, 0)).bind(f.rx(x));
            f.tx(x).bind(sys.npus[members[x]]->rx(sh.port(d, 0)));
          }
          continue;
        }
        for (uint32_t k = 0; k < ds.links; ++k) {
          switches.push_back(
              std::make_unique<npu::FabricSwitch>(fmt::format("switch{}_{}", g, k).c_str(), sys.actions, members,
                                                  [&sh, d](uint32_t dst) { return sh.switch_port(d, dst); }));
          npu::FabricSwitch& s = *switches.back();
          for (uint32_t x = 0; x < n; ++x) {
            const uint32_t a = members[x], pa = sh.port(d, k);
            links.push_back(std::make_unique<npu::FabricLink>(fmt::format("up{}_{}", a, k).c_str(), def, a, pa, a, x));
            npu::FabricLink& l = *links.back();
            sys.npus[a]->tx(pa).bind(l.a_to_b.in);
            l.a_to_b.out.bind(s.rx(x));
            s.tx(x).bind(l.b_to_a.in);
            l.b_to_a.out.bind(sys.npus[a]->rx(pa));
            add(&l);
          }
        }
      }
      break;
  }
}

Dim::~Dim() {
  core::destroy_newest_first(planes);
  core::destroy_newest_first(links);
  core::destroy_newest_first(switches);
}

System::System(const sc_core::sc_module_name& nm)
    : core::Module(nm, "system"),
      description(this, "description", "", "", "one line describing the platform (printed in the summary)"),
      topology(this, "topology", "torus", "", "topology generator: torus (seed 001's 3-D torus) or ndim",
               {"torus", "ndim"}),
      actions("actions") {
  if (is_torus())
    build_torus();
  else
    build_ndim();
}

System::~System() {
  core::destroy_newest_first(dim);
  core::destroy_newest_first(links);
  aces.clear();
  core::destroy_newest_first(npus);
}

void System::build_npus(uint32_t count, uint32_t ports) {
  const std::string model = choices.ace_model.get();
  for (uint32_t i = 0; i < count; ++i) {
    npu::Npu::Attach attach;
    if (model != "none" && model != "ideal") {
      ace::Ace::DatapathFactory make;
      if (model == "rtl")
        make = [](const std::string& n) { return std::make_unique<ace::RtlDatapath>(n.c_str()); };
      else
        make = [](const std::string&) { return std::make_unique<ace::Datapath>(ace::rtl_geometry()); };
      attach = [this, make, model](npu::Npu& n) -> std::unique_ptr<core::Module> {
        auto a = std::make_unique<ace::Ace>("ace", n.id(), model, make, n.actions());
        n.ace_cmd.bind(a->cmd);
        a->irq.bind(n.ace_irq);
        a->dma.bind(n.memory.dma);
        a->afi_tx.bind(n.from_ace);
        n.to_ace.bind(a->afi_rx);
        aces.push_back(a.get());
        return a;
      };
    }
    npus.push_back(std::make_unique<npu::Npu>(fmt::format("npu{}", i).c_str(), i, ports, actions, attach));
    if (model == "ideal") npus.back()->set_ideal_endpoint();
  }
}

void System::build_torus() {
  local_npus.emplace(this, "local_npus", 4, "NPUs", "NPUs per package (local dimension ring)", 1u, 64u);
  vertical_npus.emplace(this, "vertical_npus", 4, "packages", "packages per vertical ring", 1u, 64u);
  horizontal_npus.emplace(this, "horizontal_npus", 4, "packages", "packages per horizontal ring", 1u, 64u);
  local_rings.emplace(this, "local_rings", 2, "rings",
                      "unidirectional rings in the local dimension (alternating + / -)", 1u, 16u);
  vertical_rings.emplace(this, "vertical_rings", 4, "rings",
                         "unidirectional rings in the vertical dimension (2 bidirectional rings = 4)", 1u, 16u);
  horizontal_rings.emplace(this, "horizontal_rings", 4, "rings",
                           "unidirectional rings in the horizontal dimension (2 bidirectional rings = 4)", 1u, 16u);
  shape.size = {local_npus->get(), vertical_npus->get(), horizontal_npus->get()};
  shape.rings = {local_rings->get(), vertical_rings->get(), horizontal_rings->get()};
  std::vector<ndim::DimSpec> ds;
  for (uint32_t d = 0; d < 3; ++d)
    ds.push_back({ndim::DimType::ring, shape.size[d], std::max(1u, shape.links_per_pair(d))});
  fabric = ndim::Shape(ds);
  for (const auto* impl :
       {&choices.allreduce_implementation, &choices.reducescatter_implementation, &choices.allgather_implementation})
    if (impl->get() != "ring")
      throw core::ConfigError(
          fmt::format("{}: '{}': the torus runs seed 001's ring algorithms (topology ndim has the others)",
                      impl->name(), impl->get()));
  build_npus(shape.npus(), shape.ports());
  const char* prefix[3] = {"llink", "vlink", "hlink"};
  const char* size_key[3] = {"local_npus", "vertical_npus", "horizontal_npus"};
  for (uint32_t d = 0; d < 3; ++d)
    if (shape.links_per_pair(d) == 0)
      core::Context::get().config().note_absent(
          fmt::format("{}.{}", name(), prefix[d]),
          fmt::format("{}.{} is {}: a dimension of one NPU has no {} links", name(), size_key[d], shape.size[d],
                      collectives::dim_name(d)));
  const npu::FabricLink::Defaults defaults[3] = {{200.0, 90, 512}, {25.0, 200, 256}, {25.0, 200, 256}};
  for (uint32_t d = 0; d < 3; ++d) {
    const uint32_t lanes = shape.links_per_pair(d);
    for (uint32_t a = 0; a < shape.npus(); ++a) {
      const uint32_t b = shape.step(a, d, 1);
      for (uint32_t k = 0; k < lanes; ++k) {
        const uint32_t qp = 2 * k, qm = 2 * k + 1;  // the + ring and the - ring on this link
        links.push_back(std::make_unique<npu::FabricLink>(fmt::format("{}{}_{}_{}", prefix[d], a, b, k).c_str(),
                                                          defaults[d], a, shape.port(d, qm), b, shape.port(d, qp)));
        link_dim.push_back(d);
        all_links.push_back(links.back().get());
        npu::FabricLink& l = *links.back();
        npus[a]->tx(shape.port(d, qp)).bind(l.a_to_b.in);
        l.a_to_b.out.bind(npus[b]->rx(shape.port(d, qp)));
        if (qm < shape.rings[d]) {
          npus[b]->tx(shape.port(d, qm)).bind(l.b_to_a.in);
          l.b_to_a.out.bind(npus[a]->rx(shape.port(d, qm)));
        }
      }
    }
  }
}

void System::build_ndim() {
  dims.emplace(this, "dims", 1, "dimensions", "dimensions of the fabric (sys.dim0 .. sys.dim<dims-1>)", 1u, 7u);
  std::vector<ndim::DimSpec> ds;
  for (uint32_t d = 0; d < dims->get(); ++d) {
    dim_params.push_back(std::make_unique<DimParams>(fmt::format("{}.dim{}", name(), d)));
    ds.push_back(dim_params.back()->spec());
  }
  fabric = ndim::Shape(ds);
  // Every algorithm must exist for every dimension it would run on (checked again per collective).
  for (npu::CollectiveKind k : {npu::CollectiveKind::allreduce, npu::CollectiveKind::reducescatter,
                                npu::CollectiveKind::allgather, npu::CollectiveKind::alltoall})
    ndim_options(k);
  build_npus(fabric.npus(), fabric.ports());
  for (auto& n : npus) {
    const uint32_t id = n->id();
    n->set_router([this, id](uint32_t dst, uint32_t in_port) { return fabric.route(id, dst, in_port); });
  }
  for (uint32_t d = 0; d < fabric.ndims(); ++d)
    dim.push_back(std::make_unique<Dim>(fmt::format("dim{}", d).c_str(), *this, d, *dim_params[d]));
}

std::string System::dim_name(uint32_t d) const {
  return is_torus() ? collectives::dim_name(d) : fmt::format("dim{}", d);
}

std::vector<uint32_t> System::parse_group(const std::string& text) const {
  if (is_torus()) return collectives::Communicator::parse_dims(text);
  std::vector<uint32_t> out;
  if (text == "all") {
    for (uint32_t d = 0; d < ndims(); ++d) out.push_back(d);
    return out;
  }
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, text.find('+') != std::string::npos ? '+' : ',')) {
    std::string num = item.rfind("dim", 0) == 0 ? item.substr(3) : item;
    uint32_t d = 0;
    bool ok = !num.empty() && num.size() < 3;
    for (char c : num) ok &= c >= '0' && c <= '9';
    if (ok) d = static_cast<uint32_t>(std::stoul(num));
    if (!ok || d >= ndims())
      throw core::ConfigError(fmt::format("group '{}': '{}' is not a dimension (all, or dim0 .. dim{} joined by '+')",
                                          text, item, ndims() - 1));
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw core::ConfigError(fmt::format("group '{}': dimension '{}' given twice", text, item));
    out.push_back(d);
  }
  if (out.empty()) throw core::ConfigError(fmt::format("group '{}': no dimension", text));
  return out;
}

std::vector<Group> System::partition(const std::vector<uint32_t>& dims_,
                                     std::shared_ptr<const ndim::Shape> logical) const {
  std::vector<Group> out;
  auto add = [&](uint32_t id, uint32_t size, std::string text, const auto& npu_of) {
    Group g;
    g.id = id;
    g.dims = dims_;
    g.text = std::move(text);
    for (uint32_t r = 0; r < size; ++r) g.npus.push_back(npu_of(r));
    out.push_back(std::move(g));
  };
  if (is_torus()) {
    for (const auto& c : collectives::Communicator::partition(shape, dims_))
      add(c.id(), c.size(), c.describe(), [&c](uint32_t r) { return c.npu_of(r); });
  } else {
    for (const auto& c : ndim::Communicator::partition(logical ? *logical : fabric, dims_)) {
      add(c.id(), c.size(), c.describe(), [&c](uint32_t r) { return c.npu_of(r); });
      out.back().shape = logical;
    }
  }
  return out;
}

ndim::PlanOptions System::ndim_options(npu::CollectiveKind kind) const {
  ndim::PlanOptions o;
  o.bandwidth_aware = choices.algorithm.get() == "enhanced";
  o.chunk_bytes = uint64_t(choices.chunk_kib.get()) * 1024;
  o.chunks = choices.chunks.get();
  o.align = choices.align_elems.get();
  const core::Param<std::string>* impl = nullptr;
  switch (kind) {
    case npu::CollectiveKind::allreduce: impl = &choices.allreduce_implementation; break;
    case npu::CollectiveKind::reducescatter: impl = &choices.reducescatter_implementation; break;
    case npu::CollectiveKind::allgather: impl = &choices.allgather_implementation; break;
    case npu::CollectiveKind::alltoall: impl = &choices.alltoall_implementation; break;
    case npu::CollectiveKind::broadcast: return o;
  }
  std::vector<std::string> items;
  std::string item;
  std::stringstream ss(impl->get());
  while (std::getline(ss, item, ',')) items.push_back(item);
  if (items.size() != 1 && items.size() != ndims())
    throw core::ConfigError(
        fmt::format("{}: '{}' names {} algorithms for {} dimensions (give one, or one per dimension)", impl->name(),
                    impl->get(), items.size(), ndims()));
  for (uint32_t d = 0; d < ndims(); ++d) {
    ndim::Algorithm a;
    const std::string& t = items[items.size() == 1 ? 0 : d];
    if (!ndim::parse_algorithm(t, a))
      throw core::ConfigError(fmt::format(
          "{}: '{}' is not an algorithm (ring, direct, halvingDoubling, doubleBinaryTree)", impl->name(), t));
    if (kind == npu::CollectiveKind::alltoall && a != ndim::Algorithm::direct && a != ndim::Algorithm::ring)
      throw core::ConfigError(fmt::format("{}: '{}': all-to-all runs ring or direct in a dimension", impl->name(), t));
    o.algorithms.push_back(a);
  }
  return o;
}

std::vector<std::shared_ptr<const npu::CollectivePlan>> System::plans(const Group& g, npu::CollectiveKind kind,
                                                                      core::Dtype dtype, uint64_t elems,
                                                                      uint32_t root) const {
  std::vector<std::shared_ptr<const npu::CollectivePlan>> out;
  if (is_torus()) {
    collectives::PlanOptions po;
    po.algorithm = choices.algorithm.get();
    po.chunk_bytes = uint64_t(choices.chunk_kib.get()) * 1024;
    po.align = choices.align_elems.get();
    const collectives::Communicator c(shape, g.dims, g.npus[0]);
    for (uint32_t r = 0; r < c.size(); ++r)
      out.push_back(collectives::make_plan(c, kind, dtype, elems, root, po, c.npu_of(r)));
    return out;
  }
  const ndim::PlanOptions po = ndim_options(kind);
  const ndim::Communicator c(g.shape ? *g.shape : fabric, g.dims, g.npus[0]);
  for (uint32_t r = 0; r < c.size(); ++r) out.push_back(ndim::make_plan(c, kind, dtype, elems, root, po, c.npu_of(r)));
  return out;
}

uint64_t System::check(const Group& g, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans_,
                       uint32_t root, uint64_t address,
                       const std::function<void(uint32_t, uint64_t, uint64_t, uint8_t*)>& input,
                       const std::function<void(uint32_t, uint64_t, const uint8_t*, const uint8_t*)>& bad) const {
  std::vector<uint32_t> rank(npus.size(), 0);
  for (uint32_t r = 0; r < g.size(); ++r) rank[g.npus[r]] = r;
  if (plans_.empty()) return 0;
  const uint32_t es = plans_[0]->esize();
  collectives::CheckIo io;
  io.input = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) { input(g.npus[r], e * es, n * es, dst); };
  io.result = [&](uint32_t r, uint64_t e, uint64_t n, uint8_t* dst) {
    npus[g.npus[r]]->memory.read(address + e * es, dst, n * es);
  };
  io.mismatch = [&](uint32_t r, uint64_t e, const uint8_t* want, const uint8_t* got) {
    bad(g.npus[r], e * es, want, got);
  };
  return collectives::check_collective(
      plans_, [&rank](uint32_t npu) { return rank[npu]; }, root, io);
}

std::string System::algorithm_text(npu::CollectiveKind kind) const {
  if (is_torus())
    return kind == npu::CollectiveKind::allreduce ? fmt::format("{} algorithm", choices.algorithm.get()) : "ring";
  if (kind == npu::CollectiveKind::broadcast) return "direct";
  const ndim::PlanOptions o = ndim_options(kind);
  std::string s;
  for (ndim::Algorithm a : o.algorithms) s += (s.empty() ? "" : ",") + std::string(ndim::algorithm_name(a));
  if (kind == npu::CollectiveKind::allreduce) s += fmt::format(" ({})", choices.algorithm.get());
  return s;
}

std::vector<optical::Plane*> System::optical_planes() const {
  std::vector<optical::Plane*> out;
  for (const auto& dm : dim)
    for (const auto& p : dm->planes) out.push_back(p.get());
  return out;
}

bool System::plans_circuits() const {
  for (const optical::Plane* p : optical_planes())
    if (p->configurable()) return true;
  return false;
}

void System::optical_demand(const Group& g, const std::vector<std::shared_ptr<const npu::CollectivePlan>>& plans,
                            double times, std::vector<optical::Demand>& out, uint32_t only) const {
  std::vector<bool> optical_dim(ndims(), false);
  bool any = false;
  for (uint32_t d = 0; d < dim.size(); ++d) {
    optical_dim[d] = !dim[d]->planes.empty() && dim[d]->planes[0]->configurable();
    any |= optical_dim[d];
  }
  if (!any) return;
  for (uint32_t r = 0; r < g.size() && r < plans.size(); ++r) {
    if (only != UINT32_MAX && r != only) continue;
    const npu::CollectivePlan& plan = *plans[r];
    const uint32_t npu = g.npus[r];
    std::map<uint32_t, uint64_t> elems;  // next NPU -> elements sent to it over an optical plane
    for (uint32_t c = 0; c < plan.chunks(); ++c) {
      const auto chunk = plan.chunk(c);
      for (uint32_t p = 0; p < plan.phases(); ++p)
        for (uint32_t q = 0; q < plan.rings(p); ++q) {
          const npu::RingRole role = plan.ring(p, q);
          if (!role.active()) continue;
          uint32_t d = 0, local = 0;
          fabric.port_dim(role.port, d, local);
          if (!optical_dim[d]) continue;
          uint64_t e = role.sends_first ? chunk->first_send_elems(p, q) : 0;
          for (uint32_t t = 0; t < role.receives; ++t) {
            const npu::Step st = chunk->shape(p, q, t);
            if (st.forward) e += (st.forward_local ? st.elems : 0) + st.passthrough;
          }
          if (e) elems[role.next] += e;
        }
    }
    for (const auto& [next, e] : elems) out.push_back({npu, next, static_cast<double>(e) * plan.esize() * times});
  }
}

namespace {

/// Each GPU's `degree` largest demands out, then in (the others wait for a
/// later configuration of a dynamic plane); the pairs in `first` (messages
/// waiting) before any other.
std::vector<optical::Demand> within_degree(std::vector<optical::Demand> tm, uint32_t degree,
                                           const std::set<std::pair<uint32_t, uint32_t>>& first = {}) {
  std::stable_sort(tm.begin(), tm.end(), [&](const optical::Demand& a, const optical::Demand& b) {
    const bool fa = first.count({a.src, a.dst}) > 0, fb = first.count({b.src, b.dst}) > 0;
    if (fa != fb) return fa;
    return a.bytes != b.bytes ? a.bytes > b.bytes : std::make_pair(a.src, a.dst) < std::make_pair(b.src, b.dst);
  });
  std::map<uint32_t, uint32_t> out, in;
  std::vector<optical::Demand> kept;
  for (const optical::Demand& x : tm)
    if (out[x.src] < degree && in[x.dst] < degree) {
      ++out[x.src];
      ++in[x.dst];
      kept.push_back(x);
    }
  return kept;
}

/// Plan `tm` (bytes by port pair) with sw/optical, check it with sw/optical's
/// checker and install it (the plane checks it again). The planner's
/// refusals come out as std::invalid_argument; an illegal plan is a logic error.
void plan_plane(optical::CircuitFabric& plane, const std::vector<optical::Demand>& tm) {
  const uint32_t n = plane.ports();
  std::vector<std::string> bad;
  if (auto* ocs = dynamic_cast<optical::OcsFabric*>(&plane)) {
    // a re-plan keeps the circuits it can on their switches (they carry on through it)
    const optical::OcsConfig cfg =
        optical::ocs_one_shot(n, ocs->degree(), tm, plane.configured() ? &ocs->config() : nullptr);
    bad = optical::check_ocs(cfg, tm);
    if (bad.empty()) bad = ocs->install(cfg);
  } else {
    auto& ring = dynamic_cast<optical::RingFabric&>(plane);
    // a re-plan keeps the lightpaths it can on their wavelengths (they carry on through the retuning)
    std::vector<optical::Lightpath> paths = optical::ring_plan(ring.spec(), tm);
    if (plane.configured())
      paths = optical::keep_wavelengths(std::move(paths), ring.lightpaths(), ring.spec().wavelengths);
    bad = optical::check_ring(ring.spec(), paths);
    std::set<std::pair<uint32_t, uint32_t>> lit;
    for (const auto& l : paths) lit.emplace(l.src, l.dst);
    for (const optical::Demand& x : tm)
      if (bad.empty() && !lit.count({x.src, x.dst}))
        bad.push_back(fmt::format("no lightpath from GPU {} to GPU {}", x.src, x.dst));
    if (bad.empty()) bad = ring.install(paths);
  }
  if (!bad.empty())
    throw std::logic_error(fmt::format("{}: the control plane's configuration is illegal: {}{}", plane.name(),
                                       bad.front(),
                                       bad.size() > 1 ? fmt::format(" (and {} more)", bad.size() - 1) : std::string()));
}

/// Port-pair demand as the planners take it (pairs without bytes left out).
std::vector<optical::Demand> demand_list(const std::map<std::pair<uint32_t, uint32_t>, double>& pairs) {
  std::vector<optical::Demand> tm;
  for (const auto& [pq, b] : pairs)
    if (b > 0) tm.push_back({pq.first, pq.second, b});
  return tm;
}

}  // namespace

void System::add_plane_demand(uint32_t d, const optical::Plane& plane, const std::vector<optical::Demand>& demand,
                              std::map<std::pair<uint32_t, uint32_t>, double>& pairs) const {
  const uint32_t first = plane.shape().npus.front();
  for (const optical::Demand& x : demand)
    if (fabric.with(x.src, d, 0) == first && fabric.with(x.dst, d, 0) == first && x.src != x.dst)
      pairs[{fabric.coord(x.src, d), fabric.coord(x.dst, d)}] += x.bytes;
}

bool System::replan(optical::CircuitFabric& p, uint32_t d, uint32_t degree,
                    const std::vector<optical::Demand>& measured, uint64_t& seen) {
  std::map<std::pair<uint32_t, uint32_t>, double> serve;  // (port, port) -> bytes
  std::set<std::pair<uint32_t, uint32_t>> waiting;        // planning from the schedule: pairs with messages queued
  bool going = false;
  if (p.plans_ahead()) {
    std::vector<optical::Demand> ahead;
    const Progress now = m_forecast(p.horizon_ps(), ahead);
    going = now.computing || now.finished != seen;
    seen = now.finished;
    add_plane_demand(d, p, ahead, serve);
    // A pair moves at most its GPU's bandwidth over the horizon before the next plan takes over: bytes beyond
    // that (a long collective's whole volume) say nothing about this period's share.
    const double cap = p.shape().gbps / 8 * static_cast<double>(p.horizon_ps()) / 1e3;  // bytes/ns x ns
    for (auto& entry : serve) entry.second = std::min(entry.second, cap);
    // What waits is served first (else a GPU with more pairs ahead than its degree could starve it for good).
    for (const optical::Demand& x : measured) waiting.emplace(x.src, x.dst);
  }
  for (const optical::Demand& x : measured) serve[{x.src, x.dst}] += x.bytes;
  if (serve.empty()) return going;  // nothing to serve: the circuits stay
  try {
    plan_plane(p, within_degree(demand_list(serve), degree, waiting));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: re-planning for the traffic of the {} failed: {}", p.name(),
                                         p.plans_ahead() ? "next period" : "last period", e.what()));
  }
  return going;
}

void System::configure_optical(const std::vector<optical::Demand>& demand) {
  for (uint32_t d = 0; d < dim.size(); ++d) {
    for (const auto& owned : dim[d]->planes) {
      auto* plane = dynamic_cast<optical::CircuitFabric*>(owned.get());
      if (!plane) continue;
      std::map<std::pair<uint32_t, uint32_t>, double> pairs;  // (port, port) -> bytes
      add_plane_demand(d, *plane, demand, pairs);
      const std::vector<optical::Demand> tm = demand_list(pairs);
      auto* ocs = dynamic_cast<optical::OcsFabric*>(plane);
      const uint32_t degree = ocs ? ocs->degree() : dynamic_cast<optical::RingFabric*>(plane)->degree.get();
      try {
        // A dynamic plane starts from the plan for the whole run's traffic, within the degree.
        plan_plane(*plane, plane->dynamic() ? within_degree(tm, degree) : tm);
      } catch (const std::invalid_argument& e) {
        throw core::ConfigError(
            ocs ? fmt::format("{}: the run's traffic cannot be served by {} circuit switches: {}", plane->name(),
                              ocs->degree(), e.what())
                : fmt::format("{}: the run's traffic cannot be served by the ring: {}", plane->name(), e.what()));
      }
      if (!plane->dynamic()) {
        if (plane->plans_ahead())
          throw core::ConfigError(
              fmt::format("{}.estimate: schedule is what a dynamic plane re-plans for ({}.schedule is one_shot)",
                          plane->name(), plane->name()));
        continue;
      }
      if (plane->plans_ahead() && !m_forecast)
        throw core::ConfigError(
            fmt::format("{}.estimate: schedule reads the job's schedule ahead; a single collective has none (a "
                        "training workload, an op graph or a Chakra trace has one: --workload FILE)",
                        plane->name()));
      plane->set_planner([this, d, degree, seen = uint64_t(0)](optical::CircuitFabric& p,
                                                               const std::vector<optical::Demand>& measured) mutable {
        return replan(p, d, degree, measured, seen);
      });
    }
  }
}

}  // namespace fabricvp::npusys
