/* ISS benchmark (bench/riscv.sh): the inner loop of an integer-reduce
   handler (load a payload word, add it into an accumulator word, store),
   over a 1 KiB "packet" into a 1 KiB "scratchpad", many times. Prints a
   checksum so the work cannot be optimized away. */
#include <stdint.h>

#include "htif.h"

#ifndef PASSES
#define PASSES 200000
#endif

static int32_t packet[249];
static volatile int32_t acc[249];

int main(void) {
  for (int i = 0; i < 249; ++i) packet[i] = i * 7 - 100;
  for (int p = 0; p < PASSES; ++p) {
    const int32_t *in = packet;
    volatile int32_t *out = acc;
    for (int i = 0; i < 249; ++i) out[i] += in[i] ^ p;
  }
  int32_t sum = 0;
  for (int i = 0; i < 249; ++i) sum += acc[i];
  htif_puts("checksum ");
  htif_put_hex((uint32_t)sum);
  htif_putc('\n');
  return 0;
}
