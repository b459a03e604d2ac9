/* Flare dense allreduce, multiple buffers per block (seed 004): a
   contribution takes the first free buffer of its block (trying from buffer
   host mod buffers), so up to `buffers` contributions combine at once; the
   last merges the buffers that got contributions, in order, into buffer 0, multicasts the result (a leaf:
   sends it up), logs the order (buffer << 12 | host per contribution, in the
   order applied; the check replays it bit for bit) and frees the block. The
   number of buffers comes from flare_switch_t (flare.h); one buffer is the
   single-buffer kernel with its lock held per buffer instead of per block.

   int32, fp32, fp16 and bf16, sum, min, max, as flare/dense.c. */
#include <handler.h>
#include <packets.h>
#include <flare.h>
#include <flare_ops.h>
#include <stddef.h>

static inline uint32_t *buffer(flare_multi_slot_t *s, uint32_t j) {
  return (uint32_t *)((uintptr_t)s->data + j * FLARE_MAX_BLOCK_BYTES);
}

__handler__ void flare_multi_ph(handler_args_t *args) {
  task_t *task = args->task;
  const pkt_hdr_t *pkt = (const pkt_hdr_t *)task->pkt_mem;
  const flare_hdr_t *h = (const flare_hdr_t *)(pkt + 1);
  const uint32_t *in = (const uint32_t *)(h + 1);
  const flare_switch_t *sw = flare_switch(task);
  if (h->host == FLARE_FROM_SWITCH) { /* a leaf: the spine's result goes down to its hosts */
    fabricvp_nic_command(FABRICVP_NID_FIRST(sw->down), 0, task->pkt_mem, pkt->ip_hdr.length);
    return;
  }
  const uint32_t k = sw->buffers;
  const uint32_t home = task->home_cluster_id;
  const uint32_t slot_bytes = flare_multi_slot_bytes(k);
  const uint32_t nslots = task->scratchpad_size[home] / slot_bytes;
  flare_multi_slot_t *s =
      (flare_multi_slot_t *)((uintptr_t)task->scratchpad[home] + ((h->block / NB_CLUSTERS) % nslots) * slot_bytes);

  /* take the block's buffers (or wait until the block before it here is freed) */
  for (;;) {
    futex_lock(&s->take);
    if (s->block == 0) {
      s->block = h->block + 1;
      const uint32_t *src = (const uint32_t *)(uintptr_t)task->pkt_mem;
      uint32_t *dst = (uint32_t *)((uintptr_t)s + offsetof(flare_multi_slot_t, pkt));
      for (uint32_t i = 0; i < (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u; ++i) dst[i] = src[i];
    }
    if (s->block == h->block + 1) break;
    futex_unlock(&s->take);
    rt_time_wait_cycles(32);
  }
  futex_unlock(&s->take);

  /* the first free buffer, from this host's */
  uint32_t j = h->host % k;
  while (!futex_try_lock(&s->lock[j])) j = j + 1 == k ? 0 : j + 1;
  uint32_t *acc = buffer(s, j);
  if (s->used[j] == 0) {
    for (uint32_t i = 0; i < flare_words(h); ++i) acc[i] = in[i];
  } else {
    combine(h->dtype, h->op, acc, in, h->count);
  }
  ++s->used[j];
  s->order[amo_add((volatile int32_t *)&s->logpos, 1)] = (uint16_t)(j << 12 | h->host);
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  futex_unlock(&s->lock[j]);
  if (done < h->hosts) return;

  /* the last contribution: merge the buffers in order into buffer 0 (which sends), answer, log, free */
  uint32_t first = 0;
  while (!s->used[first]) ++first;
  if (first != 0)
    for (uint32_t i = 0; i < flare_words(h); ++i) buffer(s, 0)[i] = buffer(s, first)[i];
  for (uint32_t b = first + 1; b < k; ++b)
    if (s->used[b]) combine(h->dtype, h->op, buffer(s, 0), buffer(s, b), h->count);
  const uint32_t len = sizeof(pkt_hdr_t) + sizeof(flare_hdr_t) + flare_bytes(h);
  s->pkt.ip_hdr.length = (uint16_t)len;
  spin_cmd_t send;
  if (sw->role == FLARE_LEAF) {
    s->hdr.host = (uint16_t)sw->index;
    s->hdr.hosts = (uint16_t)sw->leaves;
    send = fabricvp_nic_command(sw->down + h->block % sw->spines, 0, &s->pkt, len);
  } else {
    s->hdr.host = FLARE_FROM_SWITCH;
    send = fabricvp_nic_command(FABRICVP_NID_ALL, 0, &s->pkt, len);
  }
  const uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  spin_cmd_t log = fabricvp_host_dma(host + (uint64_t)h->block * h->hosts * 2u, (uint32_t)s->order,
                                     (uint32_t)h->hosts * 2u, 1, 0);
  spin_cmd_wait(send);
  spin_cmd_wait(log);
  for (uint32_t b = 0; b < k; ++b) s->used[b] = 0;
  s->arrived = 0;
  s->logpos = 0;
  amo_store(&s->block, 0);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_multi_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
