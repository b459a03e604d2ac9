#include "systems/pspin/flare.h"
#include "systems/spawn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include <dlfcn.h>

#include "models/core/context.h"
#include "models/core/dtype.h"
#include "models/core/output_file.h"
#include "systems/pspin/scenario.h"

namespace fabricvp::pspin {

namespace fs = std::filesystem;

namespace {
constexpr uint8_t kInt32 = 0, kFp32 = 1, kFp16 = 2, kBf16 = 3;  // flare.h FLARE_INT32 ...
constexpr uint8_t kSum = 0, kMin = 1, kMax = 2, kUser = 3;

using flare::combine;

// A block's packets as pairs (offsets in its range), by packet number.
using Packets = std::vector<std::vector<flare::Pair>>;

// The sparse kernel's store of one block (sw/handlers/flare/sparse.c, flare.h
// flare_sparse_slot_t), replayed: the same slots, probing, fill limits and
// emission order, so that the reference knows which pairs each packet the
// switch sent held, and the order every element was combined in.
class SparseStore {
 public:
  SparseStore(const flare::Job& job, uint32_t format, uint32_t span, uint32_t entries)
      : m_job(job), m_format(format), m_span(span), m_n(entries) {
    if (format == 0) {
      m_val.assign(span, 0);
      m_has.assign(span, 0);
    } else if (format == 1) {
      m_key.assign(entries, 0);
      m_val.assign(entries, 0);
      m_shift = 32 - static_cast<uint32_t>(__builtin_ctz(entries));
    } else {
      m_dir.assign(span / 32, 0);
      m_val.assign(size_t(entries) * 33, 0);
    }
  }
  uint64_t flushes = 0;

  void put(uint32_t off, uint32_t v, Packets& out) {
    if (off >= m_span) return;  // the kernel skips it too
    if (m_format == 0) {
      if (m_has[off]) {
        m_val[off] = combine(m_job, m_val[off], v);
      } else {
        m_val[off] = v;
        m_has[off] = 1;
      }
    } else if (m_format == 1) {
      uint32_t j = (off * 2654435761u) >> m_shift;
      while (m_key[j] && m_key[j] != off + 1) j = (j + 1) & (m_n - 1);
      if (m_key[j]) {
        m_val[j] = combine(m_job, m_val[j], v);
        return;
      }
      if (m_used == m_n - m_n / 4) {
        flush(out);
        j = (off * 2654435761u) >> m_shift;
      }
      m_key[j] = off + 1;
      m_val[j] = v;
      ++m_used;
    } else {
      const uint32_t c = off >> 5, bit = off & 31;
      if (!m_dir[c]) {
        if (m_used == m_n) flush(out);
        m_dir[c] = ++m_used;
        m_val[size_t(m_used - 1) * 33] = 0;
      }
      uint32_t* ch = &m_val[size_t(m_dir[c] - 1) * 33];
      if (ch[0] >> bit & 1) {
        ch[1 + bit] = combine(m_job, ch[1 + bit], v);
      } else {
        ch[1 + bit] = v;
        ch[0] |= 1u << bit;
      }
    }
  }
  /// The block is complete: the rest of its pairs, the last packet even if empty.
  void finish(Packets& out) { emit(out, true); }

