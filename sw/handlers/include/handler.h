/* fabricvp PsPIN-compatible handler API (docs/pspin.md): the task
   descriptor, handler arguments, and the commands a handler issues (packets
   out, host writes and DMA, cluster DMA, locks). Handlers written for PsPIN
   compile unmodified against these headers with Debian's
   riscv64-unknown-elf-gcc (-march=rv32imac -mabi=ilp32). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwsched.h"
#include "pspin.h"
#include "spin_conf.h"
#include "spin_dma.h"
#include "util.h"

#define __handler__ __attribute__((used))

#define SPIN_DMA_EXT2LOC 0
#define SPIN_DMA_LOC2EXT 1
#define SPIN_OK 0x0
#define SPIN_FAIL 0x1

/* Payload of an IPv4 + UDP packet. As in PsPIN, the length assumes a 20-byte
   IP header while the pointer honours ihl. */
#define GET_IP_UDP_PLD(pkt_ptr, pkt_pld_ptr, pkt_pld_len)                                \
  {                                                                                      \
    ip_hdr_t *fabricvp_ip_ = (ip_hdr_t *)(pkt_ptr);                                      \
    pkt_pld_len = fabricvp_ip_->length - sizeof(ip_hdr_t) - sizeof(udp_hdr_t);           \
    pkt_pld_ptr = ((uint8_t *)(pkt_ptr)) + (fabricvp_ip_->ihl * 4) + sizeof(udp_hdr_t);  \
  }

typedef futex_t spin_lock_t;

/* The running task, as the HPU driver's registers at 0x1B205008 show it. */
typedef struct task {
  void *handler_mem; /* L2 */
  size_t handler_mem_size;
  void *pkt_mem; /* this packet's copy in the executing cluster's L1 */
  size_t pkt_mem_size;
  void *scratchpad[NB_CLUSTERS]; /* per-message scratchpads (L1) */
  size_t scratchpad_size[NB_CLUSTERS];
  uint32_t host_mem_high;
  uint32_t host_mem_low;
  size_t host_mem_size;
  void *l2_pkt_mem; /* the whole packet in L2 */
  uint32_t home_cluster_id;
  uint32_t flow_id; /* the message id */
} __attribute__((__packed__)) task_t;

typedef struct handler_args {
  task_t *task;
  uint32_t hpu_gid;
  uint32_t cluster_id;
  uint32_t hpu_id;
} handler_args_t;

typedef void (*handler_fn)(handler_args_t *);

typedef dma_t spin_dma_t;
typedef uint32_t spin_cmd_t;

typedef struct spin_rw_lock {
  spin_lock_t glock;
  volatile int32_t num_readers;
} spin_rw_lock_t;

/* ---- cluster DMA (L2 <-> L1) */

static inline int spin_dma(void *source, void *dest, size_t size, int direction, int options, spin_dma_t *xfer) {
  (void)direction;
  (void)options;
  if (size == 0) return SPIN_FAIL;
  *xfer = spin__memcpy_nonblk(source, dest, (uint32_t)size);
  return SPIN_OK;
}
static inline int spin_dma_wait(spin_dma_t xfer) {
  spin__wait_for_tf_completion(xfer);
  return SPIN_OK;
}
static inline int spin_dma_test(spin_dma_t xfer, uint32_t *completed) {
  *completed = spin__tf_completed(xfer);
  return SPIN_OK;
}

/* ---- locks */

static inline int spin_lock_init(spin_lock_t *lock) {
  futex_init(lock);
  return SPIN_OK;
}
static inline int spin_lock_try_lock(spin_lock_t *lock) { return futex_try_lock(lock); }
static inline int spin_lock_lock(spin_lock_t *lock) {
  futex_lock_s(lock);
  return SPIN_OK;
}
static inline int spin_lock_unlock(spin_lock_t *lock) {
  futex_unlock(lock);
  return SPIN_OK;
}
static inline int spin_rw_lock_r_lock(spin_rw_lock_t *l) {
  if (amo_add(&l->num_readers, 1) + 1 == 1) spin_lock_lock(&l->glock);
  return SPIN_OK;
}
static inline int spin_rw_lock_r_unlock(spin_rw_lock_t *l) {
  if (amo_add(&l->num_readers, -1) - 1 == 0) spin_lock_unlock(&l->glock);
  return SPIN_OK;
}
static inline int spin_rw_lock_w_lock(spin_rw_lock_t *l) { return spin_lock_lock(&l->glock); }
static inline int spin_rw_lock_w_unlock(spin_rw_lock_t *l) { return spin_lock_unlock(&l->glock); }

/* ---- commands: at most 4 in flight per core; a packet's feedback waits for
   its handler's commands. */

