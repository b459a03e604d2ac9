/* Flare dense allreduce, reproducible (tree) variant (seed 004): every
   contribution is stored in its sender's own buffer of the block (no lock
   on the data, any core, any order); an AMO counter tells the last one,
   which reduces the buffers in a fixed binary tree (buffer i takes buffer
   i + d for d = 1, 2, 4, ...), multicasts the result from buffer 0 and
   frees the block. The floating-point result is the same bits whatever order
   the contributions arrived in, at the price of one buffer per host per
   open block (flare.h).

   int32, fp32, fp16 and bf16, sum, min, max, and the fat tree's leaves and spines, as
   flare/dense.c: a leaf reduces its hosts in the fixed tree, the spine the
   leaves' partials. */
#include <handler.h>
#include <packets.h>
#include <flare.h>
#include <flare_ops.h>
#include <stddef.h>

__handler__ void flare_tree_ph(handler_args_t *args) {
  task_t *task = args->task;
  const pkt_hdr_t *pkt = (const pkt_hdr_t *)task->pkt_mem;
  const flare_hdr_t *h = (const flare_hdr_t *)(pkt + 1);
  const uint32_t *in = (const uint32_t *)(h + 1);
  const flare_switch_t *sw = flare_switch(task);
  if (h->host == FLARE_FROM_SWITCH) { /* a leaf: the spine's result goes down to its hosts */
    fabricvp_nic_command(FABRICVP_NID_FIRST(sw->down), 0, task->pkt_mem, pkt->ip_hdr.length);
    return;
  }
  const uint32_t home = task->home_cluster_id;
  const uint32_t slot_bytes = flare_tree_slot_bytes(h->hosts);
  const uint32_t nslots = task->scratchpad_size[home] / slot_bytes;
  flare_tree_slot_t *s =
      (flare_tree_slot_t *)((uintptr_t)task->scratchpad[home] + ((h->block / NB_CLUSTERS) % nslots) * slot_bytes);

  /* take the buffer for this block (or wait until the block before it in this buffer is freed) */
  for (;;) {
    futex_lock(&s->lock);
    if (s->block == 0) {
      s->block = h->block + 1;
      /* the result packet's headers: this packet's */
      const uint32_t *src = (const uint32_t *)(uintptr_t)task->pkt_mem;
      uint32_t *dst = (uint32_t *)((uintptr_t)s + offsetof(flare_tree_slot_t, pkt));
      for (uint32_t i = 0; i < (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u; ++i) dst[i] = src[i];
    }
    if (s->block == h->block + 1) break;
    futex_unlock(&s->lock);
    rt_time_wait_cycles(32);
  }
  futex_unlock(&s->lock);

  /* a leaf's hosts are down x index .. : their buffers are numbered from 0 */
  const uint32_t from = sw->role == FLARE_LEAF ? h->host - sw->down * sw->index : h->host;
  uint32_t *mine = (uint32_t *)((uintptr_t)s->data + from * FLARE_MAX_BLOCK_BYTES);
  for (uint32_t i = 0; i < flare_words(h); ++i) mine[i] = in[i];
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  if (done < h->hosts) return;

  /* the last contribution: the fixed tree, then answer every host and free the buffer */
  for (uint32_t d = 1; d < h->hosts; d *= 2)
    for (uint32_t i = 0; i + d < h->hosts; i += 2 * d)
      combine(h->dtype, h->op, (uint32_t *)((uintptr_t)s->data + i * FLARE_MAX_BLOCK_BYTES),
              (const uint32_t *)((uintptr_t)s->data + (i + d) * FLARE_MAX_BLOCK_BYTES), h->count);
  const uint32_t bytes = flare_bytes(h);
  const uint32_t len = sizeof(pkt_hdr_t) + sizeof(flare_hdr_t) + bytes;
  s->pkt.ip_hdr.length = (uint16_t)len;
  spin_cmd_t send;
  if (sw->role == FLARE_LEAF) { /* the leaf's partial goes up, a contribution of its own */
    s->hdr.host = (uint16_t)sw->index;
    s->hdr.hosts = (uint16_t)sw->leaves;
    send = fabricvp_nic_command(sw->down + h->block % sw->spines, 0, &s->pkt, len);
  } else {
    s->hdr.host = FLARE_FROM_SWITCH;
    send = fabricvp_nic_command(FABRICVP_NID_ALL, 0, &s->pkt, len);
  }
  spin_cmd_wait(send);
  s->arrived = 0;
  amo_store(&s->block, 0);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_tree_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
