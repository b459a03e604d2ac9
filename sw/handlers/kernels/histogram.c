/* Histogram: every payload byte increments one of 256 counters in the
   message's home-cluster scratchpad (AMO adds). Check: counter b = number
   of payload bytes equal to b over the message. */
#include <handler.h>
#include <packets.h>

__handler__ void histogram_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint8_t *pld;
  uint32_t len;
  GET_IP_UDP_PLD(task->pkt_mem, pld, len);
  volatile int32_t *bins = (volatile int32_t *)task->scratchpad[task->home_cluster_id];
  for (uint32_t i = 0; i < len; ++i) amo_add(&bins[pld[i]], 1);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {NULL, histogram_ph, NULL};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
