/* Filtering: the first payload word of a packet is a key; the packet is
   forwarded (sent out) if the key is in a hash table held in handler memory
   (open addressing, 1024 slots, filled by the header handler of message 0
   with the keys k * 7919 for k = 1..300), and counted as dropped otherwise.
   Check: exactly the packets with a key in the table leave the switch; the
   counters at handler_mem[4096..4097] = forwarded, dropped. */
#include <handler.h>
#include <packets.h>

#define SLOTS 1024
#define EMPTY 0u

static inline uint32_t slot_of(uint32_t key) { return (key * 2654435761u) >> 22; }

__handler__ void filter_hh(handler_args_t *args) {
  task_t *task = args->task;
  volatile uint32_t *table = (volatile uint32_t *)task->handler_mem;
  if (task->flow_id != 0) return;
  for (uint32_t k = 1; k <= 300; ++k) {
    const uint32_t key = k * 7919u;
    uint32_t s = slot_of(key);
    while (table[s] != EMPTY) s = (s + 1) & (SLOTS - 1);
    table[s] = key;
  }
}

__handler__ void filter_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint8_t *pld;
  uint32_t len;
  GET_IP_UDP_PLD(task->pkt_mem, pld, len);
  volatile uint32_t *table = (volatile uint32_t *)task->handler_mem;
  volatile int32_t *counters = (volatile int32_t *)task->handler_mem + 4096;
  const uint32_t key = len >= 4 ? *(const uint32_t *)pld : EMPTY;
  uint32_t s = slot_of(key);
  while (key != EMPTY && table[s] != EMPTY) {
    if (table[s] == key) {
      spin_cmd_t cmd;
      spin_send_packet(task->pkt_mem, task->pkt_mem_size, &cmd);
      amo_add(&counters[0], 1);
      return;
    }
    s = (s + 1) & (SLOTS - 1);
  }
  amo_add(&counters[1], 1);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {filter_hh, filter_ph, NULL};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