 private:
  void flush(Packets& out) {
    ++flushes;
    emit(out, false);
  }
  void emit(Packets& out, bool last) {
    std::vector<flare::Pair> all;
    if (m_format == 0) {
      for (uint32_t off = 0; off < m_span; ++off)
        if (m_has[off]) {
          all.push_back({off, m_val[off]});
          m_has[off] = 0;
        }
    } else if (m_format == 1) {
      for (uint32_t j = 0; j < m_n; ++j)
        if (m_key[j]) {
          all.push_back({m_key[j] - 1, m_val[j]});
          m_key[j] = 0;
        }
    } else {
      for (uint32_t c = 0; c < m_span / 32; ++c) {
        if (!m_dir[c]) continue;
        const uint32_t* ch = &m_val[size_t(m_dir[c] - 1) * 33];
        for (uint32_t bit = 0; bit < 32; ++bit)
          if (ch[0] >> bit & 1) all.push_back({c * 32 + bit, ch[1 + bit]});
        m_dir[c] = 0;
      }
    }
    m_used = 0;
    for (size_t k = 0; k < all.size(); k += flare::kSparsePairs)
      out.emplace_back(all.begin() + k, all.begin() + std::min(all.size(), k + flare::kSparsePairs));
    if (last && all.empty()) out.emplace_back();
  }
  const flare::Job& m_job;
  uint32_t m_format, m_span, m_n, m_shift = 0, m_used = 0;
  std::vector<uint32_t> m_val, m_key;
  std::vector<uint8_t> m_has;
  std::vector<uint16_t> m_dir;
};
}  // namespace

FlareSystem::FlareSystem(const sc_core::sc_module_name& nm)
    : core::Module(nm, "flare.system"),
      topology(this, "topology", "flare", "", "hosts on PsPIN switches running an in-network allreduce (Flare)",
               {"flare"}),
      hosts(this, "hosts", 8, "hosts", "hosts (one per host port)", 2u, 4096u),
      leaves(this, "leaves", 0, "switches",
             "0: one switch (switch0) with a host on each port; else a 2-level fat tree of this many leaf switches "
             "(leaf<l>: hosts / leaves hosts, then an uplink to each spine) under `spines` spines (spine<s>: leaf l "
             "on port l)",
             0u, 256u),
      spines(this, "spines", 1, "switches", "spine switches of the fat tree (block b aggregates at spine b mod spines)",
             1u, 64u),
      link_latency_ns(this, "link_latency_ns", 500.0, "ns",
                      "latency of each link (each direction), after serialization", 0.0, 1e9),
      host_actions("host_actions") {
  const uint32_t n = hosts.get(), L = leaves.get(), S = spines.get();
  auto ports_must_be = [](const Switch& sw, uint32_t want, const std::string& why) {
    if (sw.ports.get() != want)
      throw core::ConfigError(fmt::format("{}{}.ports is {}; it must be {} ({})",
                                          sw.ports.source() ? sw.ports.source()->origin.str() + ": " : "", sw.name(),
                                          sw.ports.get(), want, why));
  };
  if (!fat_tree()) {
    switches.push_back(std::make_unique<Switch>("switch0"));
    ports_must_be(*switches[0], n, fmt::format("a Flare switch has one port per host: {}.hosts", name()));
  } else {
    if (n % L)
      throw core::ConfigError(fmt::format("{}.hosts = {}: not a multiple of {}.leaves = {}", name(), n, name(), L));
    const uint32_t H = n / L;
    for (uint32_t l = 0; l < L; ++l) {
      switches.push_back(std::make_unique<Switch>(fmt::format("leaf{}", l).c_str()));
      ports_must_be(*switches.back(), H + S, fmt::format("{} hosts, then an uplink to each of {} spines", H, S));
    }
    for (uint32_t s = 0; s < S; ++s) {
      switches.push_back(std::make_unique<Switch>(fmt::format("spine{}", s).c_str()));
      ports_must_be(*switches.back(), L, fmt::format("one per leaf: {}.leaves", name()));
    }
  }
  const uint32_t H = hosts_per_leaf();
  for (uint32_t h = 0; h < n; ++h) {
    Switch& sw = *switches[h / H];
    host.push_back(std::make_unique<flare::Host>(fmt::format("host{}", h).c_str(), h, h % H, sw.port_Gbps.get(),
                                                 link_latency_ns.get(), host_actions,
                                                 [&sw](Packet p) { sw.inject(std::move(p)); }));
  }
  for (uint32_t i = 0; i < switches.size(); ++i) {
    Switch& sw = *switches[i];
    if (!fat_tree()) {
      sw.set_egress_sink([this](EgressPacket&& p) { host[p.port]->deliver(std::move(p)); });
    } else if (i < L) {  // a leaf: its hosts, then the spines
      sw.set_egress_sink([this, i, H, L, &sw](EgressPacket&& p) {
        if (p.port < H)
          host[i * H + p.port]->deliver(std::move(p));
        else
          to_switch(sw, *switches[L + p.port - H], i, std::move(p));
      });
    } else {  // a spine: leaf l on port l, arriving on the leaf's uplink to this spine
      sw.set_egress_sink(
          [this, i, H, L, &sw](EgressPacket&& p) { to_switch(sw, *switches[p.port], H + (i - L), std::move(p)); });
    }
  }
}

void FlareSystem::to_switch(const Switch& from, Switch& to, uint32_t port, EgressPacket&& e) {
  // Its first bit left `from` one serialization before its last, and arrives a link latency later.
  const double rate = from.egress_Gbps.get() > 0 ? from.egress_Gbps.get() : from.port_Gbps.get();
  const uint64_t ser = static_cast<uint64_t>(std::ceil(e.bytes.size() * 8.0 / rate * 1000.0));
  Packet p;
  p.port = port;
  p.offered_ps = e.time_ps - ser + static_cast<uint64_t>(std::llround(link_latency_ns.get() * 1000.0));
  if (e.bytes.size() >= flare::kHeaderBytes) std::memcpy(&p.msg, &e.bytes[32], 4);  // the block: its home cluster
  p.index = port;
  p.bytes = std::move(e.bytes);
  to.inject(std::move(p));
}

uint32_t FlareSystem::fan_in(uint32_t i) const {
  return fat_tree() && i >= leaves.get() ? leaves.get() : hosts_per_leaf();
}

uint32_t FlareScenario::buffer_bytes(uint32_t i) const {
  return m_sparse  ? flare::sparse_slot_bytes(m_sys->sparse_format, m_sys->span, m_sys->entries)
         : m_tree  ? flare::tree_slot_bytes(m_sys->fan_in(i))
         : m_multi ? flare::multi_slot_bytes(m_params.buffers.get())
                   : flare::kSlotBytes;
}

std::vector<uint32_t> FlareSystem::switch_config(uint32_t i) const {
  // flare_switch_t: role, index, down, spines, leaves, buffers, format, span, entries
  if (!fat_tree()) return {0, 0, hosts.get(), 0, 0, buffers, sparse_format, span, entries};
  if (i < leaves.get())
    return {1, i, hosts_per_leaf(), spines.get(), leaves.get(), buffers, sparse_format, span, entries};
  return {2, i - leaves.get(), hosts_per_leaf(), spines.get(), leaves.get(), buffers, sparse_format, span, entries};
}

FlareScenario::FlareScenario() : m_sys(std::make_unique<FlareSystem>("sys")) {}

FlareScenario::~FlareScenario() {
  if (m_operator) dlclose(m_operator);
}

std::string FlareScenario::headline() const {
  const Switch& s = *m_sys->switches[0];
  if (!m_sys->fat_tree())
    return fmt::format("Flare: {} hosts on a PsPIN switch of {} clusters x {} cores, {:.0f} Gbit/s ports",
                       m_sys->host.size(), s.nclusters(), s.ncores(), s.port_Gbps.get());
  return fmt::format(
      "Flare: {} hosts under a fat tree of {} leaves ({} hosts each) and {} spine(s), PsPIN switches of "
      "{} clusters x {} cores, {:.0f} Gbit/s ports",
      m_sys->host.size(), m_sys->leaves.get(), m_sys->hosts_per_leaf(), m_sys->spines.get(), s.nclusters(), s.ncores(),
      s.port_Gbps.get());
}

std::string FlareScenario::description() const {
  if (m_training)
    return fmt::format(
        "training workload {} ({}, {}), {}all-reduces by {} of {}", m_workload, core::dtype_name(m_dtype),
        m_params.op.get(),
        m_sparse ? fmt::format("sparse ({:g} % nonzero, blocks of {} elements) ", m_density * 100, m_sys->span)
                 : std::string(),
        m_handler_name, m_handler_file);
  if (m_sparse)
    return fmt::format(
        "sparse allreduce ({}, {}) of {} elements per host, {:g} % nonzero, blocks of {} elements, "
        "handler {} of {}",
        core::dtype_name(m_dtype), m_params.op.get(), m_job.elems, m_density * 100, m_sys->span, m_handler_name,
        m_handler_file);
  return fmt::format("allreduce ({}, {}) of {} bytes per host in {}-byte blocks, handler {} of {}",
                     core::dtype_name(m_dtype), m_params.op.get(), m_job.elems * m_job.esize,
                     m_params.block_bytes.get(), m_handler_name, m_handler_file);
}

void FlareScenario::prepare(const systems::RunOptions& opt) {
  for (const char* option : {"src", "dst", "group", "collective", "programs"})
    opt.refuse(option, "a Flare platform runs one allreduce of --bytes over all its hosts (docs/flare.md)");
  // --workload FILE: a training workload whose all-reduces the hosts run (FlareTraining)
  const bool training =
      opt.workload != "allreduce" && (fs::exists(opt.workload) || opt.workload.find('.') != std::string::npos ||
                                      opt.workload.find('/') != std::string::npos);
  if (opt.workload != "allreduce" && !training)
    throw core::ConfigError(fmt::format(
        "--workload {}: a Flare platform runs an allreduce in the switch, or a training workload file", opt.workload));
  if (training) {
    opt.refuse("bytes", "a training workload's all-reduce sizes come from its file");
  } else if (opt.kind_options.count("iterations")) {
    throw core::ConfigError("--iterations: only a training workload (--workload FILE) has iterations");
  }
  m_workload = training ? opt.workload : std::string();
  m_out_dir = opt.out_dir;
  m_seed = opt.seed;
  m_dtype = opt.reduction_dtype();
  const uint32_t esize = core::dtype_bytes(m_dtype);
  const uint64_t bytes = opt.bytes ? opt.bytes : uint64_t(1) << 20;
  if (bytes % esize)
    throw core::ConfigError(fmt::format("--bytes {}: not a whole number of {}-byte elements", bytes, esize));
  if (m_params.block_bytes.get() % esize)
    throw core::ConfigError(
        fmt::format("flare.block_bytes {}: not a whole number of {}-byte elements", m_params.block_bytes.get(), esize));
  m_job.reduction = 1;
  m_job.hosts = static_cast<uint32_t>(m_sys->host.size());
  m_job.dtype = m_dtype == core::Dtype::int32  ? kInt32
                : m_dtype == core::Dtype::fp32 ? kFp32
                : m_dtype == core::Dtype::fp16 ? kFp16
                                               : kBf16;
  const std::string& op = m_params.op.get();
  m_job.op = op == "sum" ? kSum : op == "min" ? kMin : op == "max" ? kMax : kUser;
  auto operator_file = opt.kind_options.find("operator");
  if (operator_file != opt.kind_options.end() && m_job.op != kUser)
    throw core::ConfigError(fmt::format("--operator {}: also give -p flare.op=user", operator_file->second));
  if (m_job.op == kUser && operator_file == opt.kind_options.end())
    throw core::ConfigError("flare.op user: give the operator with --operator FILE.c (docs/flare.md)");
  if (m_job.op == kUser && esize != 4)
    throw core::ConfigError(
        fmt::format("--dtype {}: a user operator takes 32-bit elements (int32, fp32)", core::dtype_name(m_dtype)));
  m_job.esize = esize;
  m_job.elems = bytes / esize;
  m_job.block_elems = m_params.block_bytes.get() / esize;
  m_job.window = m_params.window.get();
  m_job.stagger = m_params.stagger.get();
  if (m_job.blocks() >= flare::kPeerMessage)
    throw core::ConfigError(fmt::format("--bytes {}: more than 2^31 blocks (PsPIN message ids)", bytes));

  m_tree = m_params.algorithm.get() == "tree";
  m_ring = m_params.algorithm.get() == "ring";
  m_multi = m_params.algorithm.get() == "multiple";
  m_job.ring = m_ring;
  if (const std::string why = m_ring && m_workload.empty() ? flare::host_based_limits(m_job) : std::string();
      !why.empty())
    throw core::ConfigError(fmt::format("flare.algorithm ring: {}", why));
  m_sys->buffers = m_multi ? m_params.buffers.get() : 1;
  // Settings the chosen variant never reads are refused, not dropped.
  const std::string& alg = m_params.algorithm.get();
  if (m_params.buffers.source() && !m_multi)
    throw core::ConfigError(fmt::format("flare.buffers: only with flare.algorithm=multiple (not {})", alg));
  auto sparse = opt.kind_options.find("sparse");
  m_sparse = m_job.sparse = sparse != opt.kind_options.end();
  if (m_sparse) {
    size_t used = 0;
    try {
      m_density = std::stod(sparse->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != sparse->second.size() || !(m_density > 0 && m_density <= 1) ||
        sparse->second.find_first_not_of("0123456789.eE+-") != std::string::npos)  // no hex, no white space
      throw core::ConfigError(fmt::format(
          "--sparse '{}': expected the share of each host's elements that are nonzero, 0 < D <= 1", sparse->second));
    if (m_params.algorithm.get() != "single")
      throw core::ConfigError(
          fmt::format("flare.algorithm {}: with --sparse the blocks are reduced by the sparse "
                      "kernel (flare/sparse.c); leave flare.algorithm at single",
                      m_params.algorithm.get()));
    if (m_params.block_bytes.source())
      throw core::ConfigError("flare.block_bytes: dense blocks only; a sparse block is flare.span elements");
    const std::string& f = m_params.sparse_format.get();
    m_sys->sparse_format = f == "array" ? 0 : f == "hash" ? 1 : 2;
    if (m_sys->sparse_format == 0 && m_params.entries.source())
      throw core::ConfigError(
          "flare.entries: the array store holds a value per element of the block's span; "
          "entries are for sparse_format hash or twolevel");
    m_sys->span = m_params.span.get();
    m_sys->entries = m_params.entries.get()      ? m_params.entries.get()
                     : m_sys->sparse_format == 1 ? 512
                                                 : std::max(1u, m_sys->span / 128);
    if (m_sys->entries < 8 && m_sys->sparse_format == 1)
      throw core::ConfigError(fmt::format("flare.entries {}: a hash table of at least 8", m_sys->entries));
    if (m_sys->span % 32)
      throw core::ConfigError(fmt::format("flare.span {}: not a multiple of 32 elements", m_sys->span));
    if (m_sys->sparse_format == 1 && (m_sys->entries & (m_sys->entries - 1)))
      throw core::ConfigError(fmt::format("flare.entries {}: the hash table takes a power of 2", m_sys->entries));
    if (!training && m_job.elems > UINT32_MAX)
      throw core::ConfigError(fmt::format("--bytes {}: a sparse vector has at most 2^32 elements", bytes));
    // A switch numbers the packets it sends for a block in 15 bits: at most one per flush (a flush sends at least a
    // full store's pairs) plus one per 128 pairs, from at most (hosts under it) x span pairs in.
    const uint64_t in = uint64_t(m_sys->hosts.get()) * m_sys->span;
    const uint64_t fill = m_sys->sparse_format == 1 ? m_sys->entries - m_sys->entries / 4 : m_sys->entries;
    const uint64_t worst = (m_sys->sparse_format == 0 ? 0 : in / fill) + in / 128 + 1;
    if (worst >= 0x8000)
      throw core::ConfigError(fmt::format(
          "flare.span {} with flare.sparse_format {} of {} entries: a switch could send up to {} packets for one "
          "block (its {} hosts' pairs, flushed {} at a time), more than the 32767 its packet numbers count; lower "
          "flare.span or raise flare.entries",
          m_sys->span, f, m_sys->entries, worst, m_sys->hosts.get(), fill));
    m_job.block_elems = m_sys->span;
  } else {
    for (const core::ParamBase* p :
         std::initializer_list<const core::ParamBase*>{&m_params.sparse_format, &m_params.span, &m_params.entries})
      if (p->source()) throw core::ConfigError(fmt::format("{}: only with --sparse D (sparse vectors)", p->name()));
  }
  m_job.fan_in = m_sys->hosts_per_leaf();
  // Switch memory: the blocks open at once (up to 2 windows: a host may start
  // the next group while the last one is answered) need a buffer each, at
  // every switch.
  for (uint32_t i = 0; i < m_sys->switches.size(); ++i) {
    const Switch& s = *m_sys->switches[i];
    const Switch& first = *m_sys->switches[0];
    if (s.nclusters() != first.nclusters() || s.isa.get() != first.isa.get())
      throw core::ConfigError(fmt::format("{}: {} clusters, isa {}; {} has {}, {}: the switches run one handler file",
                                          s.name(), s.nclusters(), s.isa.get(), first.name(), first.nclusters(),
                                          first.isa.get()));
    const uint32_t slot_bytes = buffer_bytes(i);
    const uint64_t slots = uint64_t(s.nclusters()) * (s.scratchpad_KiB.get() * 1024u / slot_bytes);
    // Sparse blocks are larger: unless given, the window is what the switch's scratchpads hold.
    if (m_sparse && !m_params.window.source() && slots >= 2)
      m_job.window = static_cast<uint32_t>(std::min<uint64_t>(m_job.window, slots / 2));
    if (!m_ring && 2 * uint64_t(m_job.window) > slots)
      throw core::ConfigError(fmt::format(
          "flare.window {}: up to {} blocks are open at once, {} holds {} block buffers ({} clusters x {} KiB "
          "of scratchpad / {} B): lower the window or raise {}.scratchpad_KiB",
          m_job.window, 2 * m_job.window, s.name(), slots, s.nclusters(), s.scratchpad_KiB.get(), slot_bytes,
          s.name()));
  }
  std::vector<std::string> extra;
  std::vector<std::string> defines;
  // The user's operator, before the training run copies the job.
  if (m_job.op == kUser) {
    const std::string& file = operator_file->second;
    if (!fs::is_regular_file(file))
      throw core::ConfigError(fmt::format("--operator {}: {}", file, fs::exists(file) ? "not a file" : "no such file"));
    // The path goes into a shell command and an #include line (C11 would read a trigraph in it).
    if (file.find_first_of("'\"\n\\") != std::string::npos || file.find("??") != std::string::npos)
      throw core::ConfigError(
          fmt::format("--operator {}: a path with a quote, a backslash, a line break or '\?\?' (rename or move the "
                      "file)",
                      file));
    extra.push_back(file);
    defines = {"-DFLARE_USER_OP"};
    // The host reference runs the same C function, compiled for this machine, after the declaration the
    // kernels call it by: a variable or another signature does not compile.
    fs::create_directories(m_out_dir);
    const std::string so = (fs::path(m_out_dir) / "operator.so").string();
    const std::string typed = (fs::path(m_out_dir) / "operator_host.c").string();
    {
      core::OutputFile f(typed, "the operator's host build");
      f.stream() << "#include <stdint.h>\nuint32_t flare_user_op(uint32_t acc, uint32_t in);\n#include \""
                 << fs::absolute(file).string() << "\"\n";
      f.close();
    }
    int st = 0;
    const std::string msg = systems::run_capture({FABRICVP_HOST_CC, "-x", "c", "-std=c11", "-O2", "-ffp-contract=off",
                                                  "-shared", "-fPIC", "-o", path_arg(so), path_arg(typed)},
                                                 st);
    if (st == systems::kCannotStart) throw core::ConfigError(fmt::format("--operator {}: {}", file, msg));
    if (st != 0) throw core::ConfigError(fmt::format("--operator {}: does not compile for the host:\n{}", file, msg));
    m_operator = dlopen(fs::absolute(so).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m_operator) throw core::ConfigError(fmt::format("--operator {}: {}", file, dlerror()));
    void* fn = dlsym(m_operator, "flare_user_op");
    if (!fn)
      throw core::ConfigError(
          fmt::format("--operator {}: no function uint32_t flare_user_op(uint32_t acc, uint32_t in)", file));
    m_job.user_op = reinterpret_cast<uint32_t (*)(uint32_t, uint32_t)>(fn);
  }
  // The training run takes the job as it is now (the sparse window above).
  if (training) {
    uint32_t iterations = 1;
    if (auto it = opt.kind_options.find("iterations"); it != opt.kind_options.end()) {
      const std::string& v = it->second;
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6 || std::stoul(v) == 0)
        throw core::ConfigError(fmt::format("--iterations '{}': expected a whole number >= 1", v));
      iterations = static_cast<uint32_t>(std::stoul(v));
    }
    m_training = std::make_unique<FlareTraining>(*m_sys, m_job, opt.workload, iterations, m_dtype, m_seed,
                                                 m_sparse ? m_density : 1.0,
                                                 m_params.block_bytes.get() / core::dtype_bytes(m_dtype));
  }
  // Each switch logs 2 bytes per contribution per block (dense), 8 per packet applied (sparse).
  for (uint32_t i = 0; i < m_sys->switches.size(); ++i) {
    const Switch& s = *m_sys->switches[i];
    const uint32_t fan_in = m_sys->fan_in(i);
    // A sparse training run's switches log 8 bytes per packet they apply: their hosts' packets, expected at the
    // density (a single allreduce's are counted exactly at load()).
    if (m_training && m_sparse && i < (m_sys->fat_tree() ? m_sys->leaves.get() : 1u)) {
      const double log = 8 * m_training->sparse_packets_per_host() * m_sys->hosts_per_leaf();
      if (log > static_cast<double>(s.host_mem_MiB.get() << 20))
        throw core::ConfigError(fmt::format(
            "--sparse {:g}: {}'s order log (about {:.0f} B: 8 per packet applied, every sparse all-reduce of the "
            "run from its {} hosts) does not fit {}.host_mem_MiB ({} MiB)",
            m_density, s.name(), log, m_sys->hosts_per_leaf(), s.name(), s.host_mem_MiB.get()));
    }
    const uint64_t log_bytes = (m_training ? m_training->total_blocks() : m_job.blocks()) * fan_in * 2;
    if (!m_ring && !m_sparse && log_bytes > s.host_mem_MiB.get() << 20)
      throw core::ConfigError(fmt::format(
          "{}: the order log ({} B: 2 per contribution per block) does not fit {}.host_mem_MiB ({} MiB)",
          m_training ? fmt::format("{}: {} blocks of all-reduce in the run", opt.workload, m_training->total_blocks())
                     : fmt::format("--bytes {}", bytes),
          log_bytes, s.name(), s.host_mem_MiB.get()));
  }
  const Switch& s = *m_sys->switches[0];

  auto it = opt.kind_options.find("handlers");
  m_handler_file = it != opt.kind_options.end() ? it->second
                                                : std::string(FABRICVP_HANDLER_DIR) + (m_ring     ? "/flare/forward.c"
                                                                                       : m_sparse ? "/flare/sparse.c"
                                                                                       : m_tree   ? "/flare/tree.c"
                                                                                       : m_multi  ? "/flare/multiple.c"
                                                                                                  : "/flare/dense.c");
  if (!fs::exists(m_handler_file)) throw core::ConfigError(fmt::format("--handlers {}: no such file", m_handler_file));
  m_image = handler_image(m_handler_file, m_out_dir, s, extra, defines);
  // The aggregation kernels' tau: their blocks, not the host-to-host packets they forward.
  if (!m_ring)
    for (const auto& sw : m_sys->switches) sw->leave_out_of_handler_stats(flare::kPeerMessage);
  auto ph = opt.kind_options.find("ph");
  find_handler(m_image, ph != opt.kind_options.end() ? ph->second : "", "ph", "_ph", true, m_handler_name);
}

uint64_t FlareScenario::host_bytes(std::string& what) const {
  // Inputs and results of every host, and the packets in flight.
  const uint64_t v = m_job.elems * m_job.esize;
  if (m_training) {            // every all-reduce's inputs and results at every host, kept for the check
    double per_iteration = 0;  // bytes of one host's inputs and results
    for (const training::Layer& l : m_training->workload().layers)
      for (const training::Pass& p : l.pass) {
        if (p.comm == training::Comm::none) continue;
        // sparse pairs: a host's D x elems, its result up to min(1, hosts x D) x elems, 8 bytes each
        const double elems = std::ceil(double(p.bytes) / m_job.esize);
        const bool in_network = p.comm == training::Comm::allreduce && !m_ring;
        per_iteration += in_network && m_sparse ? (m_density + std::min(1.0, m_density * m_job.hosts)) * elems * 8
                         : in_network           ? double(p.bytes) / m_job.hosts   // one result for all (shared)
                         : p.comm == training::Comm::allreduce ? double(p.bytes)  // the ring, in place on its input
                                                               : 2.0 * double(p.bytes);
      }
    what = fmt::format(
        "{} hosts' inputs and results of every all-reduce, in-network dense ones shared ({:.0f} B "
        "per iteration and host)",
        m_job.hosts, per_iteration);
    return static_cast<uint64_t>(per_iteration * m_training->iterations() * m_job.hosts) +
           m_training->total_blocks() * 96;
  }
  if (m_sparse) {  // pairs: a host's D x elems, its result up to min(1, hosts x D) x elems
    const double in = m_density * double(m_job.elems) * 8,
                 out = std::min(1.0, m_density * m_job.hosts) * m_job.elems * 8;
    what = fmt::format("{} hosts' sparse inputs and results ({:g} % of {} elements nonzero)", m_job.hosts,
                       m_density * 100, m_job.elems);
    return static_cast<uint64_t>((in + out) * m_job.hosts) + m_job.blocks() * m_job.hosts * 96;
  }
  if (!m_ring) {  // the hosts share one result (and result.bin is copied from it); inputs are made block by block
    what = fmt::format("the {} hosts' shared result of {} bytes and its copy for result.bin", m_job.hosts, v);
    return 2 * v + m_job.blocks() * m_job.hosts * 96;
  }
  what = fmt::format("{} hosts' results of {} bytes (the ring runs in place on the input)", m_job.hosts, v);
  return v * m_job.hosts + m_job.blocks() * m_job.hosts * 96;
}

void FlareScenario::load() {
  Handlers h;
  h.ph = find_handler(m_image, m_handler_name, "ph", "_ph", true, h.ph_name);
  for (uint32_t i = 0; i < m_sys->switches.size(); ++i) {
    Switch& s = *m_sys->switches[i];
    try {
      s.load(m_image, h);
    } catch (const std::exception& e) {
      throw core::ConfigError(e.what());
    }
    // Where the switch sits: into the kernel's flare_config (flare.h), if it has one.
    const std::vector<uint32_t> cfg = m_sys->switch_config(i);
    if (auto at = m_image.symbol("flare_config"))
      s.write_handler_memory(*at, cfg.data(), static_cast<uint32_t>(cfg.size() * 4));
    else if (m_sys->fat_tree() || m_multi || m_sparse)
      throw core::ConfigError(
          fmt::format("{}: no flare_config (flare.h): the kernel cannot learn its place in the "
                      "fat tree or its buffers",
                      m_handler_file));
  }
  const uint64_t bytes = m_job.elems * m_job.esize;
  if (m_training) {
    m_training->start();
    return;
  }
  for (uint32_t i = 0; m_sparse && i < m_job.hosts; ++i) m_sys->host[i]->start_sparse(m_job, sparse_input(i));
  if (m_sparse) {
    // The hosts' switches log 8 bytes per packet they apply (sparse.c): their hosts' packets, known now, must
    // fit their host memory. (A spine applies the leaves' packets, which depend on the stores' flushes.)
    std::vector<uint64_t> packets(m_sys->fat_tree() ? m_sys->leaves.get() : 1, 0);
    for (uint32_t host = 0; host < m_job.hosts; ++host)
      packets[host / m_sys->hosts_per_leaf()] += m_sys->host[host]->sparse_packets();
    for (size_t i = 0; i < packets.size(); ++i) {
      const Switch& sw = *m_sys->switches[i];
      if (packets[i] * 8 > sw.host_mem_MiB.get() << 20)
        throw core::ConfigError(fmt::format(
            "--sparse {:g}: {}'s order log ({} B: 8 per packet applied, {} packets from its hosts) does not fit "
            "{}.host_mem_MiB ({} MiB)",
            m_density, sw.name(), packets[i] * 8, packets[i], sw.name(), sw.host_mem_MiB.get()));
    }
  }
  if (m_sparse) return;
  // In-network, the hosts share their vectors, each input made block by block; the ring runs in place on each
  // host's input, which the check makes again.
  m_fill = FlareTraining::dense_input(m_job, m_dtype, [seed = m_seed](uint32_t host) { return seed * 1000003 + host; });
  if (!m_ring) {
    auto shared = std::make_shared<flare::SharedVectors>(m_job, m_fill);
    for (uint32_t i = 0; i < m_job.hosts; ++i) m_sys->host[i]->start(shared);
    return;
  }
  for (uint32_t i = 0; i < m_job.hosts; ++i) {
    std::vector<uint8_t> in(bytes);
    m_fill(i, 0, m_job.elems, in.data());
    m_sys->host[i]->start(m_job, std::move(in), false);
  }
}

std::vector<flare::Pair> FlareScenario::sparse_input(uint32_t host) const {
  return FlareTraining::sparse_vector(m_job, m_density, m_dtype, m_seed * 1000003 + host);
}

double FlareScenario::fraction_done() const {
  if (m_training) return m_training->fraction_done();
  uint64_t got = 0, all = 0;
  for (const auto& h : m_sys->host) {
    got += h->blocks_received();
    all += h->blocks_expected();
  }
  return all ? double(got) / double(all) : 1.0;
}

void FlareScenario::finish() {
  // host0's result (the check compares every host's with the reference); sparse: (index, value) words
  std::vector<uint8_t> pairs;
  auto sparse_words = [&pairs](const flare::Job& job, const flare::SparseRun& run) {
    for (uint64_t b = 0; b < run.result.size(); ++b)
      for (const flare::Pair& p : run.result[b]) {
        const uint32_t w[2] = {static_cast<uint32_t>(b * job.block_elems + p.index), p.value};
        pairs.insert(pairs.end(), reinterpret_cast<const uint8_t*>(w), reinterpret_cast<const uint8_t*>(w) + 8);
      }
  };
  if (m_sparse && !m_training) sparse_words(m_job, m_sys->host[0]->sparse_run());
  // training: host0's result of the last collective
  if (m_training && !m_training->records().empty()) {
    const FlareTraining::Record& last = m_training->records().back();
    if (last.job.sparse)
      sparse_words(last.job, last.sparse[0]);
    else
      pairs = last.shared ? last.shared->result(0) : last.result[0];
  }
  if (!m_sparse && !m_training && m_sys->host[0]->shared()) pairs = m_sys->host[0]->shared()->result(0);
  const std::vector<uint8_t>& r = m_sparse || m_training || m_sys->host[0]->shared() ? pairs : m_sys->host[0]->result();
  core::write_file((fs::path(m_out_dir) / "result.bin").string(),
                   std::string_view(reinterpret_cast<const char*>(r.data()), r.size()), "allreduce result", true);
  // Each switch's first faults, then how many more (a stuck block can stop thousands of handlers).
  constexpr size_t kShown = 8;
  for (const auto& s : m_sys->switches) {
    const auto& faults = s->fault_log();
    size_t watchdog = 0;
    for (size_t k = 0; k < faults.size(); ++k) {
      const Fault& f = faults[k];
      watchdog += f.what == "watchdog";
      if (k >= kShown) continue;
      core::HardwareError e;
      e.where = f.core;
      e.time_ps = f.time_ps;
      e.message =
          fmt::format("handler {} faulted: {} at pc 0x{:08x}, address 0x{:08x}", f.handler, f.what, f.pc, f.addr);
      core::Context::get().hw_error(e);
    }
    if (faults.size() > kShown || watchdog) {
      core::HardwareError e;
      e.where = s->name();
      e.time_ps = faults.back().time_ps;
      e.message = fmt::format(
          "{} handler faults in all{}{}", faults.size(),
          faults.size() > kShown ? fmt::format(" ({} not shown)", faults.size() - kShown) : std::string(),
          watchdog ? fmt::format(
                         "; {} ran longer than {}.watchdog_cycles ({}): the kernels' contributions to one block wait "
                         "for its lock one after the other, so a block of many packets (many hosts, or dense sparse "
                         "blocks) can outlast it; raise it, or send fewer packets per block (docs/flare.md)",
                         watchdog, s->name(), s->watchdog_cycles.get())
                   : std::string());
      core::Context::get().hw_error(e);
    }
  }
  if (m_training && !m_training->done()) {
    core::HardwareError e;
    e.where = "workload";
    e.time_ps = sc_core::sc_time_stamp().value();
    e.message = fmt::format("the training run ended unfinished: {}", m_training->progress());
    core::Context::get().hw_error(e);
  }
  for (const auto& h : m_sys->host)
    if (!h->done() && !m_training) {
      core::HardwareError e;
      e.where = h->name();
      e.time_ps = sc_core::sc_time_stamp().value();
      e.message = fmt::format("{} of {} {} never received ({} in flight)", h->blocks_expected() - h->blocks_received(),
                              h->blocks_expected(), m_ring ? "ring packets" : "blocks", h->in_flight());
      core::Context::get().hw_error(e);
    }
}

uint64_t FlareScenario::check_dense(const flare::Job& job, const DenseVectors& vectors, uint64_t& bad_order) {
  const Vectors& inputs = vectors.inputs;
  const Vectors& results = vectors.results;
  const flare::SharedVectors* shared = vectors.shared;
  // The inputs: made again (shared vectors, or a ring allreduce's fill), or every host's own.
  const flare::SharedVectors::Fill fill = shared ? [shared](uint32_t h, uint64_t first, uint64_t count,
                                                            uint8_t* out) { shared->input(h, first, count, out); }
                                                 : vectors.fill;
  // A host-based reduce-scatter, all-gather or all-to-all: every host's input; an allreduce: the fill; every
  // host's result, in-network the shared ones.
  const bool kept = job.ring && job.kind != flare::Collective::allreduce;
  if ((kept ? inputs.size() != job.hosts : !fill) || (job.ring ? results.size() != job.hosts : !shared))
    throw std::logic_error("check_dense: the inputs (or their fill) and the results of every host");
  const uint32_t n = job.hosts;
  uint64_t bad = 0;
  const uint32_t es = job.esize;
  // Every host's input elements [first, first + count), made again, as words: in[host * count + k] (a 16-bit
  // element in the low bits, little endian).
  std::vector<uint32_t> in;
  std::vector<uint8_t> bytes;
  auto gather = [&](uint64_t first, uint32_t count) {
    in.assign(size_t(n) * count, 0);
    bytes.resize(size_t(count) * es);
    for (uint32_t h = 0; h < n; ++h) {
      fill(h, first, count, bytes.data());
      for (uint32_t k = 0; k < count; ++k) std::memcpy(&in[size_t(h) * count + k], &bytes[size_t(k) * es], es);
    }
  };
  // Elements of `got` (count of them) that differ from `want`.
  auto differing = [es](const uint8_t* got, const uint32_t* want, uint32_t count) {
    uint64_t d = 0;
    for (uint32_t e = 0; e < count; ++e) d += std::memcmp(got + size_t(e) * es, &want[e], es) != 0;
    return d;
  };
  if (kept) {  // host-based, a segment of `seg` per host
    auto input = [&](uint32_t h, uint64_t e) {
      uint32_t v = 0;  // little endian: a 16-bit element in the low bits
      std::memcpy(&v, &(*inputs[h])[e * es], es);
      return v;
    };
    const uint64_t seg = job.elems / n;
    auto result = [&](uint32_t h, uint64_t e) {
      uint32_t v = 0;
      std::memcpy(&v, &(*results[h])[e * es], es);
      return v;
    };
    for (uint32_t i = 0; i < n; ++i) {
      if (results[i]->size() != job.result_elems() * es) {
        bad += job.result_elems();
      } else if (job.kind == flare::Collective::reducescatter) {
        for (uint64_t e = 0; e < seg; ++e) {  // host i's segment i: from host i + 1 around the ring, ending at i
          uint32_t want = input((i + 1) % n, i * seg + e);
          for (uint32_t k = 1; k < n; ++k) want = combine(job, input((i + 1 + k) % n, i * seg + e), want);
          bad += result(i, e) != want;
        }
      } else {  // segment j: host j's input (all-gather), host j's segment i (all-to-all)
        for (uint32_t j = 0; j < n; ++j)
          for (uint64_t e = 0; e < seg; ++e)
            bad += result(i, j * seg + e) != input(j, job.kind == flare::Collective::allgather ? e : i * seg + e);
      }
    }
    return bad;
  }
  if (job.ring) {  // segment s: the chain from host s around the ring, op(own, received) at each host
    std::vector<uint32_t> acc, own;
    for (uint32_t s = 0; s < n; ++s) {
      const uint64_t hi = uint64_t(s + 1) * job.elems / n;
      for (uint64_t first = uint64_t(s) * job.elems / n; first < hi; first += job.block_elems) {
        const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(job.block_elems, hi - first));
        gather(first, count);
        acc.assign(&in[size_t(s) * count], &in[size_t(s) * count] + count);
        for (uint32_t k = 1; k < n; ++k) {
          const uint32_t* row = &in[size_t((s + k) % n) * count];
          own.assign(row, row + count);
          flare::combine_all(job, own.data(), acc.data(), count);  // op(own, received)
          acc.swap(own);
        }
        for (uint32_t h = 0; h < n; ++h)
          bad +=
              results[h]->size() == job.elems * es ? differing(&(*results[h])[first * es], acc.data(), count) : count;
      }
    }
    return bad;
  }
  // Each switch's order log (flare/dense.c): at host_mem + block x contributions x 2.
  if (m_logged.empty()) {
    m_logged.resize(m_sys->switches.size());
    for (size_t i = 0; i < m_sys->switches.size(); ++i)
      for (const HostWrite& w : m_sys->switches[i]->host_write_log()) m_logged[i][w.addr] = &w.data;
  }
  const auto& logged = m_logged;
  // The order switch i applied block b's `count` contributions in (`from` numbers them) and the buffer each
  // went to, decoded once per block; in order, one buffer, if it logged none (exact for integers).
  struct Order {
    std::vector<uint32_t> who, buf;
  };
  auto order_of = [&](size_t i, uint64_t b, uint32_t from, uint32_t count, Order& o) {
    o.who.assign(count, 0);
    o.buf.assign(count, 0);
    if (m_tree) return;  // the fixed tree: no log needed
    auto it = logged[i].find(m_sys->switches[i]->host_mem_addr.get() + (job.block_base + b) * count * 2);
    bool perm = it != logged[i].end() && it->second->size() == size_t(count) * 2;
    std::vector<uint8_t> seen(count, 0);
    for (uint32_t k = 0; perm && k < count; ++k) {
      uint16_t entry;
      std::memcpy(&entry, it->second->data() + 2 * k, 2);
      const uint32_t who = m_multi ? entry & 0xfffu : entry;
      o.buf[k] = m_multi ? entry >> 12 : 0;
      perm = who >= from && who - from < count && !seen[who - from]++ && o.buf[k] < m_sys->buffers;
      o.who[k] = who - from;
    }
    if (!perm) {
      ++bad_order;
      for (uint32_t k = 0; k < count; ++k) {
        o.who[k] = k;
        o.buf[k] = 0;
      }
    }
  };
  // A block's reduction in that order, all of its `count` elements at once (row(k): contribution k's words):
  // each buffer applies its contributions in turn, the first copied, then the first buffer used takes the
  // others in turn; the tree variant: the fixed tree. Element by element, the kernels' operations in order.
  std::vector<std::vector<uint32_t>> rows;     // the tree's contributions, else the buffers
  std::vector<uint32_t> used(m_sys->buffers);  // contributions per buffer (up to 4096 hosts)
  auto reduce = [&](const Order& o, uint32_t count, auto&& row, uint32_t* out) {
    const uint32_t contributions = static_cast<uint32_t>(o.who.size());
    if (m_tree) {
      if (rows.size() < contributions) rows.resize(contributions);
      for (uint32_t k = 0; k < contributions; ++k) rows[k].assign(row(k), row(k) + count);
      for (uint32_t d = 1; d < contributions; d *= 2)
        for (uint32_t k = 0; k + d < contributions; k += 2 * d)
          flare::combine_all(job, rows[k].data(), rows[k + d].data(), count);
      std::copy(rows[0].begin(), rows[0].begin() + count, out);
      return;
    }
    if (rows.size() < m_sys->buffers) rows.resize(m_sys->buffers);
    std::fill(used.begin(), used.end(), 0);
    for (uint32_t k = 0; k < contributions; ++k) {
      const uint32_t j = o.buf[k];
      const uint32_t* r = row(o.who[k]);
      if (used[j]++)
        flare::combine_all(job, rows[j].data(), r, count);
      else
        rows[j].assign(r, r + count);
    }
    uint32_t first = 0;
    while (!used[first]) ++first;
    std::copy(rows[first].begin(), rows[first].begin() + count, out);
    for (uint32_t j = first + 1; j < m_sys->buffers; ++j)
      if (used[j]) flare::combine_all(job, out, rows[j].data(), count);
  };
  // Block by block: every host's elements of the block (made again from shared vectors), the reference in the
  // switches' order, then every host's copy of the block against it.
  const uint32_t H = m_sys->hosts_per_leaf(), L = m_sys->leaves.get(), S = m_sys->spines.get();
  std::vector<Order> leaf(m_sys->fat_tree() ? L : 0);
  Order top;
  std::vector<uint32_t> partial, want;
  for (uint64_t b = 0; b < job.blocks(); ++b) {
    const uint64_t first = b * job.block_elems;
    const uint32_t count = job.block_count(b);
    gather(first, count);
    want.assign(count, 0);
    if (!m_sys->fat_tree()) {
      order_of(0, b, 0, n, top);
      reduce(
          top, count, [&](uint32_t k) { return &in[size_t(k) * count]; }, want.data());
    } else {
      partial.assign(size_t(L) * count, 0);
      for (uint32_t l = 0; l < L; ++l) {
        order_of(l, b, l * H, H, leaf[l]);
        reduce(
            leaf[l], count, [&](uint32_t k) { return &in[size_t(l * H + k) * count]; }, &partial[size_t(l) * count]);
      }
      order_of(L + (job.block_base + b) % S, b, 0, L, top);
      reduce(
          top, count, [&](uint32_t k) { return &partial[size_t(k) * count]; }, want.data());
    }
    // Hosts sharing one copy of the block are compared once.
    const uint8_t* seen = nullptr;
    uint64_t seen_bad = 0;
    for (uint32_t h = 0; h < n; ++h) {
      const uint8_t* got = shared->block(h, b);
      if (!got) {  // never arrived
        bad += count;
        continue;
      }
      if (got != seen) {
        seen = got;
        seen_bad = differing(got, want.data(), count);
      }
      bad += seen_bad;
    }
  }
  return bad;
}