static inline int spin_cmd_wait(spin_cmd_t handle) {
  MMIO_WRITE(CMD_WAIT, handle);
  return SPIN_OK;
}
static inline int spin_cmd_test(spin_cmd_t handle, bool *completed) {
  MMIO_WRITE(CMD_TEST, handle);
  *completed = MMIO_READ(CMD_TEST) == 1;
  return SPIN_OK;
}

/* type 2 (NIC send): words nid, fid, source address low/high, length */
static inline spin_cmd_t fabricvp_nic_command(uint32_t nid, uint32_t fid, const void *data, uint32_t length) {
  MMIO_WRITE(CMD_WORD0, nid);
  MMIO_WRITE(CMD_WORD1, fid);
  MMIO_WRITE(CMD_WORD2, (uint32_t)data);
  MMIO_WRITE(CMD_WORD3, 0);
  MMIO_WRITE(CMD_WORD4, length);
  MMIO_WRITE(CMD_INFO, 2);
  return MMIO_READ(CMD_ISSUE);
}

/* nid of a packet the command unit sends on every port (fabricvp's multicast;
   any other nid leaves on port nid mod ports). */
#define FABRICVP_NID_ALL 0xffffffffu
/* nid of a packet sent on ports 0 .. n-1 (n < 65536) */
#define FABRICVP_NID_FIRST(n) (0xfffe0000u | (uint32_t)(n))

/* Sends `length` bytes at `data` (L1 or L2) as one raw packet. */
static inline int spin_send_packet(void *data, uint32_t length, spin_cmd_t *handle) {
  *handle = fabricvp_nic_command(0, 0, data, length);
  return SPIN_OK;
}

/* Sends `length` bytes to node `dest` (fid 1: RDMA). */
static inline int spin_rdma_put(uint32_t dest, void *data, uint32_t length, spin_cmd_t *handle) {
  *handle = fabricvp_nic_command(dest, 1, data, length);
  return SPIN_OK;
}

/* type 0 (host memory copy): words host address low/high, NIC address, length, direction */
static inline spin_cmd_t fabricvp_host_dma(uint64_t host_addr, uint32_t nic_addr, uint32_t length, uint32_t to_host,
                                           bool generate_event) {
  MMIO_WRITE(CMD_WORD0, (uint32_t)host_addr);
  MMIO_WRITE(CMD_WORD1, (uint32_t)(host_addr >> 32));
  MMIO_WRITE(CMD_WORD2, nic_addr);
  MMIO_WRITE(CMD_WORD3, length);
  MMIO_WRITE(CMD_WORD4, to_host);
  MMIO_WRITE(CMD_INFO, (uint8_t)generate_event);
  return MMIO_READ(CMD_ISSUE);
}

static inline int spin_dma_to_host(uint64_t host_addr, uint32_t nic_addr, uint32_t length, bool generate_event,
                                   spin_cmd_t *xfer) {
  *xfer = fabricvp_host_dma(host_addr, nic_addr, length, 1, generate_event);
  return SPIN_OK;
}

static inline int spin_dma_from_host(uint64_t host_addr, uint32_t nic_addr, uint32_t length, bool generate_event,
                                     spin_cmd_t *xfer) {
  *xfer = fabricvp_host_dma(host_addr, nic_addr, length, 0, generate_event);
  return SPIN_OK;
}

/* type 4 (host direct): words host address low/high, (8 << 1) | 1, data low/high.
   The handle is stored to *xfer unconditionally, as on PsPIN: a NULL xfer is a
   store to address 0, which faults after the command went out. */
static inline int spin_write_to_host(uint64_t host_addr, uint64_t user_data, spin_cmd_t *xfer) {
  MMIO_WRITE(CMD_WORD0, (uint32_t)host_addr);
  MMIO_WRITE(CMD_WORD1, (uint32_t)(host_addr >> 32));
  MMIO_WRITE(CMD_WORD2, (8 << 1) | 1);
  MMIO_WRITE(CMD_WORD3, (uint32_t)user_data);
  MMIO_WRITE(CMD_WORD4, (uint32_t)(user_data >> 32));
  MMIO_WRITE(CMD_INFO, 4);
  *(volatile spin_cmd_t *)xfer = MMIO_READ(CMD_ISSUE);
  return SPIN_OK;
}
#define spin_host_write spin_write_to_host /* the older name */

/* The cluster count these handlers were compiled for (task_t depends on it):
   fabricvp refuses to run them on a switch with another count. */
__attribute__((used, weak)) const uint32_t fabricvp_nb_clusters = NB_CLUSTERS;

/* Defined by every handler file; keeps the handlers from being discarded. */
void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr);

_Static_assert(sizeof(handler_args_t) == 16, "handler_args_t is 16 bytes on RV32");
_Static_assert(NB_CLUSTERS != 4 || sizeof(task_t) == 72, "task_t is 72 bytes with 4 clusters");
