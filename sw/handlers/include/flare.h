/* Flare in-network allreduce (seed 004): the packet format the hosts
   (models/flare) and the aggregation kernels (sw/handlers/flare) share, and
   the kernels' switch-memory layout. docs/flare.md describes the protocol.

   A packet: IPv4 (20 B) + UDP (8 B) + flare_hdr_t (16 B) + `count`
   elements. A host sends block b of its vector as one packet whose PsPIN
   message id (flow id) is b: the switch's scheduler sends every contribution
   to block b to home cluster b mod clusters. The switch answers each block
   once, with the reduced elements, to every host (multicast). */
#pragma once

#include <stdint.h>

#include <handler.h>
#include <packets.h>

enum { FLARE_INT32 = 0, FLARE_FP32 = 1, FLARE_FP16 = 2, FLARE_BF16 = 3 };
enum { FLARE_SUM = 0, FLARE_MIN = 1, FLARE_MAX = 2, FLARE_USER = 3 };
#define FLARE_FROM_SWITCH 0xffffu /* flare_hdr_t.host of a result */
#define FLARE_MAX_HOSTS 256u
#define FLARE_MAX_BLOCK_BYTES 1024u /* payload of one block */

/* Sparse blocks (flare.h flare_sparse_slot_t, sparse.c): block b is the index
   range [b x span, (b + 1) x span) of the vector; a sender sends its nonzero
   elements of the range as (offset in the range, value) pairs of two 32-bit
   words (a 16-bit value in the low half), in offset order, up to
   FLARE_SPARSE_PAIRS per packet, at least one packet (count 0 if it has
   none). Its packets are numbered 0, 1, .. in `seq`, the last one or'ed with
   FLARE_LAST. A packet weighs 1, the last FLARE_UNIT - its number, so a
   sender's packets weigh FLARE_UNIT together and a block is complete when
   the weights applied reach contributions x FLARE_UNIT, whatever the order
   the cores applied them in. */
#define FLARE_SPARSE 0x80u /* flare_hdr_t.dtype: the payload is (offset, value) pairs */
#define FLARE_DTYPE 0x0fu  /* flare_hdr_t.dtype: the element type */
#define FLARE_LAST 0x8000u
#define FLARE_UNIT 0x8000u
#define FLARE_SPARSE_PAIRS 128u
static inline uint32_t flare_weight(uint16_t seq) {
  return (seq & FLARE_LAST) ? FLARE_UNIT - (seq & (FLARE_LAST - 1u)) : 1u;
}

typedef struct {
  uint16_t reduction; /* the allreduce this block belongs to */
  uint16_t seq;       /* sparse: the packet's number among its sender's for this block, | FLARE_LAST on the last; dense: 0 */
  uint32_t block;     /* block index in the vector */
  uint16_t host;      /* the sender (its switch port), or FLARE_FROM_SWITCH */
  uint16_t hosts;     /* contributions the block takes */
  uint8_t dtype;      /* FLARE_INT32 | FLARE_FP32 | FLARE_FP16 | FLARE_BF16, | FLARE_SPARSE */
  uint8_t op;         /* FLARE_SUM | FLARE_MIN | FLARE_MAX | FLARE_USER */
  uint16_t count;     /* elements in the payload (sparse: (index, value) pairs) */
} __attribute__((__packed__)) flare_hdr_t;

_Static_assert(sizeof(flare_hdr_t) == 16, "flare_hdr_t is 16 bytes");

/* Where the switch sits (the system writes it into the kernel's
   flare_config below; all zero: a single switch). A leaf of a fat tree aggregates its hosts' contributions
   to a block and sends the partial result up to spine (block mod spines) as
   a contribution of its own (host = leaf index, hosts = leaves); a result
   coming down from a spine it multicasts to its hosts, on ports 0 .. down-1.
   A spine, like a single switch, answers on every port. */
