// The HAC network of a system (`sys.hac`), seed 000 §3.1-§3.2.
//
// Every chip's HAC/SAC (clock::HacCounter, held by the chip) is exchanged with its
// link peers every `exchange_cycles` local cycles as a link control code: a
// sideband of the C2C PHY that takes no vector slot, so it never changes the
// timing of data. A code sent at local cycle s leaves at the sender's clock
// edge s and is sampled into the receiver's clock domain at the first
// receiver edge at or after
//
//   arrival = edge(s) + Channel::latency_ps() + static offset (per direction)
//             + TX word alignment + elastic buffer + clock compensation + CDR jitter
//
// with the variable terms drawn per code from a seeded stream per link
// direction (docs/clocks.md: the physical sources and their parameters).
//
// Protocol, all in simulated hardware time:
//  1. Characterization (`calibration_iterations` round trips per cable): the A
//     end of each cable sends its HAC value, the B end reflects it
//     `turnaround_cycles` after sampling it, and A compares it with its own HAC:
//     latency = ((HAC_A - value) mod 252 + k * 252 - turnaround) / 2, with k
//     resolved from the cable's nominal latency. min/mean/max/std per cable are
//     seed 000 Table 2.
//  2. Alignment: a spanning tree (breadth first from `root` over live cables,
//     in cable order) gives every chip a parent. When a child samples its
//     parent's HAC value h, it compares h + L (the characterized mean) with its
//     own HAC; the mean difference over `filter_exchanges` codes, rounded and
//     limited to +-max_adjust, shortens or lengthens its next epoch. The child's HAC converges to within the link
//     jitter.
//  3. TRANSMIT: a notification code on one link, sampled like a HAC code and
//     handed to the receiving chip (POLL tests it at epoch boundaries).
//
// Events: one SC_METHOD for the whole network wakes at each distinct slot time
// (all chips with the same clock wake together) and processes every due
// chip's received codes and transmissions in closed form; nothing is
// allocated per code once the inboxes have grown. The exchange runs while any
// chip has scheduled work (or until run_for()'s horizon), so a simulation still
// ends when its programs end.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/c2c/cable.h"
#include "models/c2c/link.h"
#include "models/core/module.h"
#include "models/core/timed_queue.h"
#include "models/tsp/tsp.h"

namespace fabricvp::hac {

using c2c::Cable;

/// Characterized latency of one cable, in core cycles of its A end.
struct LinkStats {
  std::string link;
  uint64_t n = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  double mean = 0, m2 = 0;
  void add(double x);
  double std() const;  ///< population standard deviation
};

class Network : public core::Module, public tsp::HacLink {
 public:
  SC_HAS_PROCESS(Network);
  Network(const sc_core::sc_module_name& nm, const std::vector<tsp::Tsp*>& chips, const std::vector<Cable>& cables,
          const std::vector<bool>& chip_failed);

  core::Param<std::string> exchange;
  core::Param<uint32_t> code_words;
  core::Param<uint32_t> exchange_cycles;
  core::Param<std::string> initial;
  core::Param<uint32_t> calibration_iterations;
  core::Param<uint32_t> max_adjust;
  core::Param<uint32_t> filter_exchanges;
  core::Param<std::string> root_chip;
  core::Param<uint32_t> turnaround_cycles;
  core::Param<double> word_ps;
  core::Param<uint32_t> elastic_words;
  core::Param<double> cc_probability;
  core::Param<uint32_t> cc_words;
  core::Param<double> cdr_jitter_ps;
  core::Param<double> training_skew_ps;

  // tsp::HacLink
  void transmit(tsp::Tsp& chip, uint32_t port, uint64_t cycle) override;
  void activity(tsp::Tsp& chip, int delta) override;

  /// Whether HAC codes are exchanged in this run (exchange: on, or auto with a
  /// chip whose oscillator is not nominal or a random initial HAC phase).
  bool exchanging() const { return m_on; }
  /// Keep the exchange running for `exchanges` more slots from now even if no
  /// chip has work (for characterization and convergence studies).
  void run_for(uint64_t exchanges);
  /// Per cable: the characterization so far.
  const std::vector<LinkStats>& link_stats() const { return m_stats; }
  /// True once every live cable has `calibration_iterations` samples.
  bool calibrated() const { return m_aligning; }

