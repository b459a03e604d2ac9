// The pcap reader of the PsPIN packet generator: a capture is read into
// packets or refused naming the file; what reads has at least one packet,
// each holding IPv4 + UDP headers, in message order.
#include "fuzz.h"
#include "systems/pspin/packets.h"

using namespace fabricvp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<pspin::Packet> ps;
  const uint32_t per_message = size ? 1 + data[0] % 8 : 1;
  try {
    ps = pspin::parse_pcap(fuzz::text(data, size), "fuzz.pcap", per_message, 20.0, 40.0);
  } catch (const core::ConfigError&) {
    return 0;
  }
  fuzz::require(!ps.empty(), "a capture that reads has packets");
  for (size_t i = 0; i < ps.size(); ++i) {
    fuzz::require(ps[i].bytes.size() >= 28, "every packet holds IPv4 + UDP headers");
    fuzz::require(ps[i].msg == i / per_message && ps[i].index == i % per_message, "packets keep their order");
    fuzz::require(i == 0 || ps[i].offered_ps >= ps[i - 1].offered_ps, "offer times do not go back");
  }
  fuzz::require(ps.back().eom, "the last packet ends its message");
  return 0;
}
