// Matrix Market files (the NIST exchange format most sparse and dense test
// matrices are published in, e.g. the SuiteSparse collection): real or
// integer matrices in coordinate or array form, general or symmetric, read
// into a dense binary32 matrix. Every malformed or unsupported line is a
// ConfigError naming the file and line: a wrong banner, a size line that is
// not two or three whole numbers, an index out of range, an entry above the
// diagonal of a symmetric file, an entry given twice, a value that is not a
// number or lies outside binary32's range, too few or too many entries.
// Complex, pattern, skew-symmetric and Hermitian files are refused with the
// reason (nothing here can use them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabricvp::core {

struct MatrixMarket {
  uint64_t rows = 0, cols = 0;
  bool symmetric = false;     ///< the banner says symmetric: the file held the lower triangle
  std::vector<float> values;  ///< dense, column-major (element (r, c) at c * rows + r); a symmetric file's
                              ///< upper triangle mirrored; entries a coordinate file leaves out are 0
  float at(uint64_t r, uint64_t c) const { return values[c * rows + r]; }
};

/// Parse the text of a Matrix Market file (`path` names it in errors). Values
/// are rounded to the nearest binary32 (strtof). A matrix of more than
/// `max_side` rows or columns is refused on its size line, before anything
/// is allocated.
MatrixMarket parse_matrix_market(const std::string& text, const std::string& path, uint64_t max_side);
/// Read and parse a file (at most 1 GiB, core::read_input_file's checks).
MatrixMarket read_matrix_market(const std::string& path, uint64_t max_side);

}  // namespace fabricvp::core
