/* The host-based baseline's switch: every packet goes on to the host its
   IPv4 destination names (port = destination id), unchanged. The hosts run a
   ring allreduce through it (models/flare, flare.algorithm=ring), so Flare
   and the baseline share the same hosts, links and switch. In a fat tree a
   leaf sends its own hosts' packets down and the others up, a spine to the
   destination's leaf (flare.h flare_port_to). The aggregation kernels
   forward the host-to-host packets of the other collectives the same way
   (flare_forward_peer). */
#include <handler.h>
#include <packets.h>
#include <flare.h>

__handler__ void flare_forward_ph(handler_args_t *args) {
  task_t *task = args->task;
  const ip_hdr_t *ip = (const ip_hdr_t *)task->pkt_mem;
  /* the feedback waits for the send: the packet's copy stays until it has left */
  fabricvp_nic_command(flare_port_to(task, ip->dest_id), 0, task->pkt_mem, ip->length);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_forward_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