  // Spanning tree.
  uint32_t root() const { return m_root; }
  uint32_t height() const { return m_height; }
  /// Depth of a chip in the tree (-1: not reachable or failed).
  int32_t depth(uint32_t chip) const { return m_units[chip].depth; }
  /// Parent chip (-1 for the root and unreachable chips) and the child's port to it.
  int32_t parent(uint32_t chip) const;
  int32_t parent_port(uint32_t chip) const;
  /// Cable index between a chip and its parent (-1 if none).
  int32_t parent_cable(uint32_t chip) const;
  /// Children of a chip: (child chip, port on this chip).
  std::vector<std::pair<uint32_t, uint32_t>> children(uint32_t chip) const;
  /// Latency estimate of a cable in cycles (characterized mean, or nominal before).
  double latency_estimate(uint32_t cable) const;

  /// HAC offset of `chip` against the root at the current simulated time, in
  /// cycles of the chip, wrapped to [-126, 126).
  double offset_from_root(uint32_t chip);

  /// Initial program alignment (seed 000 §3.2) as queue-0 programs, one per
  /// chip (empty for chips outside the tree). The root waits until `begin`,
  /// DESKEWs, TRANSMITs to its children and waits the whole tree's epochs;
  /// every other chip POLLs its parent from `begin` on, TRANSMITs to its
  /// children at the boundary it was released on, and waits the rest. Every
  /// chip then issues NOTIFY at the same epoch boundary. `epochs` gets the
  /// number of epochs from the root's DESKEW boundary to that start.
  std::vector<std::vector<tsp::Instr>> alignment_programs(uint64_t begin, uint32_t& epochs) const;

  core::Counter slots, messages, reflections, notifications, adjustments, adjustment_cycles;
  core::Value<double> link_share_pct;

 private:
  enum Kind : uint8_t { kHac, kReflectReq, kReflectRet };
  struct Msg {
    uint64_t cycle;  // sample cycle at the receiver
    uint32_t dir;
    Kind kind;
    int64_t value;
  };
  /// One direction of a cable.
  struct Dir {
    uint32_t from, fport, to, tport, cable;
    const c2c::Channel* ch;
    double static_ps;
    uint64_t rng;
    double spare_normal;
    bool has_spare;
  };
  struct Unit {
    tsp::Tsp* chip = nullptr;
    bool alive = false;
    uint64_t slot = 0;  // next exchange slot (local cycle)
    std::vector<uint32_t> out;
    int32_t parent_dir = -1;
    int32_t depth = -1;
    std::vector<uint32_t> child_dirs;
    core::TimedHeap<Msg> inbox;  // by (sample cycle, network-wide posting order)
    int64_t err_sum = 0;         // alignment loop filter: errors summed over filter_exchanges parent codes
    uint32_t err_n = 0;
  };
  struct Cal {
    uint64_t requests = 0;
    double nominal_rtt = 0;  // cycles
  };

  void step();
  void ensure_running();
  bool running() const;
  void do_slot(uint32_t u);
  void receive(uint32_t u, const Msg& m, uint64_t now_cycle);
  void post(uint32_t dir, uint64_t send_ps, Kind kind, int64_t value);
  uint64_t arrival_ps(Dir& d, uint64_t send_ps);
  double uniform(Dir& d);
  double normal(Dir& d);
  void build_tree();

  std::vector<Unit> m_units;
  std::vector<Dir> m_dirs;
  std::vector<Cable> m_cables;
  std::vector<LinkStats> m_stats;
  std::vector<Cal> m_cal;
  std::vector<int32_t> m_port_dir;                        // chip * ports + port -> outgoing dir (-1: none)
  std::unordered_map<const tsp::Tsp*, uint32_t> m_index;  // chip -> index (lookups only, never iterated)
  uint32_t m_ports = 0;
  uint32_t m_root = 0, m_height = 0;
  uint32_t m_live_cables = 0, m_calibrated = 0;
  bool m_on = false, m_aligning = false, m_scheduled = false;
  int64_t m_active = 0;
  uint64_t m_until_ps = 0;
  uint64_t m_seq = 0;
  core::TimedHeap<uint32_t> m_sched;  // units by (slot time ps, unit)
  sc_core::sc_event m_wake;
};

}  // namespace fabricvp::hac
