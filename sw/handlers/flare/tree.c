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

static inline uint32_t *tree_buffer(flare_tree_slot_t *s, uint32_t i) {
  return (uint32_t *)((uintptr_t)s->data + i * FLARE_MAX_BLOCK_BYTES);
}

__handler__ void flare_tree_ph(handler_args_t *args) {
  task_t *task = args->task;
  const pkt_hdr_t *pkt = (const pkt_hdr_t *)task->pkt_mem;
  const flare_hdr_t *h = (const flare_hdr_t *)(pkt + 1);
  if (flare_forward_peer(task)) return; /* another collective's packet from host to host */
  const uint32_t *in = (const uint32_t *)(h + 1);
  if (flare_pass_down(task, pkt, h)) return;
  const flare_switch_t *sw = flare_switch(task);
  flare_tree_slot_t *s = (flare_tree_slot_t *)flare_buffer_of(task, h->block, flare_tree_slot_bytes(h->hosts));

  /* take the buffer for this block; the first takes the packet's headers for the result's */
  flare_lock_block(&s->lock, &s->block, h->block);
  if (s->block == 0) {
    s->block = h->block + 1;
    flare_copy_words((uint32_t *)((uintptr_t)s + offsetof(flare_tree_slot_t, pkt)), (const uint32_t *)task->pkt_mem,
                     (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u);
  }
  futex_unlock(&s->lock);

  /* a leaf's hosts are down x index .. : their buffers are numbered from 0 */
  const uint32_t from = sw->role == FLARE_LEAF ? h->host - sw->down * sw->index : h->host;
  flare_copy_words(tree_buffer(s, from), in, flare_words(h));
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  if (done < h->hosts) return;

  /* the last contribution: the fixed tree, then answer (a leaf: send the partial up) and free the buffer */
  for (uint32_t d = 1; d < h->hosts; d *= 2)
    for (uint32_t i = 0; i + d < h->hosts; i += 2 * d)
      combine(h->dtype, h->op, tree_buffer(s, i), tree_buffer(s, i + d), h->count);
  spin_cmd_wait(flare_answer(task, &s->pkt, &s->hdr));
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
