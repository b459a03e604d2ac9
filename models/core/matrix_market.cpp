#include "models/core/matrix_market.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "models/core/config.h"
#include "models/core/input_file.h"

namespace fabricvp::core {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

/// Whitespace-separated tokens of one line.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& path) : m_text(text), m_path(path) {}

  /// The next line (without its end of line, '\r' dropped); false at the end.
  bool next(std::string_view& line) {
    if (m_pos >= m_text.size()) return false;
    const size_t e = std::min(m_text.find('\n', m_pos), m_text.size());
    line = std::string_view(m_text).substr(m_pos, e - m_pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    m_pos = e + 1;
    ++m_line;
    return true;
  }
  /// The next line that is not a comment and not blank.
  bool data(std::vector<std::string_view>& toks) {
    std::string_view line;
    while (next(line)) {
      if (!line.empty() && line[0] == '%') continue;
      toks = tokens(line);
      if (!toks.empty()) return true;
    }
    return false;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(fmt::format("{}:{}: {}", m_path, m_line, what));
  }
  const std::string& path() const { return m_path; }

  uint64_t whole(std::string_view t, const char* what) const {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size())
      fail(fmt::format("{} must be a whole number, got '{}'", what, t));
    return v;
  }
  float value(std::string_view t, bool integer) const {
    if (integer) {
      const std::string_view d = !t.empty() && t[0] == '+' ? t.substr(1) : t;
      int64_t v = 0;
      const auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
      if (ec == std::errc::result_out_of_range) fail(fmt::format("integer value '{}' is outside 64 bits", t));
      if (ec != std::errc() || p != d.data() + d.size())
        fail(fmt::format("an integer matrix's value must be a whole number, got '{}'", t));
      return static_cast<float>(v);
    }
    // strtof rounds the decimal to the nearest binary32 once; inf, nan and
    // hexadecimal forms are not Matrix Market numbers.
    const std::string s(t);
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E')
        fail(fmt::format("value '{}' is not a real number", t));
    char* end = nullptr;
    const float f = std::strtof(s.c_str(), &end);
    if (end != s.c_str() + s.size()) fail(fmt::format("value '{}' is not a real number", t));
    if (!std::isfinite(f)) fail(fmt::format("value '{}' is outside binary32's range", t));
    return f;
  }

 private:
  const std::string& m_text;
  std::string m_path;
  size_t m_pos = 0;
  uint64_t m_line = 0;
};

}  // namespace

MatrixMarket parse_matrix_market(const std::string& text, const std::string& path, uint64_t max_side) {
  Reader rd(text, path);
  std::string_view line;
  const char* banner = "'%%MatrixMarket matrix <coordinate|array> <real|integer> <general|symmetric>'";
  if (!rd.next(line)) throw ConfigError(fmt::format("{}: empty file, not a Matrix Market file", path));
  const std::vector<std::string_view> head = tokens(line);
  if (head.size() != 5 || head[0] != "%%MatrixMarket" || lower(head[1]) != "matrix")
    rd.fail(fmt::format("not a Matrix Market file: the first line must be {}", banner));
  const std::string format = lower(head[2]), field = lower(head[3]), sym = lower(head[4]);
  if (format != "coordinate" && format != "array")
    rd.fail(fmt::format("unknown format '{}' (coordinate or array)", head[2]));
  if (field == "complex" || field == "pattern")
    rd.fail(fmt::format("{} matrices are not read: the values must be real or integer", field));
  if (field != "real" && field != "double" && field != "integer")
    rd.fail(fmt::format("unknown field '{}' (real or integer)", head[3]));
  if (sym == "skew-symmetric" || sym == "hermitian")
    rd.fail(fmt::format("{} matrices are not read: general or symmetric", sym));
  if (sym != "general" && sym != "symmetric")
    rd.fail(fmt::format("unknown symmetry '{}' (general or symmetric)", head[4]));
  const bool coord = format == "coordinate", integer = field == "integer";

  MatrixMarket m;
  m.symmetric = sym == "symmetric";
  std::vector<std::string_view> t;
  if (!rd.data(t)) throw ConfigError(fmt::format("{}: ends before its size line", path));
  if (t.size() != (coord ? 3u : 2u))
    rd.fail(coord ? "the size line of a coordinate file is 'rows columns entries'"
                  : "the size line of an array file is 'rows columns'");
  m.rows = rd.whole(t[0], "rows");
  m.cols = rd.whole(t[1], "columns");
  if (m.rows == 0 || m.cols == 0) rd.fail(fmt::format("a {} x {} matrix has no elements", m.rows, m.cols));
  if (m.symmetric && m.rows != m.cols)
    rd.fail(fmt::format("a symmetric matrix is square, not {} x {}", m.rows, m.cols));
  if (m.rows > max_side || m.cols > max_side)
    rd.fail(fmt::format("a {} x {} matrix is larger than the {} x {} this reader holds", m.rows, m.cols, max_side,
                        max_side));
  const uint64_t stored = m.symmetric ? m.rows * (m.rows + 1) / 2 : m.rows * m.cols;
  const uint64_t entries = coord ? rd.whole(t[2], "entries") : stored;
  if (entries > stored)
    rd.fail(fmt::format("{} entries do not fit a {}{} x {} matrix ({} at most)", entries,
                        m.symmetric ? "symmetric " : "", m.rows, m.cols, stored));
  m.values.assign(m.rows * m.cols, 0.0f);
  std::vector<bool> seen(coord ? m.rows * m.cols : 0, false);
  uint64_t r = 0, c = 0;  // array: the next element's place
  for (uint64_t k = 0; k < entries; ++k) {
    if (!rd.data(t)) throw ConfigError(fmt::format("{}: ends after {} of its {} entries", path, k, entries));
    if (coord) {
      if (t.size() != 3) rd.fail("a coordinate entry is 'row column value'");
      r = rd.whole(t[0], "the row");
      c = rd.whole(t[1], "the column");
      if (r == 0 || r > m.rows || c == 0 || c > m.cols)
        rd.fail(fmt::format("entry ({}, {}) is outside the {} x {} matrix (indices start at 1)", r, c, m.rows, m.cols));
      --r, --c;
      if (m.symmetric && r < c)
        rd.fail(fmt::format("entry ({}, {}) is above the diagonal: a symmetric file holds the lower triangle", r + 1,
                            c + 1));
      if (seen[c * m.rows + r]) rd.fail(fmt::format("entry ({}, {}) is given again", r + 1, c + 1));
      seen[c * m.rows + r] = true;
    } else if (t.size() != 1) {
      rd.fail("an array entry is one value per line");
    }
    const float v = rd.value(coord ? t[2] : t[0], integer);
    m.values[c * m.rows + r] = v;
    if (m.symmetric) m.values[r * m.rows + c] = v;
    if (!coord && ++r == m.rows) {  // column-major; a symmetric array holds each column from its diagonal
      ++c;
      r = m.symmetric ? c : 0;
    }
  }
  if (rd.data(t)) rd.fail(fmt::format("more entries than the {} the size line gives", entries));
  return m;
}

MatrixMarket read_matrix_market(const std::string& path, uint64_t max_side) {
  return parse_matrix_market(read_input_file(path, "Matrix Market file", kBinaryInputLimit), path, max_side);
}

}  // namespace fabricvp::core
