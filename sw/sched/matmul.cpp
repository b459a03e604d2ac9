#include "sw/sched/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <numeric>
#include <queue>
#include <sstream>
#include <tuple>

#include "models/core/config.h"
#include "models/tsp/isa.h"
#include "sw/sched/engine.h"
#include "sw/sched/routing.h"

namespace fabricvp::sched {

namespace {

uint64_t positive(const std::string& tok, const std::string& what, const std::string& text, const char* example) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = tok.empty() || tok[0] == '-' ? 0 : std::strtoull(tok.c_str(), &end, 10);
  if (tok.empty() || errno || !end || *end || v == 0)
    throw core::ConfigError(fmt::format("{} '{}': '{}' is not a positive integer (e.g. {})", what, text, tok, example));
  return v;
}

/// [i * n / parts, (i + 1) * n / parts): a balanced share.
uint64_t share(uint64_t n, uint64_t parts, uint64_t i) { return i * n / parts; }

}  // namespace

uint64_t parse_positive(const std::string& text, const std::string& what, const char* example) {
  return positive(text, what, text, example);
}

void parse_shape(const std::string& text, MatmulRequest& r, const std::string& what) {
  std::vector<std::string> dims;
  std::stringstream ss(text);
  for (std::string d; std::getline(ss, d, 'x');) dims.push_back(d);
  if (dims.size() != 3 || text.back() == 'x')
    throw core::ConfigError(
        fmt::format("{} '{}': expected MxNxL ([M x N] x [N x L]), e.g. 800x32576x8192", what, text));
  r.M = positive(dims[0], what, text, "800x32576x8192");
  r.N = positive(dims[1], what, text, "800x32576x8192");
  r.L = positive(dims[2], what, text, "800x32576x8192");
}

void parse_split(const std::string& text, MatmulRequest& r, const std::string& what) {
  std::stringstream ss(text);
  bool any = false, seen_col = false, seen_row = false;
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || (key != "col" && key != "row"))
      throw core::ConfigError(
          fmt::format("{} '{}': expected col=C,row=R (e.g. col=8,row=13), got '{}'", what, text, item));
    bool& seen = key == "col" ? seen_col : seen_row;
    if (seen) throw core::ConfigError(fmt::format("{} '{}': {} given twice", what, text, key));
    seen = true;
    const uint64_t v = positive(item.substr(eq + 1), what, text, "col=8,row=13");
    if (v > 1u << 20) throw core::ConfigError(fmt::format("{} '{}': {} splits is too many", what, text, v));
    (key == "col" ? r.col : r.row) = static_cast<uint32_t>(v);
    any = true;
  }
  if (!any) throw core::ConfigError(fmt::format("{} '{}': expected col=C,row=R (e.g. col=8,row=13)", what, text));
}

uint32_t MatmulPlan::tile_vectors(uint32_t t) const {
  const uint64_t rows = std::min<uint64_t>(K, req.N - uint64_t(t) * K);
  return static_cast<uint32_t>(req.dtype == core::Dtype::fp16 ? 2 * rows : rows);
}

