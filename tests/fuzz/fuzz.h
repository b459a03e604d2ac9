// libFuzzer targets (docs/reliability.md, "Fuzzing"): each feeds its input to
// one of fabricvp's readers of user files. A reader may refuse an input only
// with core::ConfigError (the error users see, naming the file and line); any
// other exception, a crash, a sanitizer report, a hang or a blown memory
// limit is a finding. Where a reader's output can be written back (assembly,
// ASTRA-sim text), the target also checks that it reads back the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "models/core/config.h"

namespace fabricvp::fuzz {

/// A property a reader's result must have; stops the fuzzer with `what`.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", what);
  std::abort();
}

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace fabricvp::fuzz