systems::Outcome FlareScenario::check() {
  systems::Outcome out;
  out.checked = true;
  uint64_t bad = 0, bad_order = 0;
  SparseCounts counts;
  const SparseOrder order = m_sparse ? sparse_order() : SparseOrder();
  if (m_training) {
    for (FlareTraining::Record& r : m_training->records()) {
      if (r.hosts_done != m_job.hosts) {  // not every host has it
        r.mismatched = r.job.elems * m_job.hosts;
      } else if (r.job.sparse) {
        std::vector<const flare::SparseRun*> runs;
        for (const flare::SparseRun& run : r.sparse) runs.push_back(&run);
        uint64_t wrong = 0;
        bad_order += check_sparse(r.job, runs, order, wrong, counts);
        r.mismatched = wrong;
      } else {
        DenseVectors v;
        v.shared = r.shared.get();
        v.fill = r.fill;  // a ring allreduce's hosts keep no input
        for (uint32_t h = 0; !v.shared && h < r.result.size(); ++h) {
          if (!v.fill) v.inputs.push_back(&r.input[h]);
          v.results.push_back(&r.result[h]);
        }
        r.mismatched = check_dense(r.job, v, bad_order);
      }
      bad += r.mismatched;
    }
  } else if (m_sparse) {
    std::vector<const flare::SparseRun*> runs;
    for (const auto& h : m_sys->host) runs.push_back(&h->sparse_run());
    bad_order = check_sparse(m_job, runs, order, bad, counts);
  } else {
    DenseVectors v;
    v.shared = m_sys->host[0]->shared();
    v.fill = m_fill;  // the ring's hosts keep no input
    for (const auto& h : m_sys->host)
      if (!v.shared) v.results.push_back(&h->result());
    bad = check_dense(m_job, v, bad_order);
  }
  uint64_t errors = 0;
  for (const auto& h : m_sys->host) errors += h->protocol_errors.get() + h->kept_packets();
  bool faults = false;
  for (const auto& s : m_sys->switches) faults = faults || !s->fault_log().empty();
  m_stats.mismatched_elements.set(bad);
  if (m_sparse) {
    m_stats.sparse_flushes.set(counts.flushes);
    m_stats.sparse_pairs_in.set(counts.pairs_in);
    m_stats.sparse_pairs_out.set(counts.pairs_out);
  }
  out.verified = bad == 0 && errors == 0 && !faults && !(m_sparse && bad_order);
  if (bad_order && m_sparse)
    m_sys->log(core::Level::warn,
               "{} sparse blocks whose order log is not a permutation of their contributions' packets: not verified",
               bad_order);
  else if (bad_order)
    m_sys->log(core::Level::warn,
               "{} blocks' order logs missing from their switch's host memory (counted per switch): their "
               "reference takes the contributions in order",
               bad_order);
  m_stats.verified.set(out.verified);
  return out;
}

