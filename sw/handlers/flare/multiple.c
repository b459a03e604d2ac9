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
  if (flare_forward_peer(task)) return; /* another collective's packet from host to host */
  const uint32_t *in = (const uint32_t *)(h + 1);
  if (flare_pass_down(task, pkt, h)) return;
  const uint32_t k = flare_switch(task)->buffers;
  flare_multi_slot_t *s = (flare_multi_slot_t *)flare_buffer_of(task, h->block, flare_multi_slot_bytes(k));

  /* take the block's buffers; the first takes the packet's headers for the result's */
  flare_lock_block(&s->take, &s->block, h->block);
  if (s->block == 0) {
    s->block = h->block + 1;
    flare_copy_words((uint32_t *)((uintptr_t)s + offsetof(flare_multi_slot_t, pkt)), (const uint32_t *)task->pkt_mem,
                     (sizeof(pkt_hdr_t) + sizeof(flare_hdr_t)) / 4u);
  }
  futex_unlock(&s->take);

  /* the first free buffer, from this host's */
  uint32_t j = h->host % k;
  while (!futex_try_lock(&s->lock[j])) j = j + 1 == k ? 0 : j + 1;
  uint32_t *acc = buffer(s, j);
  if (s->used[j] == 0)
    flare_copy_words(acc, in, flare_words(h));
  else
    combine(h->dtype, h->op, acc, in, h->count);
  ++s->used[j];
  s->order[amo_add((volatile int32_t *)&s->logpos, 1)] = (uint16_t)(j << 12 | h->host);
  const uint32_t done = (uint32_t)amo_add((volatile int32_t *)&s->arrived, 1) + 1;
  futex_unlock(&s->lock[j]);
  if (done < h->hosts) return;

  /* the last contribution: merge the buffers in order into buffer 0 (which sends), answer, log, free */
  uint32_t first = 0;
  while (!s->used[first]) ++first;
  if (first != 0) flare_copy_words(buffer(s, 0), buffer(s, first), flare_words(h));
  for (uint32_t b = first + 1; b < k; ++b)
    if (s->used[b]) combine(h->dtype, h->op, buffer(s, 0), buffer(s, b), h->count);
  spin_cmd_t send = flare_answer(task, &s->pkt, &s->hdr);
  spin_cmd_t log = flare_log_order(task, h->block, h->hosts, s->order);
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
