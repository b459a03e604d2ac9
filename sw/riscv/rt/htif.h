/* Console and exit of fabricvp's bare-metal RV32 programs through HTIF
   (the tohost/fromhost convention of `fabricvp riscv` and QEMU's spike
   machine). No libc needed. */
#pragma once
#include <stdint.h>

void htif_putc(char c);
void htif_puts(const char *s);
void htif_put_hex(uint32_t v);          /* 8 hex digits */
void htif_put_dec(int32_t v);
void htif_exit(int code) __attribute__((noreturn));
