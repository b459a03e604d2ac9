/* Floating-point workload: soft-float (libgcc) on rv32imac, the F
   extension on rv32imafc; both must print the same bits, as QEMU does.
   Basic operations only (each IEEE-rounded, so the two agree exactly). */
#include <stdint.h>

#include "htif.h"

static uint32_t bits_of(float f) {
  union {
    float f;
    uint32_t u;
  } v = {f};
  return v.u;
}

static void show(const char *name, float f) {
  htif_puts(name);
  htif_putc(' ');
  htif_put_hex(bits_of(f));
  htif_putc('\n');
}

static float newton_sqrt(float x) {
  float r = x > 1.0f ? x / 2.0f : 1.0f;
  for (int i = 0; i < 30; ++i) r = 0.5f * (r + x / r);
  return r;
}

int main(void) {
  volatile float seed = 1.0f;
  float sum = 0.0f, harm = 0.0f, prod = 1.0f;
  for (int i = 1; i <= 2000; ++i) {
    sum += seed / (float)i;
    harm += 1.0f / ((float)i * (float)i);
    prod *= 1.0f + 1.0f / (float)(i + 1000);
  }
  show("sum", sum);
  show("basel", harm);
  show("prod", prod);
  show("sqrt2", newton_sqrt(2.0f));
  show("sqrt1e10", newton_sqrt(1e10f));
  float tiny = 1e-30f;
  for (int i = 0; i < 20; ++i) tiny *= 0.25f;  /* into the subnormals */
  show("tiny", tiny);
  float big = 1e30f;
  for (int i = 0; i < 10; ++i) big *= 10.0f;   /* overflow to infinity */
  show("big", big);
  int32_t acc = 0;
  for (int i = -500; i < 500; ++i) acc += (int32_t)((float)i * 0.37f) + (int32_t)(uint32_t)((float)(i + 500) * 3.3f);
  htif_puts("cvt ");
  htif_put_dec(acc);
  htif_putc('\n');
  return 0;
}
