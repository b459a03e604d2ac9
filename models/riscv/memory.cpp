#include "models/riscv/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::riscv {

Banks::Banks(unsigned count, unsigned word_bytes) : count_(count), mask_(0), shift_(0), banks_(count) {
  if (count == 0) throw std::invalid_argument("a banked memory needs at least one bank");
  if ((count & (count - 1)) == 0) mask_ = count - 1;
  if (word_bytes == 0 || (word_bytes & (word_bytes - 1)) != 0)
    throw std::invalid_argument(fmt::format("bank word of {} bytes is not a power of two", word_bytes));
  while ((1u << shift_) < word_bytes) ++shift_;
}

uint64_t Banks::access_past(Bank& b, uint64_t cycle, unsigned hold) {
  // Before the latest cycle the bank has taken: the first `hold` free cycles
  // from `cycle` on (cycles older than the window count as free).
  uint64_t t = cycle;
  while (t < b.next_free) {
    bool free = true;
    for (unsigned k = 0; k < hold; ++k) {
      if (is_busy(b, t + k)) {
        free = false;
        break;
      }
    }
    if (free) break;
    ++t;
  }
  // A cycle older than the window is not recorded (it would be forgotten at once).
  const uint64_t base = window_base(b);
  for (unsigned k = 0; k < hold; ++k)
    if (t + k >= base) set_busy(b, t + k);
  b.next_free = std::max(b.next_free, t + hold);
  if (t != cycle) {
    ++conflicts_;
    stall_cycles_ += t - cycle;
  }
  return t;
}

void AddressMap::Owned::operator()(uint8_t* p) const {
  // The size is not needed by free(): memory comes from calloc.
  std::free(p);
}

Region& AddressMap::add(Region r) {
  if (r.size == 0 || r.size % 4 != 0 || r.base % 4 != 0)
    throw std::invalid_argument(fmt::format(
        "region '{}' at 0x{:08x} of {} bytes: base and size must be non-zero multiples of 4", r.name, r.base, r.size));
  if (uint64_t{r.base} + r.size > (uint64_t{1} << 32))
    throw std::invalid_argument(
        fmt::format("region '{}' at 0x{:08x} of {} bytes passes the end of the 32-bit space", r.name, r.base, r.size));
  for (const auto& o : regions_) {
    if (r.base <= o->last() && o->base <= r.last())
      throw std::invalid_argument(fmt::format("region '{}' [0x{:08x}, 0x{:08x}] overlaps '{}' [0x{:08x}, 0x{:08x}]",
                                              r.name, r.base, r.last(), o->name, o->base, o->last()));
  }
  auto owned = std::make_unique<Region>(std::move(r));
  Region& ref = *owned;
  auto at = std::lower_bound(regions_.begin(), regions_.end(), ref.base,
                             [](const std::unique_ptr<Region>& a, uint32_t b) { return a->base < b; });
  regions_.insert(at, std::move(owned));
  return ref;
}

Region& AddressMap::add_memory(const std::string& name, uint32_t base, uint32_t size, uint8_t perms) {
  auto* p = static_cast<uint8_t*>(std::calloc(size, 1));
  if (!p) throw std::runtime_error(fmt::format("cannot allocate {} bytes for region '{}'", size, name));
  storage_.emplace_back(p);
  Region r;
  r.name = name;
  r.base = base;
  r.size = size;
  r.host = p;
  r.perms = perms;
  return add(std::move(r));
}

Region& AddressMap::add_overlay(Region r) {
  if (r.size == 0 || r.size % 4 != 0 || r.base % 4 != 0)
    throw std::invalid_argument(
        fmt::format("overlay '{}' at 0x{:08x}: base and size must be multiples of 4", r.name, r.base));
  for (const auto& o : overlays_) {
    if (r.base <= o->last() && o->base <= r.last())
      throw std::invalid_argument(fmt::format("overlay '{}' overlaps '{}'", r.name, o->name));
  }
  overlays_.push_back(std::make_unique<Region>(std::move(r)));
  return *overlays_.back();
}

void AddressMap::clip(uint32_t a, uint64_t& lo, uint64_t& hi) const {
  for (const auto& o : overlays_) {
    const uint64_t olo = o->base, ohi = uint64_t{o->base} + o->size;
    if (a >= olo && a < ohi) continue;
    if (ohi <= a)
      lo = std::max(lo, ohi);
    else
      hi = std::min(hi, olo);
  }
}

const Region* AddressMap::find(uint32_t addr) const {
  for (const auto& o : overlays_)
    if (o->contains(addr)) return o.get();
  auto at = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint32_t a, const std::unique_ptr<Region>& r) { return a < r->base; });
  if (at == regions_.begin()) return nullptr;
  const Region* r = std::prev(at)->get();
  return r->contains(addr) ? r : nullptr;
}

Region* AddressMap::find(uint32_t addr) {
  return const_cast<Region*>(static_cast<const AddressMap*>(this)->find(addr));
}

void AddressMap::write_bytes(uint32_t addr, const void* data, size_t n) {
  const auto* src = static_cast<const uint8_t*>(data);
  while (n > 0) {
    Region* r = find(addr);
    if (!r || !r->host) throw std::out_of_range(fmt::format("address 0x{:08x} is not in memory", addr));
    const size_t chunk = std::min<size_t>(n, r->size - (addr - r->base));
    std::memcpy(r->host + (addr - r->base), src, chunk);
    src += chunk;
    addr += static_cast<uint32_t>(chunk);
    n -= chunk;
  }
}

void AddressMap::read_bytes(uint32_t addr, void* data, size_t n) const {
  auto* dst = static_cast<uint8_t*>(data);
  while (n > 0) {
    const Region* r = find(addr);
    if (!r || !r->host) throw std::out_of_range(fmt::format("address 0x{:08x} is not in memory", addr));
    const size_t chunk = std::min<size_t>(n, r->size - (addr - r->base));
    std::memcpy(dst, r->host + (addr - r->base), chunk);
    dst += chunk;
    addr += static_cast<uint32_t>(chunk);
    n -= chunk;
  }
}

}  // namespace fabricvp::riscv
