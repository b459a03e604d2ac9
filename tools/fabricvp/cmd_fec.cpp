// fabricvp fec: the C2C links' Reed-Solomon codec on the command line.
//
//   fabricvp fec encode --code kp4|kr4                      k message symbols on stdin -> n codeword symbols
//   fabricvp fec decode --code kp4|kr4 [--erasures i,j,..]  n received symbols on stdin -> k message symbols,
//                                                            then the number of corrected symbols
//   fabricvp fec bench  [--code kp4|kr4|all] [--codewords N] [--trials M] [--seed S]
//
// Symbols are decimal integers 0..1023 separated by white space, numbered from
// 0 in messages. Output symbols are separated by single spaces on one line.
// Exit codes: 0 success, 1 bad input (the message names the symbol or option),
// 3 uncorrectable word.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/c2c/fec.h"
#include "tools/fabricvp/commands.h"

using namespace fabricvp;

namespace {

constexpr int kOk = 0;
constexpr int kBadInput = 1;
constexpr int kUncorrectable = 3;

struct FecOptions {
  std::string mode;
  std::string code;  // empty: kp4 for encode/decode, both codes for bench
  std::string erasures;
  uint64_t codewords = 200000;
  uint64_t trials = 100000;
  uint64_t seed = 1;
};

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

/// Reads exactly `want` symbols from `in`; throws BadInput naming the symbol.
std::vector<uint16_t> read_symbols(std::istream& in, size_t want, const std::string& what) {
  std::vector<uint16_t> out;
  out.reserve(want);
  std::string tok;
  size_t index = 0;
  while (in >> tok) {
    if (!all_digits(tok)) throw BadInput(fmt::format("symbol {} '{}' is not a decimal integer", index, tok));
    if (tok.size() > 9 || std::stoul(tok) > c2c::kFecSymbolMax)
      throw BadInput(fmt::format("symbol {} value {} out of range 0..{}", index, tok, c2c::kFecSymbolMax));
    const unsigned long v = std::stoul(tok);
    if (out.size() < want) out.push_back(static_cast<uint16_t>(v));
    ++index;
  }
  if (index != want) throw BadInput(fmt::format("expected {} {} symbols on stdin, got {}", want, what, index));
  return out;
}

/// "3,17,400" -> positions; each 0 .. n-1 and distinct.
std::vector<int> parse_erasures(const std::string& text, int n) {
  std::vector<int> out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!all_digits(item))
      throw BadInput(fmt::format("--erasures: '{}' is not a symbol position (0..{})", item, n - 1));
    if (item.size() > 9 || std::stol(item) >= n)
      throw BadInput(fmt::format("--erasures: position {} out of range 0..{}", item, n - 1));
    const long v = std::stol(item);
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      throw BadInput(fmt::format("--erasures: position {} given twice", v));
    out.push_back(static_cast<int>(v));
  }
  if (!text.empty() && text.back() == ',') throw BadInput("--erasures: trailing ','");
  return out;
}

void print_symbols(const uint16_t* s, int count) {
  std::string line;
  line.reserve(static_cast<size_t>(count) * 5);
  for (int i = 0; i < count; ++i) {
    if (i) line += ' ';
    line += std::to_string(s[i]);
  }
  std::cout << line << '\n';
}

std::string code_title(const c2c::RsCodec& c) {
  return fmt::format("{} RS({},{}) t={}", c2c::fec_code_name(c.code()), c.n(), c.k(), c.t());
}

// ---- bench ------------------------------------------------------------------

/// Distinct random positions 0 .. n-1.
std::vector<int> random_positions(std::mt19937_64& rng, int n, int count) {
  std::vector<int> pos;
  while (static_cast<int>(pos.size()) < count) {
    const int p = static_cast<int>(rng() % static_cast<uint64_t>(n));
    if (std::find(pos.begin(), pos.end(), p) == pos.end()) pos.push_back(p);
  }
  return pos;
}

/// A pool of `count` codewords of random messages, each with `errors` random
/// symbol errors (random nonzero values at distinct positions).
std::vector<uint16_t> word_pool(const c2c::RsCodec& c, std::mt19937_64& rng, int count, int errors,
                                std::vector<uint16_t>* clean = nullptr) {
  const int n = c.n(), k = c.k();
  std::vector<uint16_t> pool(static_cast<size_t>(count) * n), msg(k);
  if (clean) clean->resize(pool.size());
  for (int w = 0; w < count; ++w) {
    for (auto& m : msg) m = static_cast<uint16_t>(rng() & c2c::kFecSymbolMax);
    uint16_t* cw = pool.data() + static_cast<size_t>(w) * n;
    c.encode(msg.data(), cw);
    if (clean) std::copy(cw, cw + n, clean->data() + static_cast<size_t>(w) * n);
    for (int p : random_positions(rng, n, errors)) cw[p] ^= static_cast<uint16_t>(1 + rng() % c2c::kFecSymbolMax);
  }
  return pool;
}

