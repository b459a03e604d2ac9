// ASTRA-sim's inputs: the first byte picks the reader (workload text, the
// YAML workload form, system file text or JSON, network YAML or JSON), the
// rest is the file. A text workload that reads is written back
// (to_astra_text) and must read back to the same text.
#include "sw/training/astra.h"
#include "fuzz.h"
#include "sw/training/workload.h"

using namespace fabricvp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string in = fuzz::text(data + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0: {
        const training::Workload w = training::parse_astra_text_string(in, "fuzz.txt");
        const std::string back = training::to_astra_text(w);
        std::string again;
        try {
          again = training::to_astra_text(training::parse_astra_text_string(back, "written.txt"));
        } catch (const core::ConfigError& e) {
          std::fprintf(stderr, "%s\n--- written:\n%s\n", e.what(), back.c_str());
          fuzz::require(false, "a workload fabricvp writes reads back");
        }
        fuzz::require(again == back, "a written workload reads back the same");
        break;
      }
      case 1: training::parse_yaml_string(in, "fuzz.yaml"); break;
      case 2: training::astra::read_system_string(in, "fuzz.txt"); break;
      case 3: training::astra::read_system_string(in, "fuzz.json"); break;
      case 4: {
        const training::astra::Network n = training::astra::read_network_string(in, "fuzz.yml");
        training::astra::platform_yaml(n);
        break;
      }
      default: {
        const training::astra::Network n = training::astra::read_network_string(in, "fuzz.json");
        training::astra::platform_yaml(n);
        break;
      }
    }
  } catch (const core::ConfigError&) {
  }
  return 0;
}
