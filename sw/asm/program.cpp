#include "sw/asm/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "models/core/config.h"
#include "models/core/input_file.h"

namespace fabricvp::sw {

using core::Dtype;
using tsp::Instr;
using tsp::Op;

size_t Program::instructions() const {
  size_t n = 0;
  for (const auto& q : queues) n += q.size();
  return n;
}

void Program::emit(uint32_t q, const Instr& in) {
  if (queues.size() <= q) queues.resize(q + 1);
  queues[q].push_back(in);
}

/// The largest NOP count or WAIT cycle: 2^40 cycles are 20 minutes at 900 MHz,
/// far inside 2^64 ps even summed over a long program.
constexpr uint64_t kMaxCycles = uint64_t(1) << 40;
/// Lines of a program once .rept blocks are expanded (memory stays ~100 bytes a line).
constexpr uint64_t kMaxLines = uint64_t(1) << 22;

namespace {

struct Parser {
  const std::string& file;
  int line;

  [[noreturn]] void fail(const std::string& msg) const {
    throw core::ConfigError(fmt::format("{}:{}: {}", file, line, msg));
  }

  static std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }

  uint64_t number(const std::string& tok, const char* what) const {
    std::string t = trim(tok);
    if (t.empty() || t[0] == '-') fail(fmt::format("expected {} (a non-negative integer), got '{}'", what, t));
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(t.c_str(), &end, 0);
    if (errno || !end || *end) fail(fmt::format("expected {} (a non-negative integer), got '{}'", what, t));
    return v;
  }

  uint32_t address(const std::string& tok) const {
    std::string t = trim(tok);
    if (!t.empty() && t[0] == '@') {
      uint64_t v = number(t.substr(1), "linear vector address");
      if (v >= tsp::kVectors) fail(fmt::format("address @{} is past the end of SRAM ({} vectors)", v, tsp::kVectors));
      return static_cast<uint32_t>(v);
    }
    if (t.size() < 2 || t.front() != '[' || t.back() != ']')
      fail(fmt::format("expected an address [hemisphere,slice,bank,offset] or @linear, got '{}'", t));
    std::vector<std::string> parts;
    std::stringstream ss(t.substr(1, t.size() - 2));
    std::string p;
    while (std::getline(ss, p, ',')) parts.push_back(p);
    if (parts.size() != 4) fail(fmt::format("address '{}' needs 4 fields [hemisphere,slice,bank,offset]", t));
    tsp::VecAddr a{static_cast<uint32_t>(number(parts[0], "hemisphere")),
                   static_cast<uint32_t>(number(parts[1], "slice")), static_cast<uint32_t>(number(parts[2], "bank")),
                   static_cast<uint32_t>(number(parts[3], "offset"))};
    if (!a.valid())
      fail(fmt::format("address {} out of range: hemisphere < {}, slice < {}, bank < {}, offset < {}", t,
                       tsp::kHemispheres, tsp::kSlices, tsp::kBanks, tsp::kOffsets));
    return a.linear();
  }

  uint16_t port(const std::string& tok) const {
    std::string t = trim(tok);
    if (!t.empty() && (t[0] == 'p' || t[0] == 'P')) t = t.substr(1);
    uint64_t v = number(t, "port");
    if (v > 0xffff) fail(fmt::format("port {} out of range", v));
    return static_cast<uint16_t>(v);
  }

  /// "mU.wB": MXM unit U, weight buffer B (0 or 1).
  void weights(const std::string& tok, tsp::Instr& ins) const {
    std::string t = trim(tok);
    const size_t dot = t.find('.');
    if (t.size() < 5 || (t[0] != 'm' && t[0] != 'M') || dot == std::string::npos || dot + 2 > t.size() ||
        (t[dot + 1] != 'w' && t[dot + 1] != 'W'))
      fail(fmt::format("expected an MXM unit and weight buffer mU.wB (e.g. m0.w1), got '{}'", t));
    const uint64_t u = number(t.substr(1, dot - 1), "MXM unit"), b = number(t.substr(dot + 2), "weight buffer");
    if (u > 0xffff) fail(fmt::format("MXM unit {} out of range", u));
    if (b > 1) fail(fmt::format("weight buffer {} out of range: a unit has buffers w0 and w1", b));
    ins.port = static_cast<uint16_t>(u);
    ins.c = static_cast<uint32_t>(b);
  }

