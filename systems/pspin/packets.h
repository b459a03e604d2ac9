// The packet generator of the PsPIN platform (the counterpart of PsPIN's
// generic driver) and the pcap files it reads and the switch writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/pspin/switch.h"

namespace fabricvp::pspin {

struct GeneratorOptions {
  uint32_t messages = 1;
  uint32_t packets = 32;         // per message
  uint32_t packet_bytes = 1024;  // headers included
  double packet_gap_ns = 20;
  double message_gap_ns = 40;
  std::string fill = "seq";  // zero | seq | random
  std::string pcap_in;       // packets from a pcap file instead (raw IPv4)
  uint32_t ports = 0;        // > 0: packet k of each message on port k mod ports, back to back at line rate
  uint32_t stagger = 0;      // with ports: port p starts at message p x stagger (mod messages)
  uint64_t seed = 1;
};

/// The packets PsPIN's generic driver sends: IPv4 (ihl 5) + UDP headers,
/// ip length = packet size, message id m for message m, payload filled as
/// asked; packet k of message m offered at (m * P + k) * gap + m * message gap.
/// With `ports` > 0 (Flare's hosts, one per port): packet k of every message
/// goes to port k mod ports, every packet is offered at 0 so that each port
/// receives its packets back to back at line rate, port p taking the
/// messages in order from message p x stagger on (mod messages; 0: all ports
/// in step, a message's packets arrive together).
std::vector<Packet> generate(const GeneratorOptions& o);

/// Raw IPv4 packets of a pcap file (link types 101 and 228; 1 = Ethernet,
/// whose 14-byte header is removed), `per_message` per message, in order.
std::vector<Packet> read_pcap(const std::string& path, uint32_t per_message, double gap_ns, double message_gap_ns);
/// The same from the file's bytes (`path` names it in errors; fuzz target).
std::vector<Packet> parse_pcap(const std::string& bytes, const std::string& path, uint32_t per_message, double gap_ns,
                               double message_gap_ns);

/// Writes packets as a pcap file (nanosecond timestamps, link type 228: IPv4).
void write_pcap(const std::string& path, const std::vector<EgressPacket>& packets);

}  // namespace fabricvp::pspin