FlareScenario::SparseOrder FlareScenario::sparse_order() const {
  // Each switch's log (sparse.c): 8 bytes at host_mem + position x 8: block, sender | packet number << 16.
  struct Entry {
    uint32_t block = 0, word = 0;
    bool set = false;
  };
  const size_t nsw = m_sys->switches.size();
  SparseOrder order(nsw);
  for (size_t i = 0; i < nsw; ++i) {
    std::vector<Entry> log;
    const uint64_t base = m_sys->switches[i]->host_mem_addr.get();
    for (const HostWrite& w : m_sys->switches[i]->host_write_log()) {
      if (w.data.size() != 8 || w.addr < base || (w.addr - base) % 8) continue;
      const uint64_t pos = (w.addr - base) / 8;
      if (pos >= log.size()) log.resize(pos + 1);
      std::memcpy(&log[pos].block, w.data.data(), 4);
      std::memcpy(&log[pos].word, w.data.data() + 4, 4);
      log[pos].set = true;
    }
    for (const Entry& e : log)
      if (e.set) order[i][e.block].push_back(e.word);
  }
  return order;
}

uint64_t FlareScenario::check_sparse(const flare::Job& job, const std::vector<const flare::SparseRun*>& hosts,
                                     const SparseOrder& order, uint64_t& bad, SparseCounts& counts) {
  const uint32_t n = job.hosts, H = m_sys->hosts_per_leaf(), L = m_sys->leaves.get();
  const uint32_t S = m_sys->spines.get();
  uint64_t unusable = 0;
  // A host's packets of block b, as it sent them.
  auto host_packets = [&](uint32_t h, uint64_t b) {
    const flare::SparseRun& host = *hosts[h];
    const uint64_t first = host.first[b], last = host.first[b + 1];
    const uint64_t base = b * job.block_elems;
    Packets out;
    for (uint64_t k = first; k < last; k += flare::kSparsePairs) {
      out.emplace_back();
      for (uint64_t j = k; j < std::min(last, k + flare::kSparsePairs); ++j)
        out.back().push_back({static_cast<uint32_t>(host.input[j].index - base), host.input[j].value});
    }
    if (out.empty()) out.emplace_back();
    return out;
  };
  // Switch i's packets of block b, replaying its log over its senders' packets (`from` numbers them).
  auto replay = [&](size_t i, uint64_t b, uint32_t from, const std::vector<Packets>& in, bool& ok) {
    SparseStore store(job, m_sys->sparse_format, m_sys->span, m_sys->entries);
    Packets out;
    std::vector<std::vector<uint8_t>> applied(in.size());
    for (size_t c = 0; c < in.size(); ++c) applied[c].assign(in[c].size(), 0);
    size_t count = 0;
    auto it = order[i].find(static_cast<uint32_t>(job.block_base + b));
    if (it != order[i].end())
      for (uint32_t word : it->second) {
        const uint32_t who = (word & 0xffff) - from, seq = word >> 16, k = seq & (flare::kLast - 1);
        if (who >= in.size() || k >= in[who].size() || applied[who][k] ||
            bool(seq & flare::kLast) != (k + 1 == in[who].size())) {
          ok = false;
          continue;
        }
        applied[who][k] = 1;
        ++count;
        for (const flare::Pair& p : in[who][k]) store.put(p.index, p.value, out);
      }
    size_t all = 0;
    for (const Packets& c : in) all += c.size();
    if (count != all) ok = false;
    store.finish(out);
    counts.flushes += store.flushes;
    return out;
  };
  for (uint64_t b = 0; b < job.blocks(); ++b) {
    bool ok = true;
    std::vector<Packets> sent(n);  // what each host sent of block b
    for (uint32_t h = 0; h < n; ++h) sent[h] = host_packets(h, b);
    Packets top;
    if (!m_sys->fat_tree()) {
      top = replay(0, b, 0, sent, ok);
    } else {
      std::vector<Packets> up(L);
      for (uint32_t l = 0; l < L; ++l)
        up[l] = replay(l, b, l * H, std::vector<Packets>(sent.begin() + l * H, sent.begin() + (l + 1) * H), ok);
      top = replay(L + (job.block_base + b) % S, b, 0, up, ok);
    }
    if (!ok) ++unusable;
    // Packets' pairs into a result: the first of an offset stored, the others combined, in order.
    auto reduce_into = [&](std::map<uint32_t, uint32_t>& acc, const Packets& packets) {
      for (const auto& pk : packets)
        for (const flare::Pair& p : pk) {
          auto [at, fresh] = acc.emplace(p.index, p.value);
          if (!fresh) at->second = combine(job, at->second, p.value);
        }
    };
    // What every host does with the result packets.
    std::map<uint32_t, uint32_t> want;
    reduce_into(want, top);
    // Integers: the order does not matter, so also the plain reduction of the inputs (independent of the replay).
    if (job.dtype == kInt32 && job.op != kUser) {
      std::map<uint32_t, uint32_t> plain;
      for (const Packets& packets : sent) reduce_into(plain, packets);
      if (plain != want) {  // the elements that differ (either has one the other lacks, or other bits)
        for (const auto& [off, v] : plain) {
          auto at = want.find(off);
          bad += at == want.end() || at->second != v;
        }
        for (const auto& [off, v] : want) bad += !plain.count(off);
      }
    }
    counts.pairs_out += want.size();
    std::vector<flare::Pair> expect;
    expect.reserve(want.size());
    for (const auto& [off, v] : want) expect.push_back({off, v});
    for (const flare::SparseRun* h : hosts) {
      const std::vector<flare::Pair>& got = h->result[b];
      if (got == expect) continue;
      size_t same = 0;
      for (size_t k = 0; k < std::min(got.size(), expect.size()); ++k) same += got[k] == expect[k];
      bad += std::max(got.size(), expect.size()) - same;
    }
  }
  for (const flare::SparseRun* h : hosts) counts.pairs_in += h->input.size();
  return unusable;
}