  /// An optional operand "KEYWORD" or "KEYWORD value" (case-insensitive):
  /// the keyword, upper case, and the value's text (empty if none).
  static std::pair<std::string, std::string> keyword(const std::string& tok) {
    const std::string t = trim(tok);
    const size_t sp = t.find_first_of(" \t");
    std::string k = t.substr(0, sp);
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::toupper(c); });
    return {k, sp == std::string::npos ? std::string() : trim(t.substr(sp))};
  }

  uint32_t count(const std::string& tok) const {
    uint64_t v = number(tok, "vector count");
    if (v == 0 || v > tsp::kVectors) fail(fmt::format("vector count {} must be in [1, {}]", v, tsp::kVectors));
    return static_cast<uint32_t>(v);
  }
};

std::vector<std::string> split_operands(const std::string& s) {
  // Split on commas that are not inside [...].
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : s) {
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!Parser::trim(cur).empty() || !out.empty()) out.push_back(cur);
  return out;
}

}  // namespace

namespace {
/// Expand `.rept N` ... `.endr` blocks (not nested) into (source line, text) pairs.
std::vector<std::pair<int, std::string>> expand_rept(const std::string& text, const std::string& file) {
  std::vector<std::pair<int, std::string>> out, block;
  std::istringstream in(text);
  std::string raw;
  int line = 0, rept_line = 0;
  uint64_t count = 0;
  bool inside = false;
  auto directive = [](const std::string& src) {
    std::string s = Parser::trim(src.substr(0, std::min(src.find(';'), src.find('#'))));
    std::string w = s.substr(0, s.find_first_of(" \t"));
    std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return std::toupper(c); });
    return std::make_pair(w, s);
  };
  while (std::getline(in, raw)) {
    ++line;
    auto [word, s] = directive(raw);
    Parser P{file, line};
    if (word == ".REPT") {
      if (inside) P.fail(".rept blocks cannot be nested");
      count = P.number(s.substr(5), "repeat count");
      if (count > 10000000) P.fail(fmt::format(".rept {} is too many repetitions (max 10,000,000)", count));
      inside = true;
      rept_line = line;
      block.clear();
    } else if (word == ".ENDR") {
      if (!inside) P.fail(".endr without .rept");
      if (out.size() + count * block.size() > kMaxLines)
        Parser{file, rept_line}.fail(
            fmt::format(".rept {} of {} lines makes the program longer than {} lines", count, block.size(), kMaxLines));
      for (uint64_t k = 0; k < count; ++k) out.insert(out.end(), block.begin(), block.end());
      inside = false;
    } else {
      (inside ? block : out).emplace_back(line, raw);
      if (out.size() + block.size() > kMaxLines) P.fail(fmt::format("the program is longer than {} lines", kMaxLines));
    }
  }
  if (inside) Parser{file, rept_line}.fail(".rept without .endr");
  return out;
}
}  // namespace