MatmulPlan plan_matmul(const Machine& m, const MatmulRequest& r) {
  MatmulPlan pl;
  pl.req = r;
  pl.K = tsp::mxm_k(r.dtype);
  if (pl.K == 0)
    throw core::ConfigError(
        fmt::format("--dtype {}: the matrix unit multiplies fp16 or int8", core::dtype_name(r.dtype)));
  if (r.M == 0 || r.N == 0 || r.L == 0) throw core::ConfigError("matmul: every dimension must be at least 1");
  const uint64_t T = (r.N + pl.K - 1) / pl.K, J = (r.L + tsp::kMxmColumns - 1) / tsp::kMxmColumns;
  const bool blockable = r.host_inputs && r.host_outputs && r.row == 1;  // A's rows need not all be in SRAM
  if (T > (1u << 30) || J > (1u << 30) || (r.M > tsp::kVectors && !blockable) || r.M > (uint64_t{1} << 40))
    throw core::ConfigError(fmt::format("matmul {}x{}x{}: too large for any TSP's SRAM", r.M, r.N, r.L));
  pl.T = static_cast<uint32_t>(T);
  pl.J = static_cast<uint32_t>(J);
  const uint64_t P = uint64_t(r.col) * r.row;
  if (P > m.size())
    throw core::ConfigError(
        fmt::format("--split col={},row={} needs {} TSPs; the platform's job has {}", r.col, r.row, P, m.size()));
  if (r.col > J)
    throw core::ConfigError(fmt::format("--split col={}: B has only {} column tile{} of 320 ({} columns)", r.col, J,
                                        J == 1 ? "" : "s", r.L));
  if (r.row > T)
    throw core::ConfigError(fmt::format("--split row={}: B has only {} row tile{} of {} ({} rows)", r.row, T,
                                        T == 1 ? "" : "s", pl.K, r.N));

  Engine eng(m);
  const core::Dtype acc_dt = r.dtype == core::Dtype::fp16 ? core::Dtype::fp32 : core::Dtype::int32;
  uint64_t M = r.M;  // rows of A per block from the shares on (all of them unless blocked)
  // Placement: a group's row splits in one node when they fit (several
  // groups per node), else in whole nodes of their own, so partial products
  // cross the fewest global cables; densely when the job is too small for that.
  const uint64_t tpn = std::max<uint32_t>(1, m.tsps_per_node);
  std::vector<uint32_t> rank_of(P);
  {
    const bool fits = r.row <= tpn;
    const uint64_t per_node = fits ? tpn / r.row : 0, nodes_per_group = fits ? 0 : (r.row + tpn - 1) / tpn;
    const uint64_t needed = fits ? (r.col + per_node - 1) / per_node * tpn : r.col * nodes_per_group * tpn;
    for (uint32_t g = 0; g < r.col; ++g)
      for (uint32_t i = 0; i < r.row; ++i) {
        uint64_t rank = uint64_t(g) * r.row + i;  // dense
        if (needed <= m.size())
          rank = fits ? (g / per_node) * tpn + (g % per_node) * r.row + i : g * nodes_per_group * tpn + i;
        rank_of[g * r.row + i] = static_cast<uint32_t>(rank);
      }
  }
  // Shares and SRAM layout.
  pl.parts.resize(P);
  for (uint32_t g = 0; g < r.col; ++g)
    for (uint32_t i = 0; i < r.row; ++i) {
      MatmulPart& p = pl.parts[g * r.row + i];
      p.rank = rank_of[g * r.row + i];
      p.chip = m.ranks[p.rank];
      p.group = g;
      p.index = i;
      p.t0 = static_cast<uint32_t>(share(T, r.row, i));
      p.t1 = static_cast<uint32_t>(share(T, r.row, i + 1));
      p.j0 = static_cast<uint32_t>(share(J, r.col, g));
      p.j1 = static_cast<uint32_t>(share(J, r.col, g + 1));
    }

  pl.tsps = P;
  if (r.widest_share) {
    if (r.row != 1)
      throw core::ConfigError(
          "--widest-share: only column-wise splits never communicate (row-split groups share cables); use "
          "--split col=C");
    size_t w = 0;
    for (size_t i = 1; i < pl.parts.size(); ++i)
      if (pl.parts[i].j1 - pl.parts[i].j0 > pl.parts[w].j1 - pl.parts[w].j0) w = i;
    pl.parts = {pl.parts[w]};
    pl.parts[0].group = 0;
  }
  // Blocks of rows: with host inputs and outputs and no row splits, as many
  // rows at a time as the SRAM holds (two A slices, the B tile ring, C for
  // the rows), or sched.matmul_block_rows.
  constexpr uint32_t kTileSlots = 4;
  const bool host = r.host_inputs;
  {
    uint64_t widest = 0;
    for (const MatmulPart& p : pl.parts) widest = std::max<uint64_t>(widest, p.j1 - p.j0);
    const uint64_t fixed = host ? uint64_t(kTileSlots) * tsp::kTileVectors : 0;
    const uint64_t fit = (tsp::kVectors - fixed) / (2 + widest * tsp::kResultVectors);
    uint64_t rows = r.M;
    if (r.block_rows && r.block_rows < r.M) {
      if (!blockable)
        throw core::ConfigError(
            fmt::format("sched.matmul_block_rows={}: blocks of rows need -p sched.matmul_inputs=host -p "
                        "sched.matmul_outputs=host and no row-wise splits",
                        r.block_rows));
      if (r.block_rows > fit)
        throw core::ConfigError(
            fmt::format("sched.matmul_block_rows={}: a TSP holds at most {} rows of a block ({} column tiles of C)",
                        r.block_rows, fit, widest));
      rows = r.block_rows;
    } else if (blockable && r.M > fit) {
      if (fit == 0)
        throw core::ConfigError(fmt::format(
            "matmul {}x{}x{}: one row of C over {} column tiles does not fit a TSP's SRAM with the B tile ring; "
            "use more column splits (--split col=C)",
            r.M, r.N, r.L, widest));
      rows = fit;
    }
    pl.blocks = (r.M + rows - 1) / rows;
    M = (r.M + pl.blocks - 1) / pl.blocks;  // balanced: the last block pads fewer than `blocks` rows
    pl.block_rows = M;
  }

  auto idx = [&pl](const MatmulPart& p) { return static_cast<size_t>(&p - pl.parts.data()); };
  // Reduction structure (row > 1): the group's parts by node, pieces of rows.
  pl.groups.resize(r.col);
  if (r.row > 1)
    for (uint32_t g = 0; g < r.col; ++g) {
      MatmulGroup& grp = pl.groups[g];
      std::map<uint32_t, size_t> node_of;
      for (uint32_t i = 0; i < r.row; ++i) {
        const uint32_t part = g * r.row + i;
        const uint32_t node = m.chips[pl.parts[part].chip].node;
        auto it = node_of.find(node);
        if (it == node_of.end()) {
          it = node_of.emplace(node, grp.nodes.size()).first;
          grp.nodes.emplace_back();
        }
        grp.nodes[it->second].push_back(part);
      }
      // The node with the most members first: it holds the final pieces.
      // As many pieces as every node can share evenly (the least common
      // multiple of the nodes' sizes): each member of a node holds an equal
      // run of them, so no member of a smaller node sums more than the others.
      std::stable_sort(
          grp.nodes.begin(), grp.nodes.end(),
          [](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) { return a.size() > b.size(); });
      uint64_t pieces = 1;
      for (const auto& members : grp.nodes) pieces = std::lcm<uint64_t>(pieces, members.size());
      pieces = std::min<uint64_t>(pieces, M);
      for (uint64_t q = 0; q < pieces; ++q) {
        MatmulGroup::Piece pc;
        pc.m0 = share(M, pieces, q);
        pc.m1 = share(M, pieces, q + 1);
        for (const auto& members : grp.nodes) pc.holder.push_back(members[q * members.size() / pieces]);
        grp.pieces.push_back(pc);
      }
    }

  // Staging for the reduction: every run a holder receives gets its own buffer.
  std::vector<uint64_t> staging(P, 0);
  for (uint32_t g = 0; g < r.col; ++g)
    for (const MatmulGroup::Piece& pc : pl.groups[g].pieces) {
      const MatmulPart& any = pl.parts[pc.holder[0]];
      const uint64_t run = (pc.m1 - pc.m0) * tsp::kResultVectors * (any.j1 - any.j0);
      for (size_t k = 0; k < pl.groups[g].nodes.size(); ++k) {
        staging[pc.holder[k]] += run * (pl.groups[g].nodes[k].size() - 1);
        if (k > 0) staging[pc.holder[0]] += run;
      }
    }
  // SRAM layout. Inputs in SRAM: all of the part's A (K tile by K tile) and
  // B tiles. Inputs from the host: two A slices (one in use, the next
  // arriving) and a ring of kTileSlots B tiles, reused as the MXMs and LWs
  // finish reading them.
  uint64_t top = 0;
  for (MatmulPart& p : pl.parts) {
    const uint64_t a = host ? 2 * M : uint64_t(p.t1 - p.t0) * M;
    const uint64_t b = (host ? kTileSlots : uint64_t(p.j1 - p.j0) * (p.t1 - p.t0)) * tsp::kTileVectors;
    const uint64_t c = uint64_t(p.j1 - p.j0) * M * tsp::kResultVectors;
    const uint64_t need = a + b + c + staging[idx(p)];
    // Every step is an LW and an MXM on each unit's queue: refuse what cannot
    // fit its instruction memory before building it.
    const uint64_t steps = uint64_t(p.t1 - p.t0) * (p.j1 - p.j0);
    if (2 * steps + 1 > m.chips[p.chip].imem)
      throw core::ConfigError(fmt::format(
          "matmul {}x{}x{} {}: {} would issue {} LW and MXM instructions on each MXM unit's queue, more than "
          "imem_instructions ({}); use more splits (--split col=C,row=R)",
          r.M, r.N, r.L, core::dtype_name(r.dtype), m.chips[p.chip].name, 2 * steps, m.chips[p.chip].imem));
    if (need > tsp::kVectors)
      throw core::ConfigError(fmt::format(
          "matmul {}x{}x{} {}: {} needs {} SRAM vectors (A {}, B {}, C {}, reduction staging {}), more than the {} "
          "of a TSP; use more splits (--split col=C,row=R){}",
          r.M, r.N, r.L, core::dtype_name(r.dtype), m.chips[p.chip].name, need, a, b, c, staging[idx(p)], tsp::kVectors,
          blockable ? ""
                    : ", or compute C in blocks of rows (-p sched.matmul_inputs=host -p sched.matmul_outputs=host, "
                      "no row-wise splits)"));
    p.a_vec = 0;
    p.b_vec = static_cast<uint32_t>(a);
    p.c_vec = static_cast<uint32_t>(a + b);
    p.sram_vectors = static_cast<uint32_t>(need);
    top = std::max(top, need);
  }
  eng.set_scratch_base(static_cast<uint32_t>(top));  // forwarding buffers of multi-hop routes above everything

  // Compute: per chip, A's rows over the units; every unit installs every
  // tile of the chip in turn, step by step.
  // last[part][j - j0][u]: issue cycle of the unit's final MXM into column tile j.
  std::vector<std::vector<std::vector<uint64_t>>> last(P);
  std::vector<uint32_t> units(P);
  for (MatmulPart& p : pl.parts) {
    const ChipSpec& chip = m.chips[p.chip];
    const uint32_t U = static_cast<uint32_t>(std::min<uint64_t>(eng.mxm_units(p.chip, r.dtype), M));
    if (U == 0) throw core::ConfigError(fmt::format("{}: no MXM units for {}", chip.name, core::dtype_name(r.dtype)));
    units[idx(p)] = U;
    pl.units = std::max(pl.units, U);
    last[idx(p)].assign(p.j1 - p.j0, std::vector<uint64_t>(U, 0));
    // The steps (t, j): column tile by column tile, K tile by K tile; from the
    // host in row order K tile by K tile instead (each A slice sent once).
    std::vector<std::pair<uint32_t, uint32_t>> steps;
    if (host && r.row_order) {
      for (uint32_t t = p.t0; t < p.t1; ++t)
        for (uint32_t j = p.j0; j < p.j1; ++j) steps.emplace_back(t, j);
    } else {
      for (uint32_t j = p.j0; j < p.j1; ++j)
        for (uint32_t t = p.t0; t < p.t1; ++t) steps.emplace_back(t, j);
    }
    uint64_t a_start[2] = {0, 0};         // host: start of each A slot's write (its vectors land after)
    uint64_t a_free[2] = {0, 0};          // host: end of the last read of an A slot (ps)
    uint64_t tile_free[kTileSlots] = {};  // host: end of the last read of a tile slot (ps)
    uint32_t a_loads = 0;
    int64_t a_t = -1;  // K tile in the A slot in use
    for (size_t k = 0; k < steps.size(); ++k) {
      const auto [t, j] = steps[k];
      const uint32_t tv = pl.tile_vectors(t), buf = k % 2;
      uint32_t tile = 0, a_base = 0, a_slot = 0;
      Ready tile_land;
      if (host) {
        if (!r.row_order || a_t != int64_t(t)) {  // the A slice of this step, again in column order
          a_slot = a_loads++ % 2;
          a_start[a_slot] = eng.host_write_start(p.chip, static_cast<uint32_t>(M), a_free[a_slot]);
          pl.dmas.push_back(MatmulDma{static_cast<uint32_t>(idx(p)), p.a_vec + static_cast<uint32_t>(a_slot * M),
                                      static_cast<uint32_t>(M), a_free[a_slot], false, t, j});
          a_t = t;
        } else {
          a_slot = (a_loads - 1) % 2;
        }
        a_base = p.a_vec + static_cast<uint32_t>(a_slot * M);
        const uint32_t ts = k % kTileSlots;
        tile = p.b_vec + ts * tsp::kTileVectors;
        tile_land = eng.host_write(p.chip, tv, tile_free[ts]);
        pl.dmas.push_back(MatmulDma{static_cast<uint32_t>(idx(p)), tile, tv, tile_free[ts], true, t, j});
      } else {
        tile = p.b_vec + ((j - p.j0) * (p.t1 - p.t0) + (t - p.t0)) * tsp::kTileVectors;
        a_base = p.a_vec + static_cast<uint32_t>((t - p.t0) * M);
      }
      for (uint32_t u = 0; u < U; ++u) {
        const uint64_t r0 = share(M, U, u), r1 = share(M, U, u + 1);
        // LW reads tile vector i at cycle c + i / rate, once it has landed.
        uint64_t c_lw = 0;
        for (uint32_t i = 0; i < tile_land.size(); ++i) {
          const uint64_t need = chip.clock.cycle_at_or_after(tile_land[i]);
          c_lw = std::max(c_lw, need > i / chip.lw_rate ? need - i / chip.lw_rate : 0);
        }
        const uint64_t ready = eng.lw(p.chip, c_lw, r.dtype, u, buf, tile, tv);
        ++pl.weight_loads;
        if (host) {
          const uint32_t ts = k % kTileSlots;  // read until the load ends
          tile_free[ts] = std::max(tile_free[ts], chip.clock.ps(ready - chip.lw_latency));
        }
        // MXM reads input row r0 + i at cycle c + i, once it has landed. Rows
        // landing at least two cycles apart (PCIe is far slower than one vector
        // per cycle) make the last row the binding one.
        uint64_t c_mx = 0;
        auto need_row = [&](uint64_t i) {
          const uint64_t need =
              chip.clock.cycle_at_or_after(eng.host_lands(p.chip, a_start[a_slot], static_cast<uint32_t>(r0 + i)));
          return need > i ? need - i : 0;
        };
        if (host && r1 > r0 && chip.pcie.ps(1) >= chip.clock.span_ps(0, 2))
          c_mx = need_row(r1 - r0 - 1);
        else if (host)
          for (uint64_t i = 0; i < r1 - r0; ++i) c_mx = std::max(c_mx, need_row(i));
        const uint32_t dst = p.c_vec + static_cast<uint32_t>(((j - p.j0) * M + r0) * tsp::kResultVectors);
        const uint64_t c = eng.mxm(p.chip, c_mx, r.dtype, u, buf, dst, a_base + static_cast<uint32_t>(r0),
                                   static_cast<uint32_t>(r1 - r0), t > p.t0);
        if (host) a_free[a_slot] = std::max(a_free[a_slot], chip.clock.ps(c + (r1 - r0)));
        pl.subops += r1 - r0;
        if (t + 1 == p.t1) {
          last[idx(p)][j - p.j0][u] = c;
          pl.compute_end_ps = std::max(pl.compute_end_ps, chip.clock.ps(c + (r1 - r0) - 1 + chip.mxm_latency));
        }
      }
    }
  }
  // Host inputs: the bandwidth a chip's PCIe link would need for its MXMs to
  // never wait (its bytes over the time its sub-operations take at full rate).
  std::vector<uint64_t> part_bytes(P, 0);
  for (const MatmulDma& d : pl.dmas) {
    pl.host_bytes += uint64_t(d.n) * tsp::kVectorBytes;
    part_bytes[d.part] += uint64_t(d.n) * tsp::kVectorBytes;
  }
  for (const MatmulPart& p : pl.parts) {
    const uint64_t subops = M * (p.t1 - p.t0) * (p.j1 - p.j0);
    const double secs = static_cast<double>(subops) / units[idx(p)] * m.chips[p.chip].clock.span_ps(0, 1000) / 1e15;
    if (host && secs > 0) pl.host_GBps_at_peak = std::max(pl.host_GBps_at_peak, part_bytes[idx(p)] / secs / 1e9);
  }
  // Peak of the first chip (a platform's chips are alike).
  pl.peak_macs_per_cycle = static_cast<double>(eng.mxm_units(pl.parts[0].chip, r.dtype)) * pl.K * tsp::kMxmColumns;

  // When each vector of a part's C rows [m0, m1) of column tile j is final.
  auto c_ready = [&](const MatmulPart& p, uint32_t j, uint64_t m0, uint64_t m1) {
    const ChipSpec& chip = m.chips[p.chip];
    const uint32_t U = units[idx(p)];
    Ready out;
    out.reserve((m1 - m0) * tsp::kResultVectors);
    for (uint64_t row = m0; row < m1; ++row) {
      uint32_t u = 0;
      while (share(M, U, u + 1) <= row) ++u;
      const uint64_t t = chip.clock.ps(last[idx(p)][j - p.j0][u] + (row - share(M, U, u)) + chip.mxm_latency);
      for (uint32_t q = 0; q < tsp::kResultVectors; ++q) out.push_back(t);
    }
    return out;
  };
  auto c_addr = [&](const MatmulPart& p, uint32_t j, uint64_t row) {
    return p.c_vec + static_cast<uint32_t>(((j - p.j0) * M + row) * tsp::kResultVectors);
  };

  // Reduction.
  Router router(m);
  std::vector<uint64_t> stage_next(P);
  for (const MatmulPart& p : pl.parts) stage_next[idx(p)] = p.sram_vectors - staging[idx(p)];
  auto stage = [&](uint32_t part, uint32_t n) {
    const uint64_t a = stage_next[part];
    stage_next[part] += n;
    return static_cast<uint32_t>(a);
  };
  // acc[i] += x[i] on `part`'s chip once both are ready: one ADD burst.
  auto add_into = [&](const MatmulPart& h, uint32_t acc, Ready& acc_ready, uint32_t x, const Ready& x_ready) {
    const ChipSpec& chip = m.chips[h.chip];
    const uint32_t n = static_cast<uint32_t>(acc_ready.size());
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t need = chip.clock.cycle_at_or_after(std::max(acc_ready[i], x_ready[i]));
      c = std::max(c, need > i ? need - i : 0);
    }
    c = eng.add(h.chip, c, acc_dt, acc, acc, x, n);
    for (uint32_t i = 0; i < n; ++i) acc_ready[i] = chip.clock.ps(c + i + chip.add_latency);
  };
  // The reduction's transfers of one step (all groups' pieces of one column
  // tile: first inside the nodes, then between them), each a run of n
  // vectors to a staging buffer on `to`. They are booked together, chunk by
  // chunk in turn, each chunk of sched.chunk_vectors on the route where it
  // lands first given everything already booked: the minimal route or a
  // detour (inside a node through another of its chips, between nodes --
  // a Dragonfly has one global cable between two nodes -- through any
  // other node), at most max_paths routes per transfer. So the whole
  // exchange spreads over idle cables without a transfer booked early
  // taking the cables the others need.
  struct Xfer {
    const MatmulPart* from;
    uint32_t src;
    const MatmulPart* to;
    uint32_t n;
    Ready ready;
    uint32_t dst = 0;  ///< staging buffer on `to`
    Ready landed;
  };
  struct Candidates {
    std::vector<Route> routes;
    std::vector<uint64_t> latency;  // of each route on idle hardware (ps)
  };
  std::map<std::pair<uint32_t, uint32_t>, Candidates> routes_of;
  auto move_all = [&](std::vector<Xfer>& xs) {
    struct Progress {
      const Candidates* c;
      std::vector<size_t> taken;  // routes used so far, at most max_paths
      uint32_t off = 0;
    };
    std::vector<Progress> pr(xs.size());
    for (size_t x = 0; x < xs.size(); ++x) {
      Xfer& t = xs[x];
      t.dst = stage(static_cast<uint32_t>(idx(*t.to)), t.n);
      t.landed.assign(t.n, 0);
      pl.reduced_vectors += t.n;
      Candidates& c = routes_of[{t.from->chip, t.to->chip}];
      if (c.routes.empty()) {
        if (m.chips[t.from->chip].node == m.chips[t.to->chip].node) {
          c.routes = router.candidates(t.from->chip, t.to->chip, 64);  // through the node's other chips
        } else {
          c.routes = router.via_nodes(t.from->chip, t.to->chip);
        }
        for (const Route& rt : c.routes) c.latency.push_back(router.latency(rt));
      }
      pr[x].c = &c;
    }
    const uint32_t chunk = std::max<uint32_t>(1, r.chunk_vectors), paths = std::max<uint32_t>(1, r.max_paths);
    // Round robin over the transfers, one chunk each. A detour is taken only
    // if it lands earlier by more than half the chunk's serialization per
    // cable it adds: the time it takes from the transfers booked after it.
    for (bool left = true; left;) {
      left = false;
      for (size_t x = 0; x < xs.size(); ++x) {
        Xfer& t = xs[x];
        Progress& p = pr[x];
        if (p.off == t.n) continue;
        const uint32_t k = std::min(chunk, t.n - p.off);
        const Ready part(t.ready.begin() + p.off, t.ready.begin() + p.off + k);
        const bool more = p.taken.size() < paths;
        const size_t shortest = p.c->routes.front().hops.size();
        size_t best = 0;
        uint64_t best_ps = UINT64_MAX;
        const uint64_t last_ready = part.empty() ? 0 : *std::max_element(part.begin(), part.end());
        for (size_t i = 0; i < (more ? p.c->routes.size() : p.taken.size()); ++i) {
          const size_t route = more ? i : p.taken[i];
          const Route& rt = p.c->routes[route];
          const uint64_t extra = rt.hops.size() > shortest ? rt.hops.size() - shortest : 0;
          const uint64_t penalty = extra * m.chips[rt.hops[0].chip].ports[rt.hops[0].port].out.rate.ps(k) / 2;
          // No route lands its last vector before that vector is ready plus the route's idle latency.
          if (best_ps != UINT64_MAX && last_ready + p.c->latency[route] + penalty >= best_ps) continue;
          const uint64_t cost = eng.lands(rt, k, part) + penalty;
          if (cost < best_ps) best_ps = cost, best = route;
        }
        if (std::find(p.taken.begin(), p.taken.end(), best) == p.taken.end()) p.taken.push_back(best);
        const Route& route = p.c->routes[best];
        pl.max_hops = std::max<uint32_t>(pl.max_hops, static_cast<uint32_t>(route.hops.size()));
        const Ready got = eng.send(route, t.src + p.off, {Engine::Chunk{t.dst + p.off, k}}, k, part);
        std::copy(got.begin(), got.end(), t.landed.begin() + p.off);
        p.off += k;
        left = left || p.off < t.n;
      }
    }
  };
  // C back to the host, each run of rows as soon as it is final.
  auto to_host = [&](const MatmulPart& h, uint32_t j, uint64_t m0, uint64_t m1, const Ready& ready) {
    const ChipSpec& chip = m.chips[h.chip];
    const uint64_t final_ps = *std::max_element(ready.begin(), ready.end());
    const uint32_t n = static_cast<uint32_t>((m1 - m0) * tsp::kResultVectors);
    eng.to_host(h.chip, chip.clock.cycle_at_or_after(final_ps), c_addr(h, j, m0), n, c_addr(h, j, m0));
    pl.host_out_bytes += uint64_t(n) * tsp::kVectorBytes;
  };
  if (r.host_outputs && r.row == 1)
    for (const MatmulPart& p : pl.parts)
      for (uint32_t j = p.j0; j < p.j1; ++j)
        for (uint32_t u = 0; u < units[idx(p)]; ++u) {
          const uint64_t r0 = share(M, units[idx(p)], u), r1 = share(M, units[idx(p)], u + 1);
          if (r1 > r0) to_host(p, j, r0, r1, c_ready(p, j, r0, r1));
        }
  // Column tile by column tile of every group at once (the tiles' results
  // are final one after the other): each piece's sum inside every node, then
  // the other nodes' sums to the piece's holder in the largest node, added in
  // node order.
  uint32_t tiles = 0;
  for (uint32_t g = 0; g < r.col && r.row > 1; ++g)
    tiles = std::max(tiles, pl.parts[g * r.row].j1 - pl.parts[g * r.row].j0);
  for (uint32_t jj = 0; jj < tiles; ++jj) {
    struct Sum {
      uint32_t g, j;
      const MatmulGroup::Piece* pc;
      std::vector<Ready> sums;  // per node: when each vector of its sum is final
    };
    std::vector<Sum> work;
    for (uint32_t g = 0; g < r.col; ++g) {
      const MatmulPart& first = pl.parts[g * r.row];
      if (first.j0 + jj >= first.j1) continue;
      for (const MatmulGroup::Piece& pc : pl.groups[g].pieces) {
        Sum w{g, first.j0 + jj, &pc, {}};
        for (size_t k = 0; k < pl.groups[g].nodes.size(); ++k)
          w.sums.push_back(c_ready(pl.parts[pc.holder[k]], w.j, pc.m0, pc.m1));
        work.push_back(std::move(w));
      }
    }
    auto rows = [](const Sum& w) { return static_cast<uint32_t>((w.pc->m1 - w.pc->m0) * tsp::kResultVectors); };
    std::vector<Xfer> xs;
    for (const Sum& w : work)
      for (size_t k = 0; k < w.sums.size(); ++k)
        for (uint32_t member : pl.groups[w.g].nodes[k]) {
          if (member == w.pc->holder[k]) continue;
          const MatmulPart& from = pl.parts[member];
          xs.push_back(Xfer{&from,
                            c_addr(from, w.j, w.pc->m0),
                            &pl.parts[w.pc->holder[k]],
                            rows(w),
                            c_ready(from, w.j, w.pc->m0, w.pc->m1),
                            0,
                            {}});
        }
    move_all(xs);
    size_t x = 0;
    for (Sum& w : work)
      for (size_t k = 0; k < w.sums.size(); ++k)
        for (uint32_t member : pl.groups[w.g].nodes[k]) {
          if (member == w.pc->holder[k]) continue;
          const MatmulPart& h = pl.parts[w.pc->holder[k]];
          add_into(h, c_addr(h, w.j, w.pc->m0), w.sums[k], xs[x].dst, xs[x].landed);
          ++x;
        }
    xs.clear();
    for (const Sum& w : work)
      for (size_t k = 1; k < w.sums.size(); ++k) {
        const MatmulPart& hk = pl.parts[w.pc->holder[k]];
        xs.push_back(Xfer{&hk, c_addr(hk, w.j, w.pc->m0), &pl.parts[w.pc->holder[0]], rows(w), w.sums[k], 0, {}});
      }
    move_all(xs);
    x = 0;
    for (Sum& w : work) {
      const MatmulPart& h0 = pl.parts[w.pc->holder[0]];
      for (size_t k = 1; k < w.sums.size(); ++k, ++x)
        add_into(h0, c_addr(h0, w.j, w.pc->m0), w.sums[0], xs[x].dst, xs[x].landed);
      if (r.host_outputs) to_host(h0, w.j, w.pc->m0, w.pc->m1, w.sums[0]);
    }
  }
  pl.programs = eng.programs();
  pl.predicted_ps = eng.completion_ps();
  pl.bursts = eng.bursts();
  if (pl.blocks > 1) {
    // Every block is the first shifted by one period: the first block's
    // schedule ends (its last C vector in host memory) before the period,
    // and a period of a whole number of ps shifts every cycle edge alike.
    const core::Clock& clk = m.chips[pl.parts[0].chip].clock;
    for (const MatmulPart& p : pl.parts)
      if (m.chips[p.chip].clock.whole_ps_cycles() != clk.whole_ps_cycles() || m.chips[p.chip].clock.ps(1) != clk.ps(1))
        throw core::ConfigError("matmul in blocks of rows: every TSP of the job needs the same clock");
    const uint64_t step = clk.whole_ps_cycles(), block = clk.cycle_at_or_after(pl.predicted_ps) + 1;
    if (step > block / 100)
      throw core::ConfigError(fmt::format(
          "matmul in blocks of rows: at {} MHz a whole number of ps takes {} cycles, more than 1 % of a block "
          "({} cycles): blocks one period apart would idle; use a clock whose period divides into whole ps "
          "sooner (900 MHz: 9 cycles)",
          clk.mhz(), step, block));
    const uint64_t period = (block + step - 1) / step * step;
    if ((pl.blocks - 1) > tsp::kMaxLoopSpan / period)
      throw core::ConfigError(
          fmt::format("matmul in blocks of rows: {} blocks of {} cycles span more than the 2^40 cycles a LOOP covers",
                      pl.blocks, period));
    pl.block_period_ps = clk.ps(period) - clk.ps(0);
    for (const MatmulPart& p : pl.parts) {
      const uint64_t stride = uint64_t(p.j1 - p.j0) * M * tsp::kResultVectors;  // C's host vectors per block
      sw::Program& prog = pl.programs[p.chip];
      for (uint32_t q = 0; q < prog.queues.size(); ++q) {
        if (prog.queues[q].empty()) continue;
        tsp::Instr loop;
        loop.op = tsp::Op::LOOP;
        loop.count = static_cast<uint32_t>(pl.blocks - 1);
        loop.imm = period;
        loop.a = static_cast<uint32_t>(stride);
        prog.emit(q, loop);
        if (prog.queues[q].size() + 1 > m.chips[p.chip].imem)
          throw core::ConfigError(fmt::format("{}: queue {} needs {} instructions; imem_instructions is {}",
                                              m.chips[p.chip].name, q, prog.queues[q].size() + 1,
                                              m.chips[p.chip].imem));
      }
    }
    const uint64_t more = pl.blocks - 1;
    pl.predicted_ps += more * pl.block_period_ps;
    pl.compute_end_ps += more * pl.block_period_ps;
    pl.subops *= pl.blocks;
    pl.weight_loads *= pl.blocks;
    pl.host_bytes *= pl.blocks;
    pl.host_out_bytes *= pl.blocks;
  }
  return pl;
}

uint64_t MatmulPlan::c_vector(const MatmulPart& p, uint32_t j, uint64_t m) const {
  const uint64_t rows = block_rows ? block_rows : req.M, b = m / rows;
  return p.c_vec + b * uint64_t(p.j1 - p.j0) * rows * tsp::kResultVectors +
         ((j - p.j0) * rows + (m - b * rows)) * tsp::kResultVectors;
}

}  // namespace fabricvp::sched