void FlareScenario::report(const systems::Outcome&) {
  if (m_training) m_training->write_collectives_csv((fs::path(m_out_dir) / "collectives.csv").string());
  uint64_t end = 0, up = 0, down = 0;
  for (const auto& h : m_sys->host) {
    end = std::max(end, h->completion_ps.get());
    up += h->tx.payload_bytes.get();
    down += h->bytes_received.get();
  }
  const double bytes = double(m_job.elems * m_job.esize);
  const uint32_t n = m_job.hosts;
  if (m_training) {  // the host that finished last: its times (as the NPU platforms report a training run)
    uint32_t crit = 0;
    for (uint32_t h = 1; h < n; ++h)
      if (m_training->loop().times(h).end > m_training->loop().times(crit).end) crit = h;
    const training::NpuTimes& tm = m_training->loop().times(crit);
    end = std::max(end, tm.end);
    m_stats.iteration_ps.set(tm.end / m_training->iterations());
    m_stats.compute_ps.set(tm.compute);
    m_stats.exposed_comm_ps.set(tm.exposed);
    m_stats.comm_busy_ps.set(tm.comm_busy);
    m_stats.exposed_comm_pct.set(tm.end ? 100.0 * double(tm.exposed) / double(tm.end) : 0.0);
    uint64_t total = 0;
    for (const FlareTraining::Record& r : m_training->records()) total += r.bytes;
    m_stats.collectives.set(m_training->records().size());
    m_stats.collective_bytes.set(total);
    m_stats.blocks.set(m_training->total_blocks());
  } else {
    m_stats.algbw_GBps.set(end ? bytes / (end / 1000.0) : 0.0);
    m_stats.busbw_GBps.set(m_stats.algbw_GBps.get() * 2.0 * (n - 1) / n);
    m_stats.blocks.set(m_job.blocks());
  }
  m_stats.simulated_ps.set(end);
  m_stats.wire_bytes_up.set(up);
  m_stats.wire_bytes_down.set(down);
  // The hosts' switches (the leaves, or the one switch): tau over their runs; K cores each take tau
  // cycles per contribution, and a host's block is one of fan-in contributions there.
  const uint32_t first_level = m_sys->fat_tree() ? m_sys->leaves.get() : 1;
  uint64_t runs = 0, cycles = 0, sent = 0;
  for (uint32_t i = 0; i < m_sys->switches.size(); ++i) {
    const HandlerStats& ph = m_sys->switches[i]->handler_stats(1);
    if (i < first_level) {
      runs += ph.runs;
      cycles += ph.cycles;
    }
    sent += m_sys->switches[i]->bytes_out.get();
  }
  m_stats.wire_bytes_fabric.set(sent - down);
  // Switch memory held by open blocks, from each block's first contribution in L2 to its last feedback.
  if (!m_ring) {
    uint64_t peak_bytes = 0, peak = 0;
    double held_ps = 0, span_lo = 1e300, span_hi = 0, count = 0;
    for (uint32_t i = 0; i < m_sys->switches.size(); ++i) {
      const auto spans = m_sys->switches[i]->message_spans(flare::kPeerMessage);  // the blocks, not forwarded packets
      std::vector<std::pair<uint64_t, int>> ev;
      for (const auto& [a, b] : spans) {
        ev.emplace_back(a, +1);
        ev.emplace_back(b, -1);
        if (i < first_level) {
          held_ps += double(b - a);
          span_lo = std::min(span_lo, double(a));
          span_hi = std::max(span_hi, double(b));
          ++count;
        }
      }
      std::sort(ev.begin(), ev.end());  // at equal times a block freed before one taken
      int64_t open = 0, most = 0;
      for (const auto& e : ev) most = std::max(most, open += e.second);
      const uint32_t slot = buffer_bytes(i);
      peak = std::max<uint64_t>(peak, static_cast<uint64_t>(most));
      peak_bytes = std::max<uint64_t>(peak_bytes, static_cast<uint64_t>(most) * slot);
    }
    m_stats.open_blocks_peak.set(peak);
    m_stats.working_memory_peak_bytes.set(peak_bytes);
    if (count > 0 && span_hi > span_lo) {
      m_stats.open_blocks_mean.set(held_ps / (span_hi - span_lo) / first_level);
      m_stats.block_residence_ns.set(held_ps / count / 1000.0);
    }
  }
  if (runs) {
    const double tau = double(cycles) / double(runs);
    m_stats.ph_cycles_mean.set(tau);
    const double contributions_per_s = double(sw().nclusters()) * sw().ncores() * sw().clock_MHz.get() * 1e6 / tau;
    // a contribution: a block (dense), or a packet of pairs of the mean size the hosts sent (sparse)
    uint64_t packets = 0;
    for (const auto& h : m_sys->host) packets += h->tx.packets.get();
    const double payload = m_sparse ? (packets ? double(up - packets * flare::kHeaderBytes) / double(packets) : 0.0)
                                    : double(m_params.block_bytes.get());
    m_stats.model_GBps.set(contributions_per_s / m_sys->hosts_per_leaf() * payload / 1e9);
  }
  core::set_stats_end(end);
}

