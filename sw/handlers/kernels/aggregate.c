/* Aggregate: the sum of all payload words of a message, kept as one 32-bit
   counter per message in handler memory; the header handler clears it, the
   payload handlers add their packet's sum with one AMO each, the completion
   handler writes the total to host memory (8 bytes at host_mem + 8 x msg).
   Check: the host write of each message = sum of its payload words (mod 2^32). */
#include <handler.h>
#include <packets.h>

__handler__ void aggregate_hh(handler_args_t *args) {
  task_t *task = args->task;
  volatile uint32_t *total = (volatile uint32_t *)task->handler_mem + (task->flow_id & 1023);
  amo_store(total, 0);
}

__handler__ void aggregate_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint8_t *pld;
  uint32_t len;
  GET_IP_UDP_PLD(task->pkt_mem, pld, len);
  const uint32_t *in = (const uint32_t *)pld;
  uint32_t sum = 0;
  for (uint32_t i = 0; i < len / 4; ++i) sum += in[i];
  volatile int32_t *total = (volatile int32_t *)task->handler_mem + (task->flow_id & 1023);
  amo_add(total, (int32_t)sum);
}

__handler__ void aggregate_th(handler_args_t *args) {
  task_t *task = args->task;
  volatile uint32_t *total = (volatile uint32_t *)task->handler_mem + (task->flow_id & 1023);
  const uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  spin_cmd_t cmd;
  spin_write_to_host(host + 8 * task->flow_id, *total, &cmd);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr) {
  volatile handler_fn handlers[] = {aggregate_hh, aggregate_ph, aggregate_th};
  *hh = handlers[0];
  *ph = handlers[1];
  *th = handlers[2];
  (void)handler_mem_ptr;
}
