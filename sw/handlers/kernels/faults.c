/* Misbehaving handlers for the switch's protection and watchdog:
   faulty_ph stores outside everything it was granted (the switch reports a
   store access fault with handler, pc and address, and keeps running);
   forever_ph never returns (the watchdog stops it); printing_ph prints. */
#include <handler.h>
#include <packets.h>

__handler__ void faulty_ph(handler_args_t *args) {
  volatile uint32_t *elsewhere = (volatile uint32_t *)0x1c100000; /* L2, not this handler's */
  *elsewhere = args->hpu_gid;
}

__handler__ void forever_ph(handler_args_t *args) {
  volatile uint32_t n = args->hpu_id;
  for (;;) ++n;
}

__handler__ void printing_ph(handler_args_t *args) {
  printf("packet of message %u on cluster %u core %u\n", (unsigned)args->task->flow_id, (unsigned)args->cluster_id,
         (unsigned)args->hpu_id);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {faulty_ph, forever_ph, printing_ph};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