uint64_t FlareScenario::l2_peak() const {
  uint64_t peak = 0;
  for (const auto& s : m_sys->switches) peak = std::max(peak, s->l2_peak_bytes.get());
  return peak;
}

void FlareScenario::summarize(const systems::Outcome& outcome, systems::Summary& out) {
  if (m_training) {
    const training::Workload& w = m_training->workload();
    out.line("workload",
             fmt::format("{}: {}, {} layers, {} iteration{}, {} elements, every collective checked", w.file,
                         training::parallelism_name(w.parallelism), w.layers.size(), m_training->iterations(),
                         m_training->iterations() == 1 ? "" : "s", core::dtype_name(m_dtype)));
    uint64_t host_based = 0;
    for (const FlareTraining::Record& r : m_training->records())
      host_based += r.job.kind != flare::Collective::allreduce;
    out.line(
        "collectives",
        fmt::format("{} of {} B in all, overlapping at a host: {} all-reduces {} ({}), {}, window {}{}{}",
                    m_stats.collectives.get(), m_stats.collective_bytes.get(), m_stats.collectives.get() - host_based,
                    m_ring ? "on the host ring through the switches" : "in the switches",
                    m_sparse ? fmt::format("sparse, {:g} % nonzero: {} pairs in, {} out at a host, {} flushes",
                                           m_density * 100, m_stats.sparse_pairs_in.get(),
                                           m_stats.sparse_pairs_out.get(), m_stats.sparse_flushes.get())
                             : m_params.algorithm.get(),
                    m_sparse ? fmt::format("blocks of {} elements", m_sys->span)
                             : fmt::format("{}-byte blocks", m_params.block_bytes.get()),
                    m_job.window, m_job.stagger ? ", staggered" : "",
                    host_based ? fmt::format("; {} host-based (reduce-scatter, all-gather, all-to-all), "
                                             "through the switches",
                                             host_based)
                               : std::string()));
    out.line("result", outcome.verified
                           ? "every host's result of every collective equals the reference (bit for bit)"
                           : fmt::format("NOT verified: {} mismatched elements", m_stats.mismatched_elements.get()));
    const uint64_t t = m_stats.simulated_ps.get();
    out.line("iteration",
             fmt::format("{:.3f} us per iteration ({:.3f} us in all): compute {:.3f} us, communication busy {:.3f} "
                         "us, exposed communication {:.3f} us ({:.1f} %)",
                         m_stats.iteration_ps.get() / 1e6, t / 1e6, m_stats.compute_ps.get() / 1e6,
                         m_stats.comm_busy_ps.get() / 1e6, m_stats.exposed_comm_ps.get() / 1e6,
                         m_stats.exposed_comm_pct.get()));
    out.line(
        "wire",
        fmt::format("{} B up, {} B down (all host links){}", m_stats.wire_bytes_up.get(), m_stats.wire_bytes_down.get(),
                    m_sys->fat_tree() ? fmt::format("; {} B between leaves and spines", m_stats.wire_bytes_fabric.get())
                                      : std::string()));
    return;
  }
  if (m_ring)
    out.line("allreduce", fmt::format("{} hosts x {} B of {} ({}): the host-based ring baseline, 2 x {} steps through "
                                      "the switches, packets of up to {} B",
                                      m_job.hosts, m_job.elems * m_job.esize, core::dtype_name(m_dtype),
                                      m_params.op.get(), m_job.hosts - 1, m_params.block_bytes.get()));
  else if (m_sparse)
    out.line("allreduce",
             fmt::format("{} hosts x {} elements of {} ({}), {:g} % nonzero: {} blocks of {} elements, store {} "
                         "({} B per block), window {}{}",
                         m_job.hosts, m_job.elems, core::dtype_name(m_dtype), m_params.op.get(), m_density * 100,
                         m_job.blocks(), m_sys->span, m_params.sparse_format.get(), buffer_bytes(0), m_job.window,
                         m_job.stagger ? ", staggered" : ""));
  else
    out.line("allreduce", fmt::format("{} hosts x {} B of {} ({}, {}), {} blocks of {} B, window {}{}", m_job.hosts,
                                      m_job.elems * m_job.esize, core::dtype_name(m_dtype), m_params.op.get(),
                                      m_params.algorithm.get(), m_job.blocks(), m_params.block_bytes.get(),
                                      m_job.window, m_job.stagger ? ", staggered" : ""));
  out.line("result",
           outcome.verified
               ? (m_ring     ? "every host's result equals the reference (bit for bit, the ring's order)"
                  : m_tree   ? "every host's result equals the reference (bit for bit, fixed tree order)"
                  : m_sparse ? "every host's result equals the reference (bit for bit, the switches' stores replayed "
                               "in their order)"
                             : "every host's result equals the reference (bit for bit, in the switch's order)")
               : fmt::format("NOT verified: {} mismatched elements", m_stats.mismatched_elements.get()));
  out.line("completion",
           fmt::format("{:.3f} us: algbw {:.2f} GB/s, busbw {:.2f} GB/s", m_stats.simulated_ps.get() / 1e6,
                       m_stats.algbw_GBps.get(), m_stats.busbw_GBps.get()));
  out.line(
      "wire",
      fmt::format("{} B up, {} B down (all host links){}", m_stats.wire_bytes_up.get(), m_stats.wire_bytes_down.get(),
                  m_sys->fat_tree() ? fmt::format("; {} B between leaves and spines", m_stats.wire_bytes_fabric.get())
                                    : std::string()));
  if (m_sparse)
    out.line("sparse",
             fmt::format("{} pairs sent by the hosts, {} in each host's result (fill-in {:.2f}x a host's); "
                         "{} flushes of a full store",
                         m_stats.sparse_pairs_in.get(), m_stats.sparse_pairs_out.get(),
                         m_stats.sparse_pairs_in.get() ? double(m_stats.sparse_pairs_out.get()) * m_job.hosts /
                                                             double(m_stats.sparse_pairs_in.get())
                                                       : 0.0,
                         m_stats.sparse_flushes.get()));
  if (!m_ring)
    out.line("memory", fmt::format("open blocks: peak {} (the window's bound {}), mean {:.1f} = throughput x "
                                   "residence {:.0f} ns (Little); working memory peak {} B",
                                   m_stats.open_blocks_peak.get(), 2 * m_job.window, m_stats.open_blocks_mean.get(),
                                   m_stats.block_residence_ns.get(), m_stats.working_memory_peak_bytes.get()));
  if (m_stats.ph_cycles_mean.get() > 0)
    out.line("switch", m_ring ? fmt::format("forwarding handler tau {:.1f} cycles; L2 packet buffer peak {} B",
                                            m_stats.ph_cycles_mean.get(), l2_peak())
                              : fmt::format("handler tau {:.1f} cycles: the cores aggregate {:.2f} GB/s per host "
                                            "(K / tau); L2 packet buffer peak {} B",
                                            m_stats.ph_cycles_mean.get(), m_stats.model_GBps.get(), l2_peak()));
}