/// CPU time of this thread: throughput per core even when other processes share the cores.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

constexpr int kRounds = 3;  // each throughput is the best of this many rounds

/// Probability that a uniformly random word lies within distance t of some
/// codeword: V(n, t) / q^2t, V the Hamming ball volume (the miscorrection
/// rate of a bounded-distance decoder on words far from every codeword).
double ball_fraction(int n, int t) {
  double sum = 0.0;
  for (int i = 0; i <= t; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(1023.0) -
                    2.0 * t * std::log(1024.0));
  return sum;
}

int bench_code(c2c::FecCode code, const FecOptions& o) {
  c2c::RsCodec c(code);
  const int n = c.n(), k = c.k(), t = c.t();
  std::mt19937_64 rng(o.seed);
  constexpr int kPool = 256;
  const uint64_t reps = std::max<uint64_t>(o.codewords, 1);
  fmt::print("{}  ({} codewords per measurement, best of {}, per second of CPU time, seed {})\n", code_title(c), reps,
             kRounds, o.seed);

  // Encode.
  {
    std::vector<uint16_t> msgs(static_cast<size_t>(kPool) * k), cw(n);
    for (auto& m : msgs) m = static_cast<uint16_t>(rng() & c2c::kFecSymbolMax);
    uint64_t check = 0;
    double best = 1e30;
    for (int round = 0; round < kRounds; ++round) {
      const double t0 = cpu_seconds();
      for (uint64_t i = 0; i < reps; ++i) {
        c.encode(msgs.data() + (i % kPool) * k, cw.data());
        check += cw[k];
      }
      best = std::min(best, cpu_seconds() - t0);
    }
    fmt::print("  encode                {:>10.0f} codewords/s  {:6.2f} us/codeword  {:6.2f} Gb/s of message{}\n",
               reps / best, best / reps * 1e6, reps * k * 10.0 / best / 1e9, check == 0 ? " (all zero?)" : "");
  }
  // Decode with 0, 1, t/2 and t errors.
  for (int errors : {0, 1, t / 2, t}) {
    std::vector<uint16_t> pool = word_pool(c, rng, kPool, errors), rx(n);
    uint64_t corrected = 0, failed = 0;
    double best = 1e30;
    for (int round = 0; round < kRounds; ++round) {
      const double t0 = cpu_seconds();
      for (uint64_t i = 0; i < reps; ++i) {
        std::copy_n(pool.data() + (i % kPool) * n, n, rx.data());
        const c2c::DecodeResult r = c.decode(rx.data());
        corrected += static_cast<uint64_t>(r.corrected);
        failed += !r.ok;
      }
      best = std::min(best, cpu_seconds() - t0);
    }
    fmt::print("  decode {:>2} errors      {:>10.0f} codewords/s  {:6.2f} us/codeword  {:6.2f} Gb/s of message\n",
               errors, reps / best, best / reps * 1e6, reps * k * 10.0 / best / 1e9);
    if (failed != 0 || corrected != kRounds * reps * static_cast<uint64_t>(errors)) {
      fmt::print(stderr, "fabricvp: fec bench: decoder missed errors ({} uncorrectable, {} corrected)\n", failed,
                 corrected);
      return 5;
    }
  }
  // Words with more than t errors: detected (uncorrectable) or miscorrected.
  if (o.trials > 0) {
    uint64_t detected = 0, miscorrected = 0;
    std::vector<uint16_t> msg(k), cw(n), rx(n);
    const double t0 = cpu_seconds();
    for (uint64_t i = 0; i < o.trials; ++i) {
      const int errors = t + 1 + static_cast<int>(i % 5);
      for (auto& m : msg) m = static_cast<uint16_t>(rng() & c2c::kFecSymbolMax);
      c.encode(msg.data(), cw.data());
      rx = cw;
      for (int p : random_positions(rng, n, errors)) rx[p] ^= static_cast<uint16_t>(1 + rng() % c2c::kFecSymbolMax);
      const c2c::DecodeResult r = c.decode(rx.data());
      if (!r.ok)
        ++detected;
      else if (rx != cw)
        ++miscorrected;
      else {
        fmt::print(stderr, "fabricvp: fec bench: {} errors corrected to the original word\n", errors);
        return 5;
      }
    }
    const double s = cpu_seconds() - t0;
    fmt::print(
        "  {}..{} errors: {} trials, {} detected uncorrectable, {} miscorrected (rate {:.3g}; "
        "theory V(n,t)/q^2t = {:.3g}, bound 1/t! = {:.3g}); {:.0f} words/s\n",
        t + 1, t + 5, o.trials, detected, miscorrected, static_cast<double>(miscorrected) / o.trials,
        ball_fraction(n, t), 1.0 / std::tgamma(t + 1.0), o.trials / s);
  }
  return kOk;
}

