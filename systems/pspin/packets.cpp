#include "systems/pspin/packets.h"
#include "models/core/output_file.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/pspin/input_buffer.h"

namespace fabricvp::pspin {

namespace {

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }

uint64_t ns_to_ps(double ns) { return static_cast<uint64_t>(std::llround(ns * 1000.0)); }

}  // namespace

std::vector<Packet> generate(const GeneratorOptions& o) {
  if (o.packet_bytes < 28)
    throw core::ConfigError(
        fmt::format("--packet-bytes {}: a packet holds at least its 28 bytes of headers", o.packet_bytes));
  if (o.packet_bytes > 65535)
    throw core::ConfigError(
        fmt::format("--packet-bytes {}: the IPv4 length field holds at most 65535", o.packet_bytes));
  if (o.messages == 0 || o.packets == 0) throw core::ConfigError("--messages and --packets must be at least 1");
  if (o.messages > 1024)
    throw core::ConfigError(fmt::format("--messages {}: message ids have 10 bits (at most 1024)", o.messages));
  if (o.fill != "zero" && o.fill != "seq" && o.fill != "random")
    throw core::ConfigError(fmt::format("--fill {}: expected zero, seq or random", o.fill));
  if (o.ports && o.packets % o.ports)
    throw core::ConfigError(
        fmt::format("--ports {}: must divide --packets {} (each port sends the same count)", o.ports, o.packets));
  if (!o.ports && o.stagger) throw core::ConfigError("--stagger staggers the ports: give --ports");
  std::mt19937_64 rng(o.seed);
  std::vector<Packet> out;
  uint64_t t = 0;
  for (uint32_t m = 0; m < o.messages; ++m) {
    if (m > 0) t += ns_to_ps(o.message_gap_ns);
    for (uint32_t k = 0; k < o.packets; ++k) {
      Packet p;
      p.msg = m;
      p.index = k;
      p.eom = k + 1 == o.packets;
      p.offered_ps = t;
      t += ns_to_ps(o.packet_gap_ns);
      p.bytes.assign(o.packet_bytes, 0);
      p.bytes[0] = 0x50;  // PsPIN's ip_hdr_t: version (low nibble) 0, ihl (high nibble) 5
      put16(p.bytes, 2, static_cast<uint16_t>(o.packet_bytes));
      p.bytes[8] = 64;  // ttl
      p.bytes[9] = 17;  // UDP
      put32(p.bytes, 12, m);
      put32(p.bytes, 16, 0);
      put16(p.bytes, 20, static_cast<uint16_t>(9000 + m));
      put16(p.bytes, 22, 9000);
      put16(p.bytes, 24, static_cast<uint16_t>(o.packet_bytes - 20));
      const uint32_t words = (o.packet_bytes - 28) / 4;
      for (uint32_t w = 0; w < words; ++w) {
        uint32_t v = 0;
        if (o.fill == "seq") v = (m * o.packets + k) * words + w;
        if (o.fill == "random") v = static_cast<uint32_t>(rng());
        put32(p.bytes, 28 + 4 * w, v);
      }
      for (uint32_t b = 28 + 4 * words; b < o.packet_bytes; ++b)
        p.bytes[b] = o.fill == "random" ? static_cast<uint8_t>(rng()) : o.fill == "seq" ? static_cast<uint8_t>(b) : 0;
      out.push_back(std::move(p));
    }
  }
  if (!o.ports) return out;
  // Each port's packets in the order it sends them: from message p x stagger on, packets p, p + ports, ...
  std::vector<Packet> by_port;
  by_port.reserve(out.size());
  const uint32_t per_port = o.packets / o.ports;
  for (uint32_t j = 0; j < o.messages; ++j)
    for (uint32_t p = 0; p < o.ports; ++p) {
      const uint32_t m = staggered_message(j, p, o.stagger, o.messages);
      for (uint32_t r = 0; r < per_port; ++r) {
        Packet q = out[size_t(m) * o.packets + p + r * o.ports];
        q.port = p;
        q.offered_ps = 0;
        by_port.push_back(std::move(q));
      }
    }
  return by_port;
}