void FlareScenario::tables(systems::Summary& out) {
  if (m_training) {
    std::string t = fmt::format("  {:<8} {:>12} {:>12} {:>12} {:>12} {:>14}\n", "host", "bytes up", "bytes down",
                                "compute us", "exposed us", "done us");
    for (uint32_t h = 0; h < m_sys->host.size(); ++h) {
      const training::NpuTimes& tm = m_training->loop().times(h);
      t += fmt::format("  {:<8} {:>12} {:>12} {:>12.3f} {:>12.3f} {:>14.3f}\n", m_sys->host[h]->basename(),
                       m_sys->host[h]->tx.payload_bytes.get(), m_sys->host[h]->bytes_received.get(), tm.compute / 1e6,
                       tm.exposed / 1e6, tm.end / 1e6);
    }
    out.text(t);
    return;
  }
  std::string t =
      fmt::format("  {:<8} {:>12} {:>12} {:>10} {:>14}\n", "host", "bytes up", "bytes down", "peak win", "done us");
  for (const auto& h : m_sys->host)
    t += fmt::format("  {:<8} {:>12} {:>12} {:>10} {:>14.3f}\n", h->basename(), h->tx.payload_bytes.get(),
                     h->bytes_received.get(), h->peak_in_flight.get(), h->completion_ps.get() / 1e6);
  out.text(t);
}