enum { FLARE_SINGLE = 0, FLARE_LEAF = 1, FLARE_SPINE = 2 };
typedef struct {
  uint32_t role;    /* FLARE_SINGLE | FLARE_LEAF | FLARE_SPINE */
  uint32_t index;   /* leaf: its index (its hosts are down x index ..) */
  uint32_t down;    /* leaf: host ports 0 .. down - 1 */
  uint32_t spines;  /* leaf: uplinks on ports down .. down + spines - 1 */
  uint32_t leaves;  /* leaf: contributions a block takes at the spine */
  uint32_t buffers; /* the multiple-buffers variant: buffers per block (1 .. FLARE_MAX_BUFFERS) */
  uint32_t format;  /* sparse: FLARE_ARRAY | FLARE_HASH | FLARE_TWOLEVEL */
  uint32_t span;    /* sparse: elements per block (a multiple of 32) */
  uint32_t entries; /* sparse: hash entries (a power of 2), or two-level chunks */
} flare_switch_t;
enum { FLARE_ARRAY = 0, FLARE_HASH = 1, FLARE_TWOLEVEL = 2 };

/* The kernel's copy, in its L2 handler data: the system writes it (by this
   symbol) before the run; all zero (a single switch) if it does not. */
volatile flare_switch_t flare_config __attribute__((section(".l2_handler_data"), used));

static inline const flare_switch_t *flare_switch(const task_t *task) {
  (void)task;
  return (const flare_switch_t *)&flare_config;
}

/* Packets from one host to another (the host-based collectives: the ring
   baseline, reduce-scatter, all-gather, all-to-all; models/flare/host.h)
   carry UDP destination port FLARE_PEER_PORT and go on, unchanged, to the
   host their IPv4 destination names; Flare blocks go to port 9000. */
#define FLARE_PEER_PORT 9001u

/* The port towards host `dest`: a single switch has host i on port i; a leaf
   sends its own hosts' packets down and the others up (spine by
   destination), a spine to the destination's leaf (leaf i on port i; a
   spine's `down` is the hosts per leaf). */
static inline uint32_t flare_port_to(const task_t *task, uint32_t dest) {
  const flare_switch_t *sw = flare_switch(task);
  if (sw->role == FLARE_LEAF) return dest / sw->down == sw->index ? dest % sw->down : sw->down + dest % sw->spines;
  if (sw->role == FLARE_SPINE) return dest / sw->down;
  return dest;
}

/* An aggregation kernel's first step: forward a host-to-host packet (the feedback waits for the send: the
   packet's copy stays until it has left). Returns 1 if the packet was one. */
static inline int flare_forward_peer(const task_t *task) {
  const pkt_hdr_t *pkt = (const pkt_hdr_t *)task->pkt_mem;
  if (pkt->udp_hdr.dst_port != FLARE_PEER_PORT) return 0;
  fabricvp_nic_command(flare_port_to(task, pkt->ip_hdr.dest_id), 0, task->pkt_mem, pkt->ip_hdr.length);
  return 1;
}

/* One block's aggregation buffer in its home cluster's scratchpad: the slot
   of block b is (b / clusters) mod (scratchpad bytes / sizeof(flare_slot_t)).
   The hosts' window keeps the blocks open at once within that many slots. */
typedef struct {
  volatile uint32_t lock;    /* futex (lock-based variants) */
  volatile uint32_t arrived; /* contributions applied (AMO counter) */
  volatile uint32_t block;   /* the block it holds, + 1 (0: free) */
  uint32_t pad;
  uint16_t order[FLARE_MAX_HOSTS]; /* hosts in the order their contributions were applied */
  pkt_hdr_t pkt;                   /* the result packet, sent as it stands: headers ... */
  flare_hdr_t hdr;
  uint8_t data[FLARE_MAX_BLOCK_BYTES]; /* ... and the reduced elements */
} __attribute__((__packed__, aligned(4))) flare_slot_t;

_Static_assert(sizeof(flare_slot_t) == 1596, "flare_slot_t is 1596 bytes (models/flare/host.h kSlotBytes)");

/* The reproducible (tree) variant's buffer of one block: the header words,
   the result packet's headers, then one FLARE_MAX_BLOCK_BYTES buffer per
   host, each contribution stored in its sender's; the last one reduces them
   in a fixed binary tree, so the result does not depend on arrival order.
   flare_tree_slot_bytes(hosts) bytes per block (models/flare/host.h). */
typedef struct {
  volatile uint32_t arrived; /* contributions stored (AMO counter) */
  volatile uint32_t block;   /* the block it holds, + 1 (0: free) */
  volatile uint32_t lock;    /* futex: taking and freeing the buffer */
  uint32_t pad;
  pkt_hdr_t pkt; /* the result packet: headers, then buffer 0 (the result) */
  flare_hdr_t hdr;
  uint8_t data[]; /* hosts x FLARE_MAX_BLOCK_BYTES */
} __attribute__((__packed__, aligned(4))) flare_tree_slot_t;

