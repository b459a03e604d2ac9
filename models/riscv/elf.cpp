#include "models/riscv/elf.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace fabricvp::riscv {

bool ElfImage::executable(uint32_t addr) const {
  for (const ElfSegment& s : segments)
    if ((s.flags & PF_X) && addr >= s.addr && uint64_t(addr) < uint64_t(s.addr) + s.memsz) return true;
  return false;
}

std::optional<uint32_t> ElfImage::symbol(const std::string& name) const {
  auto it = symbols.find(name);
  if (it == symbols.end()) return std::nullopt;
  return it->second;
}

ElfImage read_elf(const std::string& path) {
  auto fail = [&](const std::string& why) { return std::runtime_error(fmt::format("{}: {}", path, why)); };
  // Only a regular file of at most 1 GiB (as models/core/input_file.h, which this library does not link):
  // a FIFO or a device would block or never end.
  {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw fail(std::string("cannot open: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw fail("not a regular file (a directory, FIFO or device); give an ELF file");
    if (static_cast<uint64_t>(st.st_size) > (uint64_t(1) << 30)) throw fail("over 1 GiB; not a program");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail(std::string("cannot open: ") + std::strerror(errno));
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  if (elf_version(EV_CURRENT) == EV_NONE) throw fail("libelf is out of date");
  std::unique_ptr<Elf, decltype(&elf_end)> elf(elf_memory(file.data(), file.size()), &elf_end);
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) throw fail("not an ELF file");
  if (gelf_getclass(elf.get()) != ELFCLASS32) throw fail("not a 32-bit ELF file (RV32 expected)");
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf.get(), &eh)) throw fail(std::string("bad ELF header: ") + elf_errmsg(-1));
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) throw fail("not little-endian");
  if (eh.e_machine != EM_RISCV) throw fail(fmt::format("machine {} is not RISC-V ({})", eh.e_machine, EM_RISCV));
  if (eh.e_type != ET_EXEC) throw fail("not an executable (ET_EXEC): link it first");

  ElfImage img;
  img.path = path;
  img.entry = static_cast<uint32_t>(eh.e_entry);
  img.e_flags = static_cast<uint32_t>(eh.e_flags);

  size_t nph = 0;
  if (elf_getphdrnum(elf.get(), &nph) != 0) throw fail(std::string("bad program headers: ") + elf_errmsg(-1));
  for (size_t i = 0; i < nph; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph)) throw fail("bad program header");
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    if (ph.p_filesz > ph.p_memsz) throw fail(fmt::format("segment {} has more file bytes than memory bytes", i));
    if (ph.p_paddr + ph.p_memsz > (uint64_t{1} << 32))
      throw fail(fmt::format("segment {} at 0x{:x} passes the end of the 32-bit space", i, ph.p_paddr));
    if (ph.p_offset + ph.p_filesz > file.size()) throw fail(fmt::format("segment {} lies past the end of the file", i));
    ElfSegment s;
    s.addr = static_cast<uint32_t>(ph.p_paddr);
    s.memsz = static_cast<uint32_t>(ph.p_memsz);
    s.flags = ph.p_flags;
    s.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(ph.p_offset),
                   file.begin() + static_cast<std::ptrdiff_t>(ph.p_offset + ph.p_filesz));
    img.segments.push_back(std::move(s));
  }
  if (img.segments.empty()) throw fail("no loadable segment");

  size_t nsh = 0;
  if (elf_getshdrnum(elf.get(), &nsh) != 0) throw fail(std::string("bad section headers: ") + elf_errmsg(-1));
  if (eh.e_shoff && eh.e_shoff + uint64_t{nsh} * eh.e_shentsize > file.size())
    throw fail("bad section headers: they lie past the end of the file");
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) throw fail(std::string("bad section header: ") + elf_errmsg(-1));
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || sh.sh_entsize == 0)
      throw fail(std::string("unreadable symbol table: ") + (data ? "entry size 0" : elf_errmsg(-1)));
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t k = 0; k < count; ++k) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(k), &sym)) continue;
      if (sym.st_shndx == SHN_UNDEF) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) continue;
      const char* name = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
      if (!name || !*name) continue;
      // A global definition wins over a local one of the same name.
      const bool global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
      auto [it, inserted] = img.symbols.emplace(name, static_cast<uint32_t>(sym.st_value));
      if (!inserted && global) it->second = static_cast<uint32_t>(sym.st_value);
    }
  }
  return img;
}

}  // namespace fabricvp::riscv
