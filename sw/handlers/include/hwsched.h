/* fabricvp PsPIN-compatible handler API: the HPU driver's register window
   (task descriptor, doorbell, error, commands), at PsPIN's addresses. */
#pragma once

#include <stdint.h>

#define HWSCHED_BASE_ADDR 0x1B205000
#define HWSCHED_HANDLER_MEM_ADDR (HWSCHED_BASE_ADDR + 0x08) /* task_t of the running handler */
#define HWSCHED_DOORBELL (HWSCHED_BASE_ADDR + 0x50)         /* read: the handler is done */
#define HWSCHED_ERROR (HWSCHED_BASE_ADDR + 0x54)            /* write: trap cause */

#define CMD_ISSUE (HWSCHED_BASE_ADDR + 0x80) /* read: issue the command, returns its handle */
#define CMD_WAIT (HWSCHED_BASE_ADDR + 0x84)  /* write a handle: stall until it completes */
#define CMD_TEST (HWSCHED_BASE_ADDR + 0x88)  /* write a handle, read: 1 if completed */
#define CMD_INFO (HWSCHED_BASE_ADDR + 0x8C)  /* bits 2:1 command type, bit 0 generate event */
#define CMD_WORD0 (HWSCHED_BASE_ADDR + 0x90)
#define CMD_WORD1 (HWSCHED_BASE_ADDR + 0x94)
#define CMD_WORD2 (HWSCHED_BASE_ADDR + 0x98)
#define CMD_WORD3 (HWSCHED_BASE_ADDR + 0x9C)
#define CMD_WORD4 (HWSCHED_BASE_ADDR + 0xA0)
#define CMD_WORD5 (HWSCHED_BASE_ADDR + 0xA4)
#define CMD_WORD6 (HWSCHED_BASE_ADDR + 0xA8)

#define MMIO_READ(addr) (*(volatile uint32_t *)(addr))
#define MMIO_WRITE(addr, value) (*(volatile uint32_t *)(addr) = (uint32_t)(value))
