#include "systems/torus/system.h"

#include <fmt/format.h>

#include "models/ace/rtl_datapath.h"

namespace fabricvp::torus {

Choices::Choices()
    : ace_model("ace", "model", "tlm", "",
                "collective engine: tlm (ACE, C++ datapath), rtl (ACE, verilated datapath), none (baseline: NPU cores "
                "reduce through memory)",
                {"tlm", "rtl", "none"}),
      algorithm("collective", "algorithm", "enhanced", "",
                "hierarchical all-reduce: enhanced (4 phases: RS local, AR vertical, AR horizontal, AG local) or "
                "baseline (3 phases: AR local, vertical, horizontal) (seed 001 §II-D)",
                {"enhanced", "baseline"}),
      chunk_kib("collective", "chunk_kib", 16, "KiB",
                "a collective is split into chunks of this size, pipelined within and across phases", 1u, 1u << 20),
      align_elems("collective", "align_elems", 64, "elements",
                  "segments are split on multiples of this many elements (ACE: a multiple of alu_lanes)", 1u,
                  1u << 20) {}

System::System(const sc_core::sc_module_name& nm)
    : core::Module(nm, "system"),
      description(this, "description", "", "", "one line describing the platform (printed in the summary)"),
      topology(this, "topology", "torus", "", "topology generator", {"torus"}),
      local_npus(this, "local_npus", 4, "NPUs", "NPUs per package (local dimension ring)", 1u, 64u),
      vertical_npus(this, "vertical_npus", 4, "packages", "packages per vertical ring", 1u, 64u),
      horizontal_npus(this, "horizontal_npus", 4, "packages", "packages per horizontal ring", 1u, 64u),
      local_rings(this, "local_rings", 2, "rings", "unidirectional rings in the local dimension (alternating + / -)",
                  1u, 16u),
      vertical_rings(this, "vertical_rings", 4, "rings",
                     "unidirectional rings in the vertical dimension (2 bidirectional rings = 4)", 1u, 16u),
      horizontal_rings(this, "horizontal_rings", 4, "rings",
                       "unidirectional rings in the horizontal dimension (2 bidirectional rings = 4)", 1u, 16u),
      launcher("launcher") {
  shape.size = {local_npus.get(), vertical_npus.get(), horizontal_npus.get()};
  shape.rings = {local_rings.get(), vertical_rings.get(), horizontal_rings.get()};
  const std::string model = choices.ace_model.get();
  const uint32_t ports = shape.rings[0] + shape.rings[1] + shape.rings[2];
  for (uint32_t i = 0; i < shape.npus(); ++i) {
    npu::Npu::Attach attach;
    if (model != "none") {
      ace::Ace::DatapathFactory make;
      if (model == "rtl")
        make = [](const std::string& n) { return std::make_unique<ace::RtlDatapath>(n.c_str()); };
      else
        make = [](const std::string&) { return std::make_unique<ace::Datapath>(ace::rtl_geometry()); };
      attach = [this, make, model](npu::Npu& n) -> std::unique_ptr<core::Module> {
        auto a = std::make_unique<ace::Ace>("ace", n.id(), model, make);
        n.ace_cmd.bind(a->cmd);
        a->irq.bind(n.ace_irq);
        a->dma.bind(n.memory.dma);
        a->afi_tx.bind(n.from_ace);
        n.to_ace.bind(a->afi_rx);
        aces.push_back(a.get());
        return a;
      };
    }
    npus.push_back(std::make_unique<npu::Npu>(fmt::format("npu{}", i).c_str(), i, ports, attach));
  }
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

System::~System() {
  core::destroy_newest_first(links);
  aces.clear();
  core::destroy_newest_first(npus);
}

}  // namespace fabricvp::torus
