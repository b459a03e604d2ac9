#include "models/pspin/input_buffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fabricvp::pspin {

namespace {

// The most of `events` (time, +1 or -1) at once; at equal times departures count first.
uint64_t peak_of(std::vector<std::pair<uint64_t, int>>& events) {
  std::sort(events.begin(), events.end());
  int64_t now = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, now += e.second);
  return static_cast<uint64_t>(peak);
}

}  // namespace

InputBufferModel::Result InputBufferModel::solve() const {
  if (ports == 0 || messages == 0 || per_port == 0 || clusters == 0 || cores == 0 || gap_ps == 0 || period_ps == 0 ||
      service_cycles == 0)
    throw std::invalid_argument(fmt::format(
        "input-buffer model: ports {}, messages {}, packets per port {}, clusters {}, cores {}, the line-rate gap "
        "{} ps, the clock period {} ps and the service time {} cycles must all be positive",
        ports, messages, per_port, clusters, cores, gap_ps, period_ps, service_cycles));
  if (place_cycles > ready_cycles)
    throw std::invalid_argument("input-buffer model: a packet is ready for a core after its cluster takes it");
  struct Packet {
    uint64_t arrival;
    uint32_t cluster;
  };
  std::vector<Packet> packets;
  packets.reserve(size_t(ports) * messages * per_port);
  // Port p's i-th packet arrives at (i + 1) x gap; in step j it sends message (j + p x stagger) mod messages.
  for (uint32_t j = 0; j < messages; ++j)
    for (uint32_t p = 0; p < ports; ++p) {
      const uint32_t m = staggered_message(j, p, stagger, messages);
      for (uint32_t r = 0; r < per_port; ++r)
        packets.push_back({(uint64_t(j) * per_port + r + 1) * gap_ps, m % clusters});
    }
  std::stable_sort(packets.begin(), packets.end(),
                   [](const Packet& a, const Packet& b) { return a.arrival < b.arrival; });

  // Each cluster serves its packets first come first served on the first free of its cores.
  using FreeAt = std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>>;
  std::vector<FreeAt> free_at(clusters);
  for (FreeAt& f : free_at)
    for (uint32_t k = 0; k < cores; ++k) f.push(0);
  std::vector<std::pair<uint64_t, int>> buffer;
  std::vector<std::vector<std::pair<uint64_t, int>>> held(clusters);
  buffer.reserve(2 * packets.size());
  Result r;
  double wait = 0, residence = 0, edge = 0;
  r.first_arrival_ps = packets.front().arrival;
  for (const Packet& p : packets) {
    FreeAt& f = free_at[p.cluster];
    const uint64_t cycle = (p.arrival + period_ps - 1) / period_ps;  // the first clock edge at or after it
    const uint64_t ready = cycle + ready_cycles, start = std::max(ready, f.top());
    f.pop();
    const uint64_t leave = start + service_cycles, leave_ps = leave * period_ps;
    f.push(leave);
    wait += double((start - ready) * period_ps);
    edge += double(cycle * period_ps - p.arrival);
    residence += double(leave_ps - p.arrival);
    r.last_departure_ps = std::max(r.last_departure_ps, leave_ps);
    buffer.emplace_back(p.arrival, +1);
    buffer.emplace_back(leave_ps, -1);
    held[p.cluster].emplace_back((cycle + place_cycles) * period_ps, +1);
    held[p.cluster].emplace_back(leave_ps, -1);
  }
  r.peak_packets = peak_of(buffer);
  for (auto& h : held) r.peak_cluster_tasks = std::max(r.peak_cluster_tasks, peak_of(h));
  r.spills = r.peak_cluster_tasks > hers_per_cluster;
  r.mean_wait_ps = wait / double(packets.size());
  r.mean_edge_ps = edge / double(packets.size());
  r.mean_packets = residence / double(r.last_departure_ps - r.first_arrival_ps);
  return r;
}

}  // namespace fabricvp::pspin