_Static_assert(sizeof(flare_tree_slot_t) == 60, "flare_tree_slot_t's header is 60 bytes");

static inline uint32_t flare_tree_slot_bytes(uint32_t hosts) { return 60u + hosts * FLARE_MAX_BLOCK_BYTES; }

/* The multiple-buffers variant's block: `buffers` buffers, each under its own
   lock; a contribution goes to the first free one (from its host's), the last
   merges buffers 1 .. buffers-1 into buffer 0 in that order. The log holds,
   in the order they were applied, buffer << 12 | host for every contribution.
   flare_multi_slot_bytes(buffers) bytes per block. */
#define FLARE_MAX_BUFFERS 8u
typedef struct {
  volatile uint32_t lock[FLARE_MAX_BUFFERS];
  volatile uint32_t used[FLARE_MAX_BUFFERS]; /* contributions in each buffer */
  volatile uint32_t arrived;                 /* contributions applied (AMO counter) */
  volatile uint32_t block;                   /* the block it holds, + 1 (0: free) */
  volatile uint32_t logpos;                  /* next log entry (AMO) */
  volatile uint32_t take;                    /* futex: taking and freeing the block */
  uint16_t order[FLARE_MAX_HOSTS];
  pkt_hdr_t pkt; /* the result packet: headers, then buffer 0 */
  flare_hdr_t hdr;
  uint8_t data[]; /* buffers x FLARE_MAX_BLOCK_BYTES */
} __attribute__((__packed__, aligned(4))) flare_multi_slot_t;

_Static_assert(sizeof(flare_multi_slot_t) == 636, "flare_multi_slot_t's header is 636 bytes");

static inline uint32_t flare_multi_slot_bytes(uint32_t buffers) { return 636u + buffers * FLARE_MAX_BLOCK_BYTES; }


/* The sparse kernel's block (sw/handlers/flare/sparse.c), one per open block
   in its home cluster's scratchpad: the header words, the packet it sends
   (up to FLARE_SPARSE_PAIRS pairs at a time), the log entry of the
   contribution being applied, then the store of the reduced pairs:
   - FLARE_ARRAY: a value per element of the range and a presence bit each
     (span x 4 + span / 8 bytes; it never fills);
   - FLARE_HASH: `entries` (offset + 1, value) entries, linear probing from
     (offset x 2654435761) >> (32 - log2 entries); full at 3/4 of them;
   - FLARE_TWOLEVEL: a directory of one 16-bit entry per 32 elements of the
     range (0, or the chunk that holds them + 1), over a pool of `entries`
     chunks of a presence word and 32 values; full when no chunk is left.
   A full store is flushed: its pairs go on as they would at the end (in the
   store's order: offsets for the array and the two levels, table slots for
   the hash), each packet weighing 1, and the receiver (the spine, or every
   host) reduces them with the rest. flare_sparse_slot_bytes() bytes. */
typedef struct {
  volatile uint32_t lock;    /* futex */
  volatile uint32_t arrived; /* weights applied */
  volatile uint32_t block;   /* the block it holds, + 1 (0: free) */
  uint32_t sent;             /* packets it sent for the block (flushes and the end) */
  uint32_t used;             /* hash: entries in use; two-level: chunks in use */
  uint32_t out;              /* pairs in the packet being filled */
  uint32_t logent[2];        /* block, host | seq << 16 */
  pkt_hdr_t pkt;
  flare_hdr_t hdr;
  uint32_t pairs[2 * FLARE_SPARSE_PAIRS];
  uint32_t store[];
} __attribute__((__packed__, aligned(4))) flare_sparse_slot_t;

_Static_assert(sizeof(flare_sparse_slot_t) == 1100, "flare_sparse_slot_t's header is 1100 bytes");

static inline uint32_t flare_sparse_slot_bytes(uint32_t format, uint32_t span, uint32_t entries) {
  if (format == FLARE_ARRAY) return 1100u + span * 4u + span / 8u;
  if (format == FLARE_HASH) return 1100u + entries * 8u;
  return 1100u + (span / 32u + 1u) / 2u * 4u + entries * 33u * 4u;
}
