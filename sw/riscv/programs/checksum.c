/* Integer workload for the ISS (differential runs against QEMU, benchmark):
   an LCG, CRC-32 with a table, insertion sort, binary search, 64-bit
   multiplication and division (libgcc), bit manipulation. Prints its
   results through HTIF and returns 0. */
#include <stdint.h>

#include "htif.h"

#define N 512

static uint32_t data[N];
static uint32_t crc_table[256];

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s;
}

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc32(const uint8_t *p, uint32_t n) {
  uint32_t c = 0xffffffffu;
  while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

static int find(const uint32_t *a, int n, uint32_t key) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (a[mid] == key) return mid;
    if (a[mid] < key)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

int main(void) {
  uint32_t seed = 12345;
  for (int i = 0; i < N; ++i) data[i] = lcg(&seed);
  crc_init();
  htif_puts("crc ");
  htif_put_hex(crc32((const uint8_t *)data, sizeof data));
  htif_putc('\n');

  for (int i = 1; i < N; ++i) {
    uint32_t v = data[i];
    int j = i - 1;
    while (j >= 0 && data[j] > v) {
      data[j + 1] = data[j];
      --j;
    }
    data[j + 1] = v;
  }
  for (int i = 1; i < N; ++i)
    if (data[i - 1] > data[i]) return 2;
  htif_puts("sorted crc ");
  htif_put_hex(crc32((const uint8_t *)data, sizeof data));
  htif_puts(" found ");
  htif_put_dec(find(data, N, data[300]));
  htif_putc('\n');

  uint64_t acc = 0x0123456789abcdefull;
  int64_t sacc = -987654321012345ll;
  for (int i = 0; i < 200; ++i) {
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
    sacc = sacc / 3 + (int64_t)(acc % 1000003u) - (int64_t)(acc >> 40);
  }
  htif_puts("u64 ");
  htif_put_hex((uint32_t)(acc >> 32));
  htif_put_hex((uint32_t)acc);
  htif_puts(" s64 ");
  htif_put_hex((uint32_t)((uint64_t)sacc >> 32));
  htif_put_hex((uint32_t)sacc);
  htif_putc('\n');

  uint32_t bits = 0;
  for (uint32_t i = 1; i < 5000; ++i) {
    uint32_t v = i * 2654435761u;
    bits += (uint32_t)__builtin_popcount(v) + (uint32_t)__builtin_clz(v | 1) + (v % 97) + (v / 13);
    bits ^= (uint32_t)((int32_t)v >> (i & 31));
  }
  htif_puts("bits ");
  htif_put_hex(bits);
  htif_putc('\n');
  return 0;
}
