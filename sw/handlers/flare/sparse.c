/* Flare sparse allreduce (seed 004): blocks of (offset, value) pairs
   (flare.h). The payload handler of each contribution finds its block's
   buffer in the home cluster's scratchpad and, under the buffer's lock,
   accumulates its pairs into the block's store: a dense array over the
   block's index range, a hash table, or the two-level directory of chunks
   (flare_switch_t.format; flare.h flare_sparse_slot_t). An element present
   in several contributions is combined (op), one present in one is stored:
   the result holds the union of their elements (fill-in). When the store is
   full, its pairs are flushed on (the receivers reduce them with the rest,
   so the result stays exact) and it starts again empty. The contribution
   that completes the block's weight sends the store's pairs on (a leaf: up
   to the block's spine as its own contribution; a spine or a single switch:
   to every host), the last packet marked FLARE_LAST, and frees the buffer.

   Every contribution applied is logged to the switch's host memory (block,
   sender, packet number; 8 bytes at the next position of flare_log_pos), so
   that the check can replay the float reductions in the order the switch
   applied them. */
#include <handler.h>
#include <packets.h>
#include <flare.h>
#include <flare_ops.h>
#include <stddef.h>

/* the next entry of the order log (an AMO counter in L2) */
volatile uint32_t flare_log_pos __attribute__((section(".l2_handler_data"), used));

/* Send the pairs gathered in the slot's packet: a flush or the block's last packet (`last`). */
static void sparse_send(const task_t *task, flare_sparse_slot_t *s, const flare_hdr_t *h, uint32_t last) {
  flare_copy_words((uint32_t *)((uintptr_t)s + offsetof(flare_sparse_slot_t, pkt)), (const uint32_t *)task->pkt_mem,
                   sizeof(pkt_hdr_t) / 4u);
  s->hdr.reduction = h->reduction;
  s->hdr.seq = (uint16_t)(s->sent++ | (last ? FLARE_LAST : 0u));
  s->hdr.block = h->block;
  s->hdr.dtype = h->dtype;
  s->hdr.op = h->op;
  s->hdr.count = (uint16_t)s->out;
  spin_cmd_wait(flare_answer(task, &s->pkt, &s->hdr));
  s->out = 0;
}

static inline void sparse_out(const task_t *task, flare_sparse_slot_t *s, const flare_hdr_t *h, uint32_t off,
                              uint32_t v) {
  if (s->out == FLARE_SPARSE_PAIRS) sparse_send(task, s, h, 0);
  s->pairs[2u * s->out] = off;
  s->pairs[2u * s->out + 1u] = v;
  ++s->out;
}

/* Every pair of the store, in its order, into packets; the store is empty after. */
static void sparse_emit(const task_t *task, flare_sparse_slot_t *s, const flare_hdr_t *h, uint32_t last) {
  const flare_switch_t *sw = flare_switch(task);
  const uint32_t span = sw->span;
  if (sw->format == FLARE_ARRAY) {
    uint32_t *val = s->store, *bits = s->store + span;
    for (uint32_t w = 0; w < span / 32u; ++w) {
      uint32_t b = bits[w];
      bits[w] = 0;
      for (uint32_t i = 0; b; ++i, b >>= 1)
        if (b & 1u) sparse_out(task, s, h, w * 32u + i, val[w * 32u + i]);
    }
  } else if (sw->format == FLARE_HASH) {
    uint32_t *key = s->store, *val = s->store + sw->entries;
    for (uint32_t j = 0; j < sw->entries; ++j)
      if (key[j]) {
        sparse_out(task, s, h, key[j] - 1u, val[j]);
        key[j] = 0;
      }
  } else {
    uint16_t *dir = (uint16_t *)s->store;
    uint32_t *pool = s->store + (span / 32u + 1u) / 2u;
    for (uint32_t c = 0; c < span / 32u; ++c) {
      if (!dir[c]) continue;
      const uint32_t *ch = pool + (dir[c] - 1u) * 33u;
      dir[c] = 0;
      uint32_t b = ch[0];
      for (uint32_t i = 0; b; ++i, b >>= 1)
        if (b & 1u) sparse_out(task, s, h, c * 32u + i, ch[1u + i]);
    }
  }
  s->used = 0;
  if (last || s->out) sparse_send(task, s, h, last);
}

