#include "models/riscv/bare_metal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fabricvp::riscv {

namespace {
constexpr uint32_t kPage = 4096;
}

BareMetal::BareMetal(const ElfImage& image, const HartConfig& cfg) {
  console_ = [](char c) { std::fputc(c, stdout); };

  // Memory: 64 MiB at 0x80000000 plus page-rounded spans for the segments
  // outside it, merged where they touch.
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [lo, hi)
  spans.emplace_back(kRamBase, uint64_t{kRamBase} + kRamBytes);
  for (const auto& s : image.segments) {
    const uint64_t lo = s.addr / kPage * kPage;
    const uint64_t hi = (uint64_t{s.addr} + s.memsz + kPage - 1) / kPage * kPage;
    spans.emplace_back(lo, std::min<uint64_t>(hi, uint64_t{1} << 32));
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& sp : spans) {
    if (!merged.empty() && sp.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, sp.second);
    else
      merged.push_back(sp);
  }
  for (const auto& [lo, hi] : merged) {
    if (hi - lo >= (uint64_t{1} << 32))
      throw std::runtime_error(fmt::format("{}: segments span the whole 32-bit space", image.path));
    map_.add_memory(fmt::format("ram@{:08x}", lo), static_cast<uint32_t>(lo), static_cast<uint32_t>(hi - lo));
  }
  for (const auto& s : image.segments) {
    std::vector<uint8_t> bytes(s.memsz, 0);
    std::copy(s.bytes.begin(), s.bytes.end(), bytes.begin());
    map_.write_bytes(s.addr, bytes.data(), bytes.size());
  }

  tohost_ = image.symbol("tohost");
  fromhost_ = image.symbol("fromhost");
  auto overlay = [&](const char* name, uint32_t at) {
    if (at % 8 != 0)
      throw std::runtime_error(fmt::format("{}: symbol {} at 0x{:08x} is not 8-byte aligned", image.path, name, at));
    Region r;
    r.name = name;
    r.base = at;
    r.size = 8;
    r.device =
        Device{std::string(name) == "tohost" ? &to_word_ : &from_word_, &BareMetal::htif_read, &BareMetal::htif_write};
    map_.add_overlay(std::move(r));
  };
  if (tohost_) overlay("tohost", *tohost_);
  if (fromhost_) overlay("fromhost", *fromhost_);

  hart_ = std::make_unique<Hart>(map_, cache_, cfg);
  hart_->set_pc(image.entry);
}

BareMetal::~BareMetal() = default;

bool BareMetal::htif_read(void* ctx, Hart&, uint32_t offset, unsigned size, uint32_t& value) {
  const auto* w = static_cast<HtifWord*>(ctx);
  const uint64_t word = w->is_tohost ? w->self->tohost_value_ : w->self->fromhost_value_;
  const uint64_t shifted = word >> (8 * offset);
  value = size == 4 ? static_cast<uint32_t>(shifted) : static_cast<uint32_t>(shifted & ((1u << (8 * size)) - 1));
  return true;
}

bool BareMetal::htif_write(void* ctx, Hart& hart, uint32_t offset, unsigned size, uint32_t value) {
  auto* w = static_cast<HtifWord*>(ctx);
  uint64_t& word = w->is_tohost ? w->self->tohost_value_ : w->self->fromhost_value_;
  const uint64_t mask = (size == 4 ? uint64_t{0xffffffff} : ((uint64_t{1} << (8 * size)) - 1)) << (8 * offset);
  word = (word & ~mask) | ((uint64_t{value} << (8 * offset)) & mask);
  // As QEMU's HTIF: a command is taken when the upper half of tohost is written.
  if (w->is_tohost && offset + size > 4) w->self->htif_command(hart);
  return true;
}

void BareMetal::htif_command(Hart& hart) {
  const uint64_t cmdword = tohost_value_;
  const unsigned device = static_cast<unsigned>(cmdword >> 56);
  const unsigned command = static_cast<unsigned>((cmdword >> 48) & 0xff);
  const uint64_t payload = cmdword & ((uint64_t{1} << 48) - 1);
  if (cmdword == 0) return;
  if (device == 0 && command == 0) {
    if (payload & 1) {
      exited_ = true;
      exit_code_ = static_cast<uint32_t>(payload >> 1);
      hart.request_stop();
    } else {
      throw std::runtime_error(
          fmt::format("HTIF system call proxy (tohost = 0x{:016x}, an even payload) is not supported: pc 0x{:08x}",
                      cmdword, hart.pc()));
    }
  } else if (device == 1 && command == 1) {
    console_(static_cast<char>(payload & 0xff));
    fromhost_value_ = (uint64_t{1} << 56) | (uint64_t{1} << 48) | 0x100 | (payload & 0xff);
  } else {
    throw std::runtime_error(fmt::format("HTIF device {} command {} is not supported (tohost = 0x{:016x}, pc 0x{:08x})",
                                         device, command, cmdword, hart.pc()));
  }
  tohost_value_ = 0;
}

BareMetalResult BareMetal::run(uint64_t max_instructions) {
  BareMetalResult res;
  const Stop stop = hart_->run(UINT64_MAX, max_instructions);
  res.instructions = hart_->instret();
  res.cycles = hart_->cycle();
  if (exited_) {
    res.end = BareMetalResult::End::Exit;
    res.exit_code = exit_code_;
  } else if (stop == Stop::Trap) {
    res.end = BareMetalResult::End::Trap;
    res.trap = hart_->last_trap();
  } else {
    res.end = BareMetalResult::End::Limit;
  }
  return res;
}

}  // namespace fabricvp::riscv
