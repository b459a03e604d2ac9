// The Matrix Market reader (models/core/matrix_market.h): the forms it reads,
// and every malformed or unsupported line refused naming the file and line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/matrix_market.h"

using namespace fabricvp;

namespace {

core::MatrixMarket parse(const std::string& text, uint64_t max = 1000) {
  return core::parse_matrix_market(text, "a.mtx", max);
}

std::string refusal(const std::string& text, uint64_t max = 1000) {
  try {
    parse(text, max);
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(MatrixMarket, ReadsASymmetricCoordinateFileIntoBothTriangles) {
  const core::MatrixMarket m = parse(
      "%%MatrixMarket matrix coordinate real symmetric\n"
      "% a comment\n"
      "\n"
      "3 3 4\n"
      "1 1 4.5\n"
      "3 1 -1e-2\n"
      "2 2 3\n"
      "3 3 0.1\n");
  EXPECT_EQ(m.rows, 3u);
  EXPECT_EQ(m.cols, 3u);
  EXPECT_TRUE(m.symmetric);
  EXPECT_EQ(m.at(0, 0), 4.5f);
  EXPECT_EQ(m.at(2, 0), -1e-2f);
  EXPECT_EQ(m.at(0, 2), -1e-2f);  // mirrored
  EXPECT_EQ(m.at(1, 0), 0.0f);    // left out: zero
  EXPECT_EQ(m.at(2, 2), 0.1f);    // the decimal rounded once to binary32
}

TEST(MatrixMarket, ReadsArrayFilesColumnMajorAndIntegerValues) {
  // A general array: every element, column by column; CRLF line ends and a
  // banner in capitals are the same file.
  const core::MatrixMarket g =
      parse("%%MatrixMarket MATRIX Array Integer General\r\n2 3\r\n1\r\n+2\r\n3\r\n4\r\n5\r\n-6\r\n");
  EXPECT_EQ(g.rows, 2u);
  EXPECT_EQ(g.cols, 3u);
  EXPECT_FALSE(g.symmetric);
  EXPECT_EQ(g.at(1, 0), 2.0f);
  EXPECT_EQ(g.at(0, 2), 5.0f);
  EXPECT_EQ(g.at(1, 2), -6.0f);
  // A symmetric array: each column from its diagonal down.
  const core::MatrixMarket s = parse("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
  const std::vector<float> want = {1, 2, 3, 2, 4, 5, 3, 5, 6};  // column-major, both triangles
  EXPECT_EQ(s.values, want);
}

TEST(MatrixMarket, MalformedFilesAreRefusedNamingTheLine) {
  const std::string coord = "%%MatrixMarket matrix coordinate real general\n";
  const std::string sym = "%%MatrixMarket matrix coordinate real symmetric\n";
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> cases = {
      {"", "a.mtx: empty file"},
      {"%MatrixMarket matrix coordinate real general\n1 1 0\n", "a.mtx:1: not a Matrix Market file"},
      {"%%MatrixMarket matrix coordinate real\n1 1 0\n", "a.mtx:1: not a Matrix Market file"},
      {"%%MatrixMarket matrix list real general\n1 1 0\n", "a.mtx:1: unknown format 'list'"},
      {"%%MatrixMarket matrix coordinate complex general\n1 1 0\n", "a.mtx:1: complex matrices are not read"},
      {"%%MatrixMarket matrix coordinate pattern general\n1 1 0\n", "a.mtx:1: pattern matrices are not read"},
      {"%%MatrixMarket matrix array real hermitian\n1 1\n", "a.mtx:1: hermitian matrices are not read"},
      {"%%MatrixMarket matrix array real skew-symmetric\n1 1\n", "a.mtx:1: skew-symmetric matrices are not read"},
      {coord + "% only comments\n", "a.mtx: ends before its size line"},
      {coord + "2 2\n", "a.mtx:2: the size line of a coordinate file is 'rows columns entries'"},
      {"%%MatrixMarket matrix array real general\n2 2 4\n", "a.mtx:2: the size line of an array file is"},
      {coord + "2 x 1\n", "a.mtx:2: columns must be a whole number, got 'x'"},
      {coord + "-2 2 1\n", "a.mtx:2: rows must be a whole number, got '-2'"},
      {coord + "0 2 0\n", "a.mtx:2: a 0 x 2 matrix has no elements"},
      {sym + "2 3 1\n", "a.mtx:2: a symmetric matrix is square, not 2 x 3"},
      {coord + "2000 2000 1\n", "a.mtx:2: a 2000 x 2000 matrix is larger than the 1000 x 1000 this reader holds"},
      {coord + "1 99999999999 1\n", "a 1 x 99999999999 matrix is larger than"},
      {"%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 99999999999999999999\n",
       "a.mtx:3: integer value '99999999999999999999' is outside 64 bits"},
      {coord + "2 2 5\n", "a.mtx:2: 5 entries do not fit a 2 x 2 matrix (4 at most)"},
      {sym + "2 2 4\n", "a.mtx:2: 4 entries do not fit a symmetric 2 x 2 matrix (3 at most)"},
      {coord + "2 2 2\n1 1 1\n", "a.mtx: ends after 1 of its 2 entries"},
      {coord + "2 2 1\n1 1\n", "a.mtx:3: a coordinate entry is 'row column value'"},
      {coord + "2 2 1\n3 1 1\n", "a.mtx:3: entry (3, 1) is outside the 2 x 2 matrix (indices start at 1)"},
      {coord + "2 2 1\n0 1 1\n", "a.mtx:3: entry (0, 1) is outside"},
      {sym + "2 2 1\n1 2 1\n", "a.mtx:3: entry (1, 2) is above the diagonal"},
      {coord + "2 2 2\n1 1 1\n% between\n1 1 2\n", "a.mtx:5: entry (1, 1) is given again"},
      {coord + "1 1 1\n1 1 abc\n", "a.mtx:3: value 'abc' is not a real number"},
      {coord + "1 1 1\n1 1 1.5x\n", "a.mtx:3: value '1.5x' is not a real number"},
      {coord + "1 1 1\n1 1 nan\n", "a.mtx:3: value 'nan' is not a real number"},
      {coord + "1 1 1\n1 1 0x1p3\n", "a.mtx:3: value '0x1p3' is not a real number"},
      {coord + "1 1 1\n1 1 1e39\n", "a.mtx:3: value '1e39' is outside binary32's range"},
      {coord + "1 1 1\n1 1 -\n", "a.mtx:3: value '-' is not a real number"},
      {"%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n",
       "a.mtx:3: an integer matrix's value must be a whole number, got '1.5'"},
      {"%%MatrixMarket matrix array real general\n1 2\n1 2\n", "a.mtx:3: an array entry is one value per line"},
      {coord + "1 1 1\n1 1 1\n1 1 1\n", "a.mtx:4: more entries than the 1 the size line gives"},
  };
  for (const Case& c : cases) {
    const std::string got = refusal(c.text);
    EXPECT_NE(got.find(c.want), std::string::npos) << "input:\n" << c.text << "\nwant: " << c.want << "\ngot: " << got;
  }
}

TEST(MatrixMarket, AFileThatIsNotThereOrNotAFileIsRefusedByName) {
  EXPECT_THROW(core::read_matrix_market("/nonexistent/a.mtx", 1000), core::ConfigError);
  try {
    core::read_matrix_market("/", 1000);
    FAIL() << "a directory was read";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/"), std::string::npos);
  }
}