int run_fec(const FecOptions& o) {
  try {
    if (o.mode == "bench") {
      const std::string which = o.code.empty() ? "all" : o.code;
      if (which != "all" && which != "kp4" && which != "kr4")
        throw BadInput(fmt::format("--code '{}': expected kp4, kr4 or all", o.code));
      int rc = kOk;
      for (c2c::FecCode code : {c2c::FecCode::kp4, c2c::FecCode::kr4})
        if (which == "all" || which == c2c::fec_code_name(code)) rc = std::max(rc, bench_code(code, o));
      return rc;
    }
    c2c::FecCode code = c2c::FecCode::kp4;
    if (!o.code.empty() && !c2c::parse_fec_code(o.code, code))
      throw BadInput(fmt::format("--code '{}': expected kp4 or kr4", o.code));
    c2c::RsCodec c(code);
    if (o.mode == "encode") {
      if (!o.erasures.empty()) throw BadInput("--erasures only applies to decode");
      std::vector<uint16_t> msg = read_symbols(std::cin, static_cast<size_t>(c.k()), "message");
      std::vector<uint16_t> cw(static_cast<size_t>(c.n()));
      c.encode(msg.data(), cw.data());
      print_symbols(cw.data(), c.n());
      return kOk;
    }
    if (o.mode == "decode") {
      std::vector<int> er = parse_erasures(o.erasures, c.n());
      std::vector<uint16_t> rx = read_symbols(std::cin, static_cast<size_t>(c.n()), "codeword");
      const c2c::DecodeResult r = c.decode(rx.data(), er.data(), static_cast<int>(er.size()));
      if (!r.ok) {
        if (static_cast<int>(er.size()) > c.parity())
          fmt::print(stderr, "fabricvp: fec decode: uncorrectable: {} erasures, {} corrects at most {}\n", er.size(),
                     code_title(c), c.parity());
        else
          fmt::print(stderr, "fabricvp: fec decode: uncorrectable word (more errors than {} corrects{})\n",
                     code_title(c), er.empty() ? "" : " with these erasures");
        return kUncorrectable;
      }
      print_symbols(rx.data(), c.k());
      std::cout << r.corrected << '\n';
      return kOk;
    }
    throw BadInput(fmt::format("unknown mode '{}': expected encode, decode or bench", o.mode));
  } catch (const BadInput& e) {
    fmt::print(stderr, "fabricvp: error: fec {}: {}\n", o.mode, e.what());
    return kBadInput;
  }
}

fabricvp::cli::Command fec_cmd([](CLI::App& app) {
  auto* sub = app.add_subcommand(
      "fec", "Reed-Solomon FEC of the C2C links: encode or decode 10-bit symbols (stdin to stdout), or benchmark");
  auto opts = std::make_shared<FecOptions>();
  sub->add_option("mode", opts->mode, "encode | decode | bench")->required();
  sub->add_option("--code,-c", opts->code,
                  "kp4 = RS(544,514) t=15 (default) | kr4 = RS(528,514) t=7 | all (bench, its default)");
  sub->add_option("--erasures,-e", opts->erasures, "decode: positions (0..n-1) of erased symbols, e.g. 3,17,400");
  sub->add_option("--codewords", opts->codewords, "bench: codewords per throughput measurement")
      ->check(CLI::Range(uint64_t(1), uint64_t(1000000000)));
  sub->add_option("--trials", opts->trials, "bench: words with t+1..t+5 errors for the miscorrection rate")
      ->check(CLI::Range(uint64_t(0), uint64_t(10000000000)));
  sub->add_option("--seed,-s", opts->seed, "bench: random seed");
  return fabricvp::cli::Handler{sub, [opts] { return run_fec(*opts); }};
});

}  // namespace
