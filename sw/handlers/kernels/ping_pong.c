/* Ping-pong: every packet is sent back out as it came, headers included,
   from its L1 copy (source and destination swapped). Check: the egress
   packets are the ingress packets with swapped ids, one per packet. */
#include <handler.h>
#include <packets.h>

__handler__ void pingpong_ph(handler_args_t *args) {
  task_t *task = args->task;
  ip_hdr_t *ip = (ip_hdr_t *)task->pkt_mem;
  const uint32_t src = ip->source_id;
  ip->source_id = ip->dest_id;
  ip->dest_id = src;
  spin_cmd_t put;
  spin_send_packet(task->pkt_mem, task->pkt_mem_size, &put);
#ifdef WAIT_POLL
  bool done = false;
  do spin_cmd_test(put, &done);
  while (!done);
#elif defined(WAIT_SUSPEND)
  spin_cmd_wait(put);
#endif
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {NULL, pingpong_ph, NULL};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
