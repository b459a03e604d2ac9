/* Flare dense allreduce, single buffer per block (seed 004): the payload
   handler of each contribution finds its block's buffer in the home
   cluster's scratchpad; the first contribution copies its packet there, the
   others combine their elements into it under the buffer's lock
   (hierarchical FCFS: the scheduler picks the home cluster, then the first
   free core). An AMO counter tells the last contribution, which sends the
   result to every host (one multicast command), records the order the
   contributions were applied in (host memory: 2 bytes per host per block, so
   the float result can be checked bit for bit), waits for both, and frees
   the buffer. In a fat tree (flare.h flare_switch_t) a leaf sends its
   partial result up instead, and passes the spine's result down.

   int32, fp32, fp16 and bf16 (soft-float on rv32imac, the F extension with
   isa=rv32imafc; 16-bit values computed in binary32, rounded once); sum, min, max. The hosts' window bounds the open blocks
   (flare.h). */
#include <handler.h>
#include <packets.h>
#include <flare.h>
#include <flare_ops.h>
#include <stddef.h>

__handler__ void flare_dense_ph(handler_args_t *args) {
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
  const uint32_t nslots = task->scratchpad_size[home] / sizeof(flare_slot_t);
  flare_slot_t *s = (flare_slot_t *)task->scratchpad[home] + (h->block / NB_CLUSTERS) % nslots;
  const uint32_t bytes = flare_bytes(h);

  for (;;) {
    futex_lock(&s->lock);
    if (s->block == 0 || s->block == h->block + 1) break;
    /* the block that held the buffer is being answered: wait for it to be freed (were it still open, the
       hosts' window would be wider than the switch memory, and the watchdog ends the wait) */
    futex_unlock(&s->lock);
    rt_time_wait_cycles(32);
  }
  const uint32_t n = s->arrived;
  if (n == 0) {
    s->block = h->block + 1;
    /* the packet as it came (headers and elements) becomes the result: word copies (no libc) */
    const uint32_t *src = (const uint32_t *)(uintptr_t)task->pkt_mem;
    uint32_t *dst = (uint32_t *)((uintptr_t)s + offsetof(flare_slot_t, pkt));
    const uint32_t words = (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u + flare_words(h);
    for (uint32_t i = 0; i < words; ++i) dst[i] = src[i];
  } else {
    combine(h->dtype, h->op, (uint32_t *)s->data, in, h->count);
  }
  s->order[n] = h->host;
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  futex_unlock(&s->lock);
  if (done < h->hosts) return;

  /* the last contribution: answer every host (a leaf: send the partial up), log the order, free the buffer */
  const uint32_t len = sizeof(pkt_hdr_t) + sizeof(flare_hdr_t) + bytes;
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
  s->arrived = 0;
  amo_store(&s->block, 0);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_dense_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