Program assemble(const std::string& text, const std::string& file) {
  Program prog;
  long queue = -1;
  for (const auto& item : expand_rept(text, file)) {
    const int line = item.first;
    const std::string& raw = item.second;
    Parser P{file, line};
    std::string s = raw.substr(0, std::min(raw.find(';'), raw.find('#')));
    s = Parser::trim(s);
    if (s.empty()) continue;
    size_t sp = s.find_first_of(" \t");
    std::string mnem = s.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : Parser::trim(s.substr(sp));
    std::string upper = mnem;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    if (upper == ".TSP") {
      if (rest.empty()) P.fail(".tsp needs a chip name");
      prog.target = rest;
      continue;
    }
    if (upper == ".QUEUE") {
      queue = static_cast<long>(P.number(rest, "queue number"));
      if (queue > 4095) P.fail(fmt::format("queue {} out of range (max 4095)", queue));
      if (prog.queues.size() <= static_cast<size_t>(queue)) prog.queues.resize(static_cast<size_t>(queue) + 1);
      continue;
    }
    if (queue < 0) P.fail(fmt::format("'{}' before any .queue directive", mnem));
    std::vector<std::string> ops = split_operands(rest);
    auto want = [&](size_t n) {
      if (ops.size() != n) P.fail(fmt::format("{} takes {} operand(s), got {}", mnem, n, ops.size()));
    };
    Instr ins;
    ins.line = static_cast<uint32_t>(line);
    std::string base = upper.substr(0, upper.find('.'));
    std::string suffix = upper.find('.') == std::string::npos ? "" : upper.substr(upper.find('.') + 1);
    const bool vxm = base == "MUL" || base == "SUB" || base == "MAX" || base == "RSQRT" || base == "EXP" ||
                     base == "SPLAT" || base == "NARROW" || base == "WIDEN";
    if (!suffix.empty() && base != "ADD" && base != "LW" && base != "MXM" && base != "TRANSPOSE" && !vxm)
      P.fail(fmt::format("{} takes no type suffix", base));
    if (base == "NOP") {
      if (ops.empty()) {
        ins.imm = 1;
      } else {
        want(1);
        ins.imm = P.number(ops[0], "cycle count");
        if (ins.imm == 0) P.fail("NOP needs at least 1 cycle");
        if (ins.imm > kMaxCycles)
          P.fail(fmt::format("NOP {}: at most 2^40 cycles (simulated time is counted in 64-bit picoseconds)", ins.imm));
      }
      ins.op = Op::NOP;
    } else if (base == "WAIT") {
      want(1);
      ins.op = Op::WAIT;
      ins.imm = P.number(ops[0], "cycle");
      if (ins.imm > kMaxCycles)
        P.fail(fmt::format("WAIT {}: at most cycle 2^40 (simulated time is counted in 64-bit picoseconds)", ins.imm));
    } else if (base == "SEND" || base == "RECV") {
      want(3);
      ins.op = base == "SEND" ? Op::SEND : Op::RECV;
      ins.port = P.port(ops[0]);
      ins.a = P.address(ops[1]);
      ins.count = P.count(ops[2]);
    } else if (base == "ADD") {
      std::string dt = suffix;
      std::transform(dt.begin(), dt.end(), dt.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!core::parse_dtype(dt, ins.dtype) || !core::is_reduction_dtype(ins.dtype))
        P.fail(fmt::format("ADD needs a type suffix .fp32, .bf16, .fp16 or .int32, got '{}'", mnem));
      want(4);
      ins.op = Op::ADD;
      ins.a = P.address(ops[0]);
      ins.b = P.address(ops[1]);
      ins.c = P.address(ops[2]);
      ins.count = P.count(ops[3]);
    } else if (vxm) {
      std::string dt = suffix;
      std::transform(dt.begin(), dt.end(), dt.begin(), [](unsigned char c) { return std::tolower(c); });
      const bool known = core::parse_dtype(dt, ins.dtype) && core::is_reduction_dtype(ins.dtype);
      // Fly-by (docs/isa.md): '-' as the destination passes the result on to
      // the next instruction (FLY-out), FLY as the first operand takes it (FLY-in).
      auto fly_dst = [&](const std::string& t) -> uint32_t {
        if (Parser::trim(t) != "-") return P.address(t);
        if (!tsp::fly_capable(ins.op)) P.fail(fmt::format("{} cannot pass its result on in a fly-by ('-')", base));
        ins.port |= tsp::kFlyOut;
        return 0;
      };
      auto fly_src = [&](const std::string& t) -> uint32_t {
        std::string w = Parser::trim(t);
        std::transform(w.begin(), w.end(), w.begin(), [](unsigned char ch) { return std::toupper(ch); });
        if (w != "FLY") return P.address(t);
        if (!tsp::fly_capable(ins.op)) P.fail(fmt::format("{} cannot take a fly-by's result (FLY)", base));
        ins.port |= tsp::kFlyIn;
        return 0;
      };
      if (base == "MUL" || base == "SUB" || base == "SPLAT") {
        if (!known) P.fail(fmt::format("{} needs a type suffix .fp32, .bf16, .fp16 or .int32, got '{}'", base, mnem));
      } else if (base == "RSQRT" || base == "EXP" || base == "MAX") {
        if (!known || ins.dtype != core::Dtype::fp32) P.fail(fmt::format("{} takes .fp32, got '{}'", base, mnem));
      } else if (!known || (ins.dtype != core::Dtype::fp16 && ins.dtype != core::Dtype::bf16)) {
        P.fail(fmt::format("{} takes .fp16 or .bf16 (the 16-bit type), got '{}'", base, mnem));
      }
      if (base == "MUL" || base == "SUB" || base == "MAX") {  // dst, a, b, n[, BCAST [p] | SPREAD q]
        // Six operands only to say that BCAST and SPREAD exclude each other.
        if (ops.size() < 4 || ops.size() > 6)
          P.fail(
              fmt::format("{} takes 4 or 5 operands (dst, a, b, n[, BCAST [p] | SPREAD q]), got {}", base, ops.size()));
        ins.op = base == "MUL" ? Op::MUL : base == "SUB" ? Op::SUB : Op::MAX;
        ins.a = fly_dst(ops[0]);
        ins.b = fly_src(ops[1]);
        ins.c = P.address(ops[2]);
        ins.count = P.count(ops[3]);
        uint64_t period = 0, spread = 0;
        for (size_t k = 4; k < ops.size(); ++k) {
          const auto [word, value] = Parser::keyword(ops[k]);
          if (word == "BCAST" && !period) {
            period = value.empty() ? 1 : P.number(value, "BCAST period");
            if (period == 0) P.fail(fmt::format("{} BCAST period must be at least 1 (b[i mod p])", base));
            if (period > tsp::kVectors)
              P.fail(fmt::format("{} BCAST period {} out of range: at most {}", base, period, tsp::kVectors));
          } else if (word == "SPREAD" && !spread) {
            if (value.empty()) P.fail(fmt::format("{} SPREAD needs a count q (b[i / q])", base));
            spread = P.number(value, "SPREAD count");
            if (spread == 0) P.fail(fmt::format("{} SPREAD must be at least 1 (b[i / q])", base));
            if (spread > tsp::kVectors)
              P.fail(fmt::format("{} SPREAD {} out of range: at most {}", base, spread, tsp::kVectors));
          } else if (word == "BCAST" || word == "SPREAD") {
            P.fail(fmt::format("{} takes one {}", base, word));
          } else {
            P.fail(fmt::format("{}'s {} operand is BCAST [p] (b[i mod p]) or SPREAD q (b[i / q]), got '{}'", base,
                               k == 4 ? "fifth" : "sixth", Parser::trim(ops[k])));
          }
        }
        if (period && spread)
          P.fail(fmt::format("{} takes BCAST or SPREAD, not both (BCAST {}, SPREAD {})", base, period, spread));
        ins.imm = tsp::vxm_imm(static_cast<uint32_t>(period), static_cast<uint32_t>(spread));
      } else if (base == "SPLAT") {  // dst, src, lane, n
        want(4);
        ins.op = Op::SPLAT;
        ins.a = fly_dst(ops[0]);
        ins.b = fly_src(ops[1]);
        ins.imm = P.number(ops[2], "lane");
        const uint32_t lanes = tsp::kVectorBytes / core::dtype_bytes(ins.dtype);
        if (ins.imm >= lanes) P.fail(fmt::format("lane {} out of range: a {} vector has {} lanes", ins.imm, dt, lanes));
        ins.count = P.count(ops[3]);
      } else {  // RSQRT, EXP, NARROW, WIDEN: dst, src, n
        want(3);
        ins.op = base == "RSQRT" ? Op::RSQRT : base == "EXP" ? Op::EXP : base == "NARROW" ? Op::NARROW : Op::WIDEN;
        ins.a = fly_dst(ops[0]);
        ins.b = fly_src(ops[1]);
        ins.count = P.count(ops[2]);
      }
      const uint64_t reads = ins.op == Op::NARROW ? 2ULL * ins.count : ins.count;
      const uint64_t writes = ins.op == Op::WIDEN ? 2ULL * ins.count : ins.count;
      if (ins.a + writes > tsp::kVectors || ins.b + reads > tsp::kVectors ||
          ((ins.op == Op::MUL || ins.op == Op::SUB || ins.op == Op::MAX) &&
           ins.c + uint64_t(tsp::vxm_b_vectors(ins)) > tsp::kVectors))
        P.fail(fmt::format("{} of {} vectors runs past the end of SRAM", base, ins.count));
    } else if (base == "LW" || base == "MXM") {
      std::string dt = suffix;
      std::transform(dt.begin(), dt.end(), dt.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!core::parse_dtype(dt, ins.dtype) || tsp::mxm_k(ins.dtype) == 0)
        P.fail(fmt::format("{} needs a type suffix .fp16 or .int8, got '{}'", base, mnem));
      if (base == "LW") {
        want(3);  // LW.t mU.wB, tile, vectors
        ins.op = Op::LW;
        P.weights(ops[0], ins);
        ins.a = P.address(ops[1]);
        ins.count = P.count(ops[2]);
        if (ins.count > tsp::kTileVectors)
          P.fail(fmt::format("LW loads at most {} vectors (one [K x 320] tile), got {}", tsp::kTileVectors, ins.count));
      } else {
        // MXM.t mU.wB, results, inputs, sub-operations[, ACC][, STRIDE s]
        if (ops.size() < 4 || ops.size() > 6)
          P.fail(fmt::format("MXM takes 4 to 6 operands (mU.wB, dst, src, n[, ACC][, STRIDE s]), got {}", ops.size()));
        ins.op = Op::MXM;
        P.weights(ops[0], ins);
        ins.a = P.address(ops[1]);
        ins.b = P.address(ops[2]);
        ins.count = P.count(ops[3]);
        bool acc = false;
        uint64_t stride = 0;  // 0: no STRIDE operand (stride 1)
        for (size_t k = 4; k < ops.size(); ++k) {
          const auto [word, value] = Parser::keyword(ops[k]);
          if (word == "ACC" && value.empty() && !acc && !stride) {
            acc = true;
          } else if (word == "STRIDE" && !stride) {
            if (value.empty()) P.fail("MXM STRIDE needs a distance s (input i is vector src + i * s)");
            stride = P.number(value, "MXM stride");
            if (stride == 0) P.fail("MXM stride must be at least 1");
            if (stride >= tsp::kVectors)
              P.fail(fmt::format("MXM stride {} out of range: SRAM has {} vectors", stride, tsp::kVectors));
          } else if (word == "ACC" && stride) {
            P.fail("MXM: ACC comes before STRIDE (MXM.t mU.wB, dst, src, n[, ACC][, STRIDE s])");
          } else {
            P.fail(fmt::format("MXM's {} operand is ACC (accumulate) or STRIDE s, got '{}'", k == 4 ? "fifth" : "sixth",
                               Parser::trim(ops[k])));
          }
        }
        if (stride == 0) stride = 1;
        ins.imm = tsp::mxm_imm(acc, static_cast<uint32_t>(stride));
        if (static_cast<uint64_t>(ins.a) + uint64_t(ins.count) * tsp::kResultVectors > tsp::kVectors)
          P.fail(fmt::format("{} results of {} vectors from {} run past the end of SRAM", ins.count,
                             tsp::kResultVectors, tsp::VecAddr::from_linear(ins.a).str()));
        if (stride == 1 && static_cast<uint64_t>(ins.b) + ins.count > tsp::kVectors)
          P.fail(fmt::format("{} input vectors from {} run past the end of SRAM", ins.count,
                             tsp::VecAddr::from_linear(ins.b).str()));
        if (tsp::mxm_input(ins, ins.count - 1) >= tsp::kVectors)
          P.fail(fmt::format("MXM of {} input vectors {} apart from {} runs past the end of SRAM", ins.count, stride,
                             tsp::VecAddr::from_linear(ins.b).str()));
      }
    } else if (base == "TRANSPOSE") {  // TRANSPOSE.t dst, src, n, lane[, stride]
      std::string dt = suffix;
      std::transform(dt.begin(), dt.end(), dt.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!core::parse_dtype(dt, ins.dtype) || core::dtype_bytes(ins.dtype) == 0)
        P.fail(fmt::format("TRANSPOSE needs a type suffix .fp32, .bf16, .fp16, .int32 or .int8, got '{}'", mnem));
      if (ops.size() != 4 && ops.size() != 5)
        P.fail(fmt::format("TRANSPOSE takes 4 or 5 operands (dst, src, n, lane[, stride]), got {}", ops.size()));
      ins.op = Op::TRANSPOSE;
      ins.a = P.address(ops[0]);
      ins.b = P.address(ops[1]);
      const uint32_t lanes = tsp::kVectorBytes / core::dtype_bytes(ins.dtype);
      const uint64_t n = P.number(ops[2], "vector count");
      if (n == 0 || n > lanes)
        P.fail(fmt::format("TRANSPOSE of {} vectors out of range: n must be in [1, {}] (a {} vector has {} lanes)", n,
                           lanes, dt, lanes));
      ins.count = static_cast<uint32_t>(n);
      ins.imm = P.number(ops[3], "lane");
      if (ins.imm >= lanes) P.fail(fmt::format("lane {} out of range: a {} vector has {} lanes", ins.imm, dt, lanes));
      const uint64_t stride = ops.size() == 5 ? P.number(ops[4], "stride") : 1;
      if (stride == 0) P.fail("TRANSPOSE stride must be at least 1");
      if (stride >= tsp::kVectors)
        P.fail(fmt::format("TRANSPOSE stride {} out of range: SRAM has {} vectors", stride, tsp::kVectors));
      if (ins.b + (n - 1) * stride >= tsp::kVectors)
        P.fail(fmt::format("TRANSPOSE of {} vectors {} apart from {} runs past the end of SRAM", n, stride,
                           tsp::VecAddr::from_linear(ins.b).str()));
      ins.c = static_cast<uint32_t>(stride);
    } else if (base == "HOSTW") {  // HOSTW src, n, host_vector
      want(3);
      ins.op = Op::HOSTW;
      ins.a = P.address(ops[0]);
      ins.count = P.count(ops[1]);
      ins.imm = P.number(ops[2], "host vector");
      if (static_cast<uint64_t>(ins.a) + ins.count > tsp::kVectors)
        P.fail(fmt::format("HOSTW of {} vectors from {} runs past the end of SRAM", ins.count,
                           tsp::VecAddr::from_linear(ins.a).str()));
      if (ins.imm > (uint64_t(1) << 40)) P.fail(fmt::format("host vector {} past 2^40", ins.imm));
    } else if (base == "COPY") {
      want(3);
      ins.op = Op::COPY;
      ins.a = P.address(ops[0]);
      ins.b = P.address(ops[1]);
      ins.count = P.count(ops[2]);
    } else if (base == "SYNC" || base == "NOTIFY" || base == "DESKEW") {
      want(0);
      ins.op = base == "SYNC" ? Op::SYNC : base == "NOTIFY" ? Op::NOTIFY : Op::DESKEW;
    } else if (base == "TRANSMIT" || base == "POLL") {
      want(1);
      ins.op = base == "TRANSMIT" ? Op::TRANSMIT : Op::POLL;
      ins.port = P.port(ops[0]);
    } else if (base == "RUNTIME_DESKEW") {
      want(1);
      ins.op = Op::RUNTIME_DESKEW;
      ins.imm = P.number(ops[0], "target stall in cycles");
      if (ins.imm > (1ULL << 40)) P.fail(fmt::format("RUNTIME_DESKEW target {} is out of range (max 2^40)", ins.imm));
    } else if (base == "RDHAC") {
      want(1);
      ins.op = Op::RDHAC;
      ins.a = P.address(ops[0]);
    } else if (base == "LOOP") {  // LOOP n, P[, HOST s]
      if (ops.size() != 2 && ops.size() != 3)
        P.fail(fmt::format("LOOP takes 2 or 3 operands (n, P[, HOST s]), got {}", ops.size()));
      ins.op = Op::LOOP;
      const uint64_t n = P.number(ops[0], "iteration count");
      if (n == 0) P.fail("LOOP needs at least 1 iteration to repeat (n >= 1)");
      if (n > UINT32_MAX) P.fail(fmt::format("LOOP {} iterations: at most {}", n, UINT32_MAX));
      const uint64_t period = P.number(ops[1], "period in cycles");
      if (period == 0) P.fail("LOOP period must be at least 1 cycle (P >= 1)");
      if (period > tsp::kMaxLoopSpan / n)
        P.fail(fmt::format("LOOP {}, {}: the repetitions span more than 2^40 cycles (n x P at most 2^40)", n, period));
      uint64_t stride = 0;
      if (ops.size() == 3) {
        const auto [word, value] = Parser::keyword(ops[2]);
        if (word != "HOST" || value.empty())
          P.fail(
              fmt::format("LOOP's third operand is HOST s (the host-vector stride), got '{}'", Parser::trim(ops[2])));
        stride = P.number(value, "host-vector stride");
        if (stride > UINT32_MAX)
          P.fail(fmt::format("LOOP HOST stride {} out of range: at most {}", stride, UINT32_MAX));
        if (stride > tsp::kMaxLoopSpan / n)
          P.fail(fmt::format("LOOP {}, {}, HOST {}: the repetitions move host vectors past 2^40 (n x s at most 2^40)",
                             n, period, stride));
      }
      ins.count = static_cast<uint32_t>(n);
      ins.imm = period;
      ins.a = static_cast<uint32_t>(stride);
    } else {
      P.fail(fmt::format("unknown instruction '{}'", mnem));
    }
    if (ins.op == Op::SEND || ins.op == Op::RECV || ins.op == Op::ADD || ins.op == Op::COPY) {
      const uint32_t operands = ins.op == Op::ADD ? 3 : ins.op == Op::COPY ? 2 : 1;
      const uint32_t addrs[3] = {ins.a, ins.b, ins.c};
      for (uint32_t k = 0; k < operands; ++k) {
        uint32_t addr = addrs[k];
        if (static_cast<uint64_t>(addr) + ins.count > tsp::kVectors)
          P.fail(fmt::format("{} vectors from {} run past the end of SRAM", ins.count,
                             tsp::VecAddr::from_linear(addr).str()));
      }
    }
    std::vector<Instr>& dst = prog.queues[static_cast<size_t>(queue)];
    if (!dst.empty() && dst.back().op == Op::LOOP)
      P.fail(ins.op == Op::LOOP
                 ? fmt::format("queue {} has a LOOP already (line {}): a queue has at most one LOOP", queue,
                               dst.back().line)
                 : fmt::format("{} after the LOOP of line {}: LOOP must be the last instruction of queue {}", base,
                               dst.back().line, queue));
    if (const std::string fly = tsp::fly_error(dst.empty() ? nullptr : &dst.back(), ins); !fly.empty())
      P.fail(fmt::format("{} {}", base, fly));
    dst.push_back(ins);
  }
  for (const std::vector<Instr>& q : prog.queues)
    if (const std::string e = tsp::fly_end_error(q.empty() ? nullptr : &q.back()); !e.empty())
      throw core::ConfigError(fmt::format("{}:{}: {} {}", file, q.back().line, tsp::op_name(q.back().op), e));
  return prog;
}

