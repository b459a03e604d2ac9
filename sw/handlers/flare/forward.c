/* The host-based baseline's switch: every packet goes on to the host its
   IPv4 destination names (port = destination id), unchanged. The hosts run a
   ring allreduce through it (models/flare, flare.algorithm=ring), so Flare
   and the baseline share the same hosts, links and switch. In a fat tree a
   leaf sends its own hosts' packets down and the others up, a spine to the
   destination's leaf (flare.h flare_switch_t; a spine's `down` is the hosts
   per leaf). */
#include <handler.h>
#include <packets.h>
#include <flare.h>

__handler__ void flare_forward_ph(handler_args_t *args) {
  task_t *task = args->task;
  const ip_hdr_t *ip = (const ip_hdr_t *)task->pkt_mem;
  const flare_switch_t *sw = flare_switch(task);
  uint32_t port = ip->dest_id; /* a single switch: host i on port i */
  if (sw->role == FLARE_LEAF) /* its own hosts down, the others up (spine by destination) */
    port = ip->dest_id / sw->down == sw->index ? ip->dest_id % sw->down : sw->down + ip->dest_id % sw->spines;
  else if (sw->role == FLARE_SPINE) /* leaf i on port i */
    port = ip->dest_id / sw->down;
  /* the feedback waits for the send: the packet's copy stays until it has left */
  fabricvp_nic_command(port, 0, task->pkt_mem, ip->length);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {0, flare_forward_ph, 0};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
