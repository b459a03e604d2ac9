#include "models/tsp/isa.h"

#include <fmt/format.h>

namespace fabricvp::tsp {

std::string VecAddr::str() const { return fmt::format("[{},{},{},{}]", hemisphere, slice, bank, offset); }

namespace {
template <typename T>
void put(uint8_t* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}
template <typename T>
T get(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}
}  // namespace

std::array<uint8_t, kInstrBytes> Instr::encode() const {
  std::array<uint8_t, kInstrBytes> out{};
  out[0] = static_cast<uint8_t>(op);
  out[1] = static_cast<uint8_t>(dtype);
  put<uint16_t>(&out[2], port);
  put<uint32_t>(&out[4], count);
  put<uint32_t>(&out[8], a);
  put<uint32_t>(&out[12], b);
  put<uint32_t>(&out[16], c);
  put<uint64_t>(&out[20], imm);
  put<uint32_t>(&out[28], line);
  return out;
}

Instr Instr::decode(const uint8_t* p) {
  Instr i;
  i.op = static_cast<Op>(p[0]);
  i.dtype = static_cast<core::Dtype>(p[1]);
  i.port = get<uint16_t>(&p[2]);
  i.count = get<uint32_t>(&p[4]);
  i.a = get<uint32_t>(&p[8]);
  i.b = get<uint32_t>(&p[12]);
  i.c = get<uint32_t>(&p[16]);
  i.imm = get<uint64_t>(&p[20]);
  i.line = get<uint32_t>(&p[28]);
  return i;
}

bool Instr::operator==(const Instr& o) const {
  return op == o.op && dtype == o.dtype && port == o.port && count == o.count && a == o.a && b == o.b && c == o.c &&
         imm == o.imm && line == o.line;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::END: return "END";
    case Op::NOP: return "NOP";
    case Op::WAIT: return "WAIT";
    case Op::SEND: return "SEND";
    case Op::RECV: return "RECV";
    case Op::ADD: return "ADD";
    case Op::SYNC: return "SYNC";
    case Op::NOTIFY: return "NOTIFY";
    case Op::COPY: return "COPY";
    case Op::DESKEW: return "DESKEW";
    case Op::TRANSMIT: return "TRANSMIT";
    case Op::RUNTIME_DESKEW: return "RUNTIME_DESKEW";
    case Op::POLL: return "POLL";
    case Op::RDHAC: return "RDHAC";
    case Op::LW: return "LW";
    case Op::MXM: return "MXM";
    case Op::MUL: return "MUL";
    case Op::SUB: return "SUB";
    case Op::RSQRT: return "RSQRT";
    case Op::SPLAT: return "SPLAT";
    case Op::NARROW: return "NARROW";
    case Op::WIDEN: return "WIDEN";
    case Op::TRANSPOSE: return "TRANSPOSE";
    case Op::HOSTW: return "HOSTW";
    case Op::EXP: return "EXP";
    case Op::MAX: return "MAX";
    case Op::LOOP: return "LOOP";
  }
  return "?";
}

std::string fly_error(const Instr* prev, const Instr& in) {
  if (fly_capable(in.op)) {
    if (in.port & ~(kFlyOut | kFlyIn))
      return fmt::format("has port bits {:#x}: only FLY-out (1) and FLY-in (2) may be set", in.port);
    if (fly_out(in) && in.a != 0) return "passes its result on (FLY-out) but names a destination (must be 0)";
    if (fly_in(in) && in.b != 0) return "takes the previous result (FLY-in) but names a first operand (must be 0)";
  }
  const bool passed = prev && fly_out(*prev);
  if (passed && !fly_in(in))
    return fmt::format("follows a {} that passes its result on (FLY-out) but does not take it (FLY-in)",
                       op_name(prev->op));
  if (fly_in(in) && !passed) return "takes the previous result (FLY-in), but no FLY-out instruction precedes it";
  if (fly_in(in) && (prev->count != in.count || prev->dtype != in.dtype))
    return fmt::format("runs {} steps of {} but the fly-by it joins runs {} of {}", in.count,
                       core::dtype_name(in.dtype), prev->count, core::dtype_name(prev->dtype));
  return "";
}

std::string fly_end_error(const Instr* last) {
  return last && fly_out(*last) ? "passes its result on (FLY-out) but is its queue's last instruction" : "";
}

}  // namespace fabricvp::tsp
