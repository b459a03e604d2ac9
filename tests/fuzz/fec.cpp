// The RS-FEC decoder's input: any received word (10-bit symbols) with any
// erasure list. The first byte picks the code (RS(528,514) or RS(544,514))
// and the mode:
//   arbitrary word: the decoder either leaves the word unchanged and says
//     uncorrectable, or returns a codeword, lists exactly the symbols it
//     changed, and changed no more than it can correct (2 errors + erasures
//     <= n - k);
//   corrupted codeword: a message from the input is encoded, and errors and
//     erasures within the code's power (2 v + e <= n - k) placed where the
//     input says; the decoder must return the sent codeword.
#include <algorithm>
#include <vector>

#include "fuzz.h"
#include "models/c2c/fec.h"

using namespace fabricvp;

namespace {

struct Input {
  const uint8_t* d;
  size_t n, at = 0;
  uint32_t byte() { return at < n ? d[at++] : 0; }
  uint16_t symbol() { return static_cast<uint16_t>((byte() << 8 | byte()) & 0x3ff); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  Input in{data, size};
  const uint32_t mode = in.byte();
  static c2c::RsCodec kp4(c2c::FecCode::kp4), kr4(c2c::FecCode::kr4);
  c2c::RsCodec& codec = mode & 1 ? kr4 : kp4;
  const int n = codec.n(), k = codec.k(), p = codec.parity();
  std::vector<uint16_t> word(static_cast<size_t>(n));
  std::vector<int> erasures;
  auto positions = [&](int count, std::vector<int>& out) {  // distinct positions, from the input
    std::vector<bool> used(static_cast<size_t>(n));
    for (int e : out) used[static_cast<size_t>(e)] = true;
    for (int c = 0; c < count; ++c) {
      int pos = static_cast<int>((in.byte() << 8 | in.byte()) % static_cast<uint32_t>(n));
      while (used[static_cast<size_t>(pos)]) pos = (pos + 1) % n;
      used[static_cast<size_t>(pos)] = true;
      out.push_back(pos);
    }
  };

  if (mode & 2) {  // a codeword with errors and erasures the code can correct
    std::vector<uint16_t> msg(static_cast<size_t>(k));
    for (uint16_t& s : msg) s = in.symbol();
    codec.encode(msg.data(), word.data());
    const std::vector<uint16_t> sent = word;
    const int e = static_cast<int>(in.byte() % static_cast<uint32_t>(p + 1));
    const int v = static_cast<int>(in.byte() % static_cast<uint32_t>((p - e) / 2 + 1));
    positions(e, erasures);
    std::vector<int> errors = erasures;
    positions(v, errors);
    for (int pos : erasures) word[static_cast<size_t>(pos)] = in.symbol();
    for (size_t i = erasures.size(); i < errors.size(); ++i) {
      uint16_t flip = in.symbol();
      if (flip == 0) flip = 1;
      word[static_cast<size_t>(errors[i])] ^= flip;
    }
    int changed = 0;
    for (int i = 0; i < n; ++i) changed += word[static_cast<size_t>(i)] != sent[static_cast<size_t>(i)];
    const c2c::DecodeResult r = codec.decode(word.data(), erasures.data(), e);
    fuzz::require(r.ok, "errors and erasures within the code's power are corrected");
    fuzz::require(word == sent, "the decoder returns the sent codeword");
    fuzz::require(r.corrected == changed, "the decoder counts the symbols it changed");
    return 0;
  }

  for (uint16_t& s : word) s = in.symbol();
  const int e = static_cast<int>(in.byte() % static_cast<uint32_t>(p + 3));  // a few past 2t: refused
  positions(e, erasures);
  const std::vector<uint16_t> received = word;
  const c2c::DecodeResult r = codec.decode(word.data(), erasures.data(), e);
  if (!r.ok) {
    fuzz::require(word == received, "an uncorrectable word is left unchanged");
    return 0;
  }
  fuzz::require(codec.is_codeword(word.data()), "a corrected word is a codeword");
  std::vector<int> diff;
  for (int i = 0; i < n; ++i)
    if (word[static_cast<size_t>(i)] != received[static_cast<size_t>(i)]) diff.push_back(i);
  fuzz::require(static_cast<int>(diff.size()) == r.corrected, "corrected counts the changed symbols");
  for (size_t i = 0; i < diff.size(); ++i)
    fuzz::require(r.positions[i] == diff[i], "positions lists the changed symbols, ascending");
  int errors = 0;  // changed symbols that were not erasures
  for (int pos : diff) errors += std::find(erasures.begin(), erasures.end(), pos) == erasures.end();
  fuzz::require(2 * errors + e <= p, "the decoder changes no more than the code can correct");
  return 0;
}
