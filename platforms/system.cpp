#include "platforms/system.h"

#include <fmt/format.h>

namespace fabricvp::platform {

Host::Host(const sc_core::sc_module_name& nm) : core::Module(nm, "host"), mem("mem") {}

void Host::access(size_t chip, uint64_t addr, void* data, uint64_t len, bool write) {
  tlm::tlm_generic_payload gp;
  gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(addr);
  gp.set_data_ptr(static_cast<unsigned char*>(data));
  gp.set_data_length(static_cast<unsigned int>(len));
  gp.set_streaming_width(static_cast<unsigned int>(len));
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  unsigned int n = mem[static_cast<int>(chip)]->transport_dbg(gp);
  if (n != len || gp.get_response_status() != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(fmt::format("host {} of {} bytes at 0x{:x} on chip {} failed", write ? "write" : "read",
                                         len, addr, chip));
}

void Host::write(size_t chip, uint64_t addr, const void* data, uint64_t len) {
  // Debug transport moves at most 4 GiB per call; chunk large transfers.
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (len) {
    uint64_t n = std::min<uint64_t>(len, 1u << 24);
    access(chip, addr, const_cast<uint8_t*>(p), n, true);
    p += n;
    addr += n;
    len -= n;
  }
}

void Host::read(size_t chip, uint64_t addr, void* data, uint64_t len) {
  uint8_t* p = static_cast<uint8_t*>(data);
  while (len) {
    uint64_t n = std::min<uint64_t>(len, 1u << 24);
    access(chip, addr, p, n, false);
    p += n;
    addr += n;
    len -= n;
  }
}

Node::Node(const sc_core::sc_module_name& nm, uint32_t tsps) : core::Module(nm, "node") {
  for (uint32_t i = 0; i < tsps; ++i) tsp.push_back(std::make_unique<tsp::Tsp>(fmt::format("tsp{}", i).c_str()));
  for (uint32_t i = 0; i < tsps; ++i)
    for (uint32_t j = i + 1; j < tsps; ++j)
      link.push_back(std::make_unique<c2c::Link>(fmt::format("link{}_{}", i, j).c_str(), tsp[i]->name(),
                                                 tsp[j]->name()));
}

System::System(const sc_core::sc_module_name& nm)
    : core::Module(nm, "system"),
      description(this, "description", "", "", "free text shown in the run summary"),
      topology(this, "topology", "groq_node", "", "topology generator", {"groq_node"}),
      tsps_per_node(this, "tsps_per_node", 8, "TSPs",
                    "TSPs in a node, all pairs directly linked (seed 000 §2.2: 8)", 2, 8),
      host("host") {
  node.push_back(std::make_unique<Node>("node0", tsps_per_node));
  Node& n = *node[0];
  for (auto& t : n.tsp) chips.push_back(t.get());
  uint32_t count = static_cast<uint32_t>(chips.size());
  for (uint32_t i = 0; i < count; ++i)
    if (chips[i]->local_ports < count - 1)
      throw core::ConfigError(fmt::format("{}: a node of {} TSPs needs {} local ports per chip, {} has local_ports = {}",
                                          name(), count, count - 1, chips[i]->name(), chips[i]->local_ports.get()));
  m_port.assign(count, std::vector<int>(count, -1));
  size_t l = 0;
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t j = i + 1; j < count; ++j) connect(i, j - 1, j, i, *n.link[l++]);
  for (auto* t : chips) host.mem.bind(t->ctrl);
}

void System::connect(uint32_t a, uint32_t pa, uint32_t b, uint32_t pb, c2c::Link& l) {
  tsp::Port& A = chips[a]->port(pa);
  tsp::Port& B = chips[b]->port(pb);
  A.tx.bind(l.a_tx);
  B.tx.bind(l.b_tx);
  l.a_to_b.bind_out(B.rx);
  l.b_to_a.bind_out(A.rx);
  A.attach(l.a_to_b, l.b_to_a, chips[b]->name());
  B.attach(l.b_to_a, l.a_to_b, chips[a]->name());
  m_port[a][b] = static_cast<int>(pa);
  m_port[b][a] = static_cast<int>(pb);
  wires.push_back(Wire{a, pa, b, pb, &l});
  links.push_back(&l);
}

int System::port_between(uint32_t a, uint32_t b) const { return m_port.at(a).at(b); }

std::vector<std::string> parameter_names() {
  std::vector<std::string> out;
  for (const auto* p : core::all_params()) out.push_back(p->name());
  return out;
}

}  // namespace fabricvp::platform
