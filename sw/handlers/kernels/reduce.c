/* Integer reduce into L1: every payload handler adds its packet's 32-bit
   words, element-wise, into the message's scratchpad on its home cluster
   (AMO adds at the L1 banks, so concurrent handlers need no lock). The
   completion handler reports the first word of the result to host memory.
   Check: scratchpad word i = sum over packets of payload word i. */
#include <handler.h>
#include <packets.h>
#include <spin_conf.h>

__handler__ void reduce_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint8_t *pld;
  uint32_t len;
  GET_IP_UDP_PLD(task->pkt_mem, pld, len);
  volatile int32_t *acc = (volatile int32_t *)task->scratchpad[task->home_cluster_id];
  const int32_t *in = (const int32_t *)pld;
  for (uint32_t i = 0; i < len / 4; ++i) amo_add(&acc[i], in[i]);
}

__handler__ void reduce_th(handler_args_t *args) {
  task_t *task = args->task;
  volatile int32_t *acc = (volatile int32_t *)task->scratchpad[task->home_cluster_id];
  const uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  spin_cmd_t cmd;
  spin_host_write(host + 8 * task->flow_id, (uint64_t)(uint32_t)acc[0], &cmd);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {NULL, reduce_ph, reduce_th};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