Program assemble_file(const std::string& path) { return assemble(core::read_input_file(path, "program file"), path); }

std::string format_instr(const Instr& in) {
  auto addr = [](uint32_t v) { return tsp::VecAddr::from_linear(v).str(); };
  // A fly-by's passed-on result and taken operand (docs/isa.md "Fly-by").
  auto dst = [&] { return tsp::fly_out(in) ? std::string("-") : addr(in.a); };
  auto src = [&] { return tsp::fly_in(in) ? std::string("FLY") : addr(in.b); };
  switch (in.op) {
    case Op::NOP: return fmt::format("NOP {}", in.imm);
    case Op::WAIT: return fmt::format("WAIT {}", in.imm);
    case Op::SEND: return fmt::format("SEND p{}, {}, {}", in.port, addr(in.a), in.count);
    case Op::RECV: return fmt::format("RECV p{}, {}, {}", in.port, addr(in.a), in.count);
    case Op::ADD:
      return fmt::format("ADD.{} {}, {}, {}, {}", core::dtype_name(in.dtype), addr(in.a), addr(in.b), addr(in.c),
                         in.count);
    case Op::COPY: return fmt::format("COPY {}, {}, {}", addr(in.a), addr(in.b), in.count);
    case Op::HOSTW: return fmt::format("HOSTW {}, {}, {}", addr(in.a), in.count, in.imm);
    case Op::LW:
      return fmt::format("LW.{} m{}.w{}, {}, {}", core::dtype_name(in.dtype), in.port, in.c, addr(in.a), in.count);
    case Op::MXM:
      return fmt::format("MXM.{} m{}.w{}, {}, {}, {}{}{}", core::dtype_name(in.dtype), in.port, in.c, addr(in.a),
                         addr(in.b), in.count, tsp::mxm_acc(in) ? ", ACC" : "",
                         tsp::mxm_stride(in) > 1 ? fmt::format(", STRIDE {}", tsp::mxm_stride(in)) : "");
    case Op::MUL:
    case Op::SUB:
    case Op::MAX: {
      const uint32_t p = tsp::vxm_bcast(in), q = tsp::vxm_spread(in);
      return fmt::format("{}.{} {}, {}, {}, {}{}{}", tsp::op_name(in.op), core::dtype_name(in.dtype), dst(), src(),
                         addr(in.c), in.count,
                         p == 1  ? ", BCAST"
                         : p > 1 ? fmt::format(", BCAST {}", p)
                                 : "",
                         q ? fmt::format(", SPREAD {}", q) : "");
    }
    case Op::SPLAT:
      return fmt::format("SPLAT.{} {}, {}, {}, {}", core::dtype_name(in.dtype), dst(), src(), in.imm, in.count);
    case Op::RSQRT:
    case Op::EXP:
    case Op::NARROW:
    case Op::WIDEN:
      return fmt::format("{}.{} {}, {}, {}", tsp::op_name(in.op), core::dtype_name(in.dtype), dst(), src(), in.count);
    case Op::TRANSPOSE:
      return fmt::format("TRANSPOSE.{} {}, {}, {}, {}, {}", core::dtype_name(in.dtype), addr(in.a), addr(in.b),
                         in.count, in.imm, in.c);
    case Op::SYNC: return "SYNC";
    case Op::NOTIFY: return "NOTIFY";
    case Op::DESKEW: return "DESKEW";
    case Op::TRANSMIT: return fmt::format("TRANSMIT p{}", in.port);
    case Op::POLL: return fmt::format("POLL p{}", in.port);
    case Op::RUNTIME_DESKEW: return fmt::format("RUNTIME_DESKEW {}", in.imm);
    case Op::RDHAC: return fmt::format("RDHAC {}", addr(in.a));
    case Op::LOOP: return fmt::format("LOOP {}, {}{}", in.count, in.imm, in.a ? fmt::format(", HOST {}", in.a) : "");
    case Op::END: return "END";
  }
  return "?";
}

std::string disassemble(const Program& p) {
  std::string out = "; fabricvp TSP program (docs/isa.md)\n";
  if (!p.target.empty()) out += fmt::format(".tsp {}\n", p.target);
  for (size_t q = 0; q < p.queues.size(); ++q) {
    if (p.queues[q].empty()) continue;
    out += fmt::format("\n.queue {}\n", q);
    for (const Instr& in : p.queues[q]) {
      out += "    ";
      out += format_instr(in);
      out += '\n';
    }
  }
  return out;
}

std::vector<uint8_t> encode_queue(const std::vector<Instr>& q) {
  std::vector<uint8_t> out;
  out.reserve((q.size() + 1) * tsp::kInstrBytes);
  for (const Instr& in : q) {
    auto b = in.encode();
    out.insert(out.end(), b.begin(), b.end());
  }
  auto end = Instr{}.encode();
  out.insert(out.end(), end.begin(), end.end());
  return out;
}

}  // namespace fabricvp::sw
