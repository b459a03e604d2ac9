/* fabricvp PsPIN-compatible handler API: the cluster DMA engine (L2 <-> L1
   copies). PsPIN drives PULP's cluster DMA; fabricvp has its own register
   window for it (docs/pspin.md, "Differences"), the source-level API is the
   same. */
#pragma once

#include <stdint.h>

#include "pspin.h"

#define SPIN_DMA_BASE 0x1B204400
#define SPIN_DMA_SRC (SPIN_DMA_BASE + 0x00)
#define SPIN_DMA_DST (SPIN_DMA_BASE + 0x04)
#define SPIN_DMA_LEN (SPIN_DMA_BASE + 0x08)
#define SPIN_DMA_ISSUE (SPIN_DMA_BASE + 0x0C) /* read: start the copy, returns its id (> 0) */
#define SPIN_DMA_WAIT (SPIN_DMA_BASE + 0x10)  /* write an id: stall until the copy is done */
#define SPIN_DMA_TEST (SPIN_DMA_BASE + 0x14)  /* write an id, read: 1 if done */

static inline dma_t spin__memcpy_nonblk(void *source, void *dest, uint32_t size) {
  *(volatile uint32_t *)SPIN_DMA_SRC = (uint32_t)source;
  *(volatile uint32_t *)SPIN_DMA_DST = (uint32_t)dest;
  *(volatile uint32_t *)SPIN_DMA_LEN = size;
  return *(volatile uint32_t *)SPIN_DMA_ISSUE;
}

static inline void spin__wait_for_tf_completion(dma_t id) { *(volatile uint32_t *)SPIN_DMA_WAIT = id; }

static inline uint32_t spin__tf_completed(dma_t id) {
  *(volatile uint32_t *)SPIN_DMA_TEST = id;
  return *(volatile uint32_t *)SPIN_DMA_TEST;
}
