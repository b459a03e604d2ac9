// The Matrix Market reader (Cholesky's --matrix): a file is read into a dense
// matrix or refused naming the file and line; what reads has its declared
// size, finite values, and a symmetric file's two triangles equal.
#include <cmath>

#include "fuzz.h"
#include "models/core/matrix_market.h"

using namespace fabricvp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  core::MatrixMarket m;
  try {
    m = core::parse_matrix_market(fuzz::text(data, size), "fuzz.mtx", 256);
  } catch (const core::ConfigError&) {
    return 0;
  }
  fuzz::require(m.rows >= 1 && m.cols >= 1 && m.rows <= 256 && m.cols <= 256, "a matrix that reads has a bounded size");
  fuzz::require(m.values.size() == m.rows * m.cols, "every element is held");
  for (float v : m.values) fuzz::require(std::isfinite(v), "every value is finite");
  if (m.symmetric)
    for (uint64_t c = 0; c < m.cols; ++c)
      for (uint64_t r = c; r < m.rows; ++r) fuzz::require(m.at(r, c) == m.at(c, r), "a symmetric file is symmetric");
  return 0;
}