static inline void sparse_apply(const flare_hdr_t *h, uint32_t *acc, uint32_t v) {
  combine(h->dtype & FLARE_DTYPE, h->op, acc, &v, 1);
}

/* One pair into the store (flushing it first if it is full). */
static void sparse_put(const task_t *task, flare_sparse_slot_t *s, const flare_hdr_t *h, uint32_t off, uint32_t v) {
  const flare_switch_t *sw = flare_switch(task);
  if (sw->format == FLARE_ARRAY) {
    uint32_t *val = s->store, *bits = s->store + sw->span;
    const uint32_t m = 1u << (off & 31u);
    if (bits[off >> 5] & m) {
      sparse_apply(h, &val[off], v);
    } else {
      val[off] = v;
      bits[off >> 5] |= m;
    }
  } else if (sw->format == FLARE_HASH) {
    const uint32_t n = sw->entries, shift = 32u - (uint32_t)__builtin_ctz(n);
    uint32_t *key = s->store, *val = s->store + n;
    uint32_t j = (off * 2654435761u) >> shift;
    while (key[j] && key[j] != off + 1u) j = (j + 1u) & (n - 1u);
    if (key[j]) {
      sparse_apply(h, &val[j], v);
      return;
    }
    if (s->used == n - n / 4u) { /* full: flush, then the table is empty */
      sparse_emit(task, s, h, 0);
      j = (off * 2654435761u) >> shift;
    }
    key[j] = off + 1u;
    val[j] = v;
    ++s->used;
  } else {
    uint16_t *dir = (uint16_t *)s->store;
    uint32_t *pool = s->store + (sw->span / 32u + 1u) / 2u;
    const uint32_t c = off >> 5, m = 1u << (off & 31u);
    if (!dir[c]) {
      if (s->used == sw->entries) sparse_emit(task, s, h, 0); /* no chunk left: flush */
      dir[c] = (uint16_t)++s->used;
      pool[(s->used - 1u) * 33u] = 0;
    }
    uint32_t *ch = pool + (dir[c] - 1u) * 33u;
    if (ch[0] & m) {
      sparse_apply(h, &ch[1u + (off & 31u)], v);
    } else {
      ch[1u + (off & 31u)] = v;
      ch[0] |= m;
    }
  }
}

__handler__ void flare_sparse_ph(handler_args_t *args) {
  task_t *task = args->task;
  const pkt_hdr_t *pkt = (const pkt_hdr_t *)task->pkt_mem;
  const flare_hdr_t *h = (const flare_hdr_t *)(pkt + 1);
  if (flare_forward_peer(task)) return; /* another collective's packet from host to host */
  const uint32_t *in = (const uint32_t *)(h + 1);
  if (flare_pass_down(task, pkt, h)) return;
  const flare_switch_t *sw = flare_switch(task);
  flare_sparse_slot_t *s =
      (flare_sparse_slot_t *)flare_buffer_of(task, h->block, flare_sparse_slot_bytes(sw->format, sw->span, sw->entries));

  flare_lock_block(&s->lock, &s->block, h->block);
  s->block = h->block + 1;
  for (uint32_t i = 0; i < h->count; ++i)
    if (in[2u * i] < sw->span) sparse_put(task, s, h, in[2u * i], in[2u * i + 1u]);

  /* the log: this contribution was applied now */
  const uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  const uint32_t pos = (uint32_t)amo_add((volatile int32_t *)&flare_log_pos, 1);
  s->logent[0] = h->block;
  s->logent[1] = (uint32_t)h->host | (uint32_t)h->seq << 16;
  spin_cmd_t log = fabricvp_host_dma(host + (uint64_t)pos * 8u, (uint32_t)s->logent, 8u, 1, 0);

  s->arrived += flare_weight(h->seq);
  if (s->arrived == (uint32_t)h->hosts * FLARE_UNIT) { /* complete: the result on, the buffer free */
    sparse_emit(task, s, h, 1);
    s->arrived = 0;
    s->sent = 0;
    spin_cmd_wait(log);
    amo_store(&s->block, 0);
  } else {
    spin_cmd_wait(log);
  }
  futex_unlock(&s->lock);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_sparse_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
