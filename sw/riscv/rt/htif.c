#include "htif.h"

extern volatile uint64_t tohost;
extern volatile uint64_t fromhost;

static void htif_command(uint32_t high, uint32_t low) {
  volatile uint32_t *t = (volatile uint32_t *)&tohost;
  t[0] = low;
  t[1] = high; /* the upper half is written last: it starts the command */
}

void htif_putc(char c) {
  htif_command(0x01010000u, (uint8_t)c);
  fromhost = 0;
}

void htif_puts(const char *s) {
  while (*s) htif_putc(*s++);
}

void htif_put_hex(uint32_t v) {
  for (int i = 7; i >= 0; --i) htif_putc("0123456789abcdef"[(v >> (4 * i)) & 15]);
}

void htif_put_dec(int32_t v) {
  char buf[12];
  int n = 0;
  uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
  do {
    buf[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) htif_putc('-');
  while (n) htif_putc(buf[--n]);
}

void htif_exit(int code) {
  htif_command(0, ((uint32_t)code << 1) | 1);
  for (;;) {
  }
}

void htif_trap(uint32_t cause, uint32_t epc, uint32_t tval) {
  htif_puts("trap: mcause ");
  htif_put_hex(cause);
  htif_puts(" mepc ");
  htif_put_hex(epc);
  htif_puts(" mtval ");
  htif_put_hex(tval);
  htif_putc('\n');
  htif_exit(1000);
}
