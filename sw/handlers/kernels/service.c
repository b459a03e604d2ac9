/* Constant service time: each payload handler keeps its core for
   SERVICE_CYCLES cycles (default 500; `--define SERVICE_CYCLES=N`) and
   returns. It is the handler the input-buffer model assumes (docs/flare.md,
   seed 004 section 5): every packet takes its core for the same time, so what
   the L2 packet buffer holds depends only on the arrivals and the scheduling.
   Check: every packet fed back, no fault (the run's check); the cores'
   busy_cycles / handlers is the service time the model takes. */
#include <handler.h>
#include <packets.h>

#ifndef SERVICE_CYCLES
#define SERVICE_CYCLES 500
#endif

__handler__ void service_ph(handler_args_t *args) {
  (void)args;
  rt_time_wait_cycles(SERVICE_CYCLES);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, service_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