std::vector<Packet> read_pcap(const std::string& path, uint32_t per_message, double gap_ns, double message_gap_ns) {
  return parse_pcap(core::read_input_file(path, "packet capture", core::kBinaryInputLimit), path, per_message, gap_ns,
                    message_gap_ns);
}

std::vector<Packet> parse_pcap(const std::string& f, const std::string& path, uint32_t per_message, double gap_ns,
                               double message_gap_ns) {
  auto fail = [&](const std::string& why) { return core::ConfigError(fmt::format("{}: {}", path, why)); };
  if (f.size() < 24) throw fail("too short for a pcap header");
  uint32_t magic;
  std::memcpy(&magic, f.data(), 4);
  bool swap = false, nano = false;
  if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du) {
    nano = magic == 0xa1b23c4du;
  } else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u) {
    swap = true;
    nano = magic == 0x4d3cb2a1u;
  } else {
    throw fail(fmt::format("magic 0x{:08x} is not a pcap file's (pcapng is not read)", magic));
  }
  auto rd32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, &f[at], 4);
    return swap ? __builtin_bswap32(v) : v;
  };
  const uint32_t linktype = rd32(20) & 0x0fffffff;
  if (linktype != 101 && linktype != 228 && linktype != 1)
    throw fail(fmt::format("link type {}: raw IPv4 (101, 228) or Ethernet (1) expected", linktype));
  (void)nano;
  if (per_message == 0) throw core::ConfigError("--packets must be at least 1");
  std::vector<Packet> out;
  size_t at = 24;
  uint64_t t = 0;
  while (at < f.size()) {
    if (at + 16 > f.size()) throw fail(fmt::format("packet record {} is cut short", out.size()));
    const uint32_t incl = rd32(at + 8);
    if (at + 16 + incl > f.size()) throw fail(fmt::format("packet {} is cut short", out.size()));
    std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(f.data()) + at + 16,
                               reinterpret_cast<const uint8_t*>(f.data()) + at + 16 + incl);
    at += 16 + incl;
    if (linktype == 1) {
      if (bytes.size() < 14) throw fail(fmt::format("packet {} is shorter than an Ethernet header", out.size()));
      bytes.erase(bytes.begin(), bytes.begin() + 14);
    }
    if (bytes.size() < 28)
      throw fail(fmt::format("packet {} has {} bytes, fewer than IPv4 + UDP headers", out.size(), bytes.size()));
    if (bytes.size() > 65535)
      throw fail(fmt::format("packet {} has {} bytes: an IPv4 packet holds at most 65535", out.size(), bytes.size()));
    Packet p;
    p.msg = static_cast<uint32_t>(out.size() / per_message);
    p.index = static_cast<uint32_t>(out.size() % per_message);
    if (p.index == 0 && p.msg > 0) t += ns_to_ps(message_gap_ns);
    p.offered_ps = t;
    t += ns_to_ps(gap_ns);
    p.bytes = std::move(bytes);
    out.push_back(std::move(p));
  }
  if (out.empty()) throw fail("no packets");
  for (size_t i = 0; i < out.size(); ++i) out[i].eom = i + 1 == out.size() || out[i + 1].msg != out[i].msg;
  return out;
}

void write_pcap(const std::string& path, const std::vector<EgressPacket>& packets) {
  core::OutputFile out(path, "capture", true);
  auto w32 = [&](uint32_t v) { out.write(&v, 4); };
  auto w16 = [&](uint16_t v) { out.write(&v, 2); };
  w32(0xa1b23c4du);  // nanosecond timestamps
  w16(2);
  w16(4);
  w32(0);
  w32(0);
  w32(65535);
  w32(228);  // LINKTYPE_IPV4
  for (const EgressPacket& p : packets) {
    const uint64_t ns = p.time_ps / 1000;
    w32(static_cast<uint32_t>(ns / 1000000000ull));
    w32(static_cast<uint32_t>(ns % 1000000000ull));
    w32(static_cast<uint32_t>(p.bytes.size()));
    w32(static_cast<uint32_t>(p.bytes.size()));
    out.write(p.bytes.data(), p.bytes.size());
  }
  out.close();
}

}  // namespace fabricvp::pspin
