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
  if (flare_forward_peer(task)) return; /* another collective's packet from host to host */
  const uint32_t *in = (const uint32_t *)(h + 1);
  if (flare_pass_down(task, pkt, h)) return;
  flare_slot_t *s = (flare_slot_t *)flare_buffer_of(task, h->block, sizeof(flare_slot_t));

  flare_lock_block(&s->lock, &s->block, h->block);
  const uint32_t n = s->arrived;
  if (n == 0) {
    s->block = h->block + 1;
    /* the packet as it came (headers and elements) becomes the result */
    flare_copy_words((uint32_t *)((uintptr_t)s + offsetof(flare_slot_t, pkt)), (const uint32_t *)task->pkt_mem,
                     (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u + flare_words(h));
  } else {
    combine(h->dtype, h->op, (uint32_t *)s->data, in, h->count);
  }
  s->order[n] = h->host;
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  futex_unlock(&s->lock);
  if (done < h->hosts) return;

  /* the last contribution: answer (a leaf: send the partial up), log the order, free the buffer */
  spin_cmd_t send = flare_answer(task, &s->pkt, &s->hdr);
  spin_cmd_t log = flare_log_order(task, h->block, h->hosts, s->order);
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