int FlareScenario::topology(const std::string& platform, uint32_t, nlohmann::json& json) {
  fmt::print("{}: {}\n", platform, headline());
  const Switch& s = *m_sys->switches[0];
  json = {{"platform", platform},
          {"hosts", m_sys->host.size()},
          {"switches", m_sys->switches.size()},
          {"leaves", m_sys->leaves.get()},
          {"spines", m_sys->fat_tree() ? m_sys->spines.get() : 0},
          {"cores_per_switch", s.nclusters() * s.ncores()},
          {"port_Gbps", s.port_Gbps.get()},
          {"link_latency_ns", m_sys->link_latency_ns.get()}};
  json["schema"] = {
      {"hosts", {{"unit", "hosts"}, {"description", "hosts, one per host port"}}},
      {"switches", {{"unit", "switches"}, {"description", "PsPIN switches"}}},
      {"leaves", {{"unit", "switches"}, {"description", "leaf switches of the fat tree (0: one switch)"}}},
      {"spines", {{"unit", "switches"}, {"description", "spine switches of the fat tree"}}},
      {"cores_per_switch", {{"unit", "cores"}, {"description", "RISC-V cores of each switch"}}},
      {"port_Gbps", {{"unit", "Gbit/s"}, {"description", "line rate of each port and link"}}},
      {"link_latency_ns", {{"unit", "ns"}, {"description", "latency of each link"}}}};
  return 0;
}

namespace {
const bool flare_registered = systems::register_kind(
    systems::Kind{"flare",
                  "Flare: hosts run an in-network allreduce on a PsPIN-like switch's C kernels (seed 004)",
                  {"flare"},
                  false,
                  [](const systems::RunOptions&) { return std::make_unique<FlareScenario>(); },
                  {"handlers", "ph", "operator", "sparse", "iterations"}});
}  // namespace

}  // namespace fabricvp::pspin
