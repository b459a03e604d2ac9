/* fabricvp PsPIN-compatible handler API: packet headers as PsPIN declares
   them (packed, host byte order; note that `version` is the low nibble of
   byte 0 and `ihl` the high one, the reverse of IPv4: docs/pspin.md). */
#pragma once

#include <stdint.h>

typedef struct {
  uint8_t version : 4;
  uint8_t ihl : 4;
  uint8_t tos;
  uint16_t length; /* whole packet, headers included */
  uint16_t identification;
  uint16_t offset;
  uint8_t ttl;
  uint8_t protocol;
  uint16_t checksum;
  uint32_t source_id;
  uint32_t dest_id;
} __attribute__((__packed__)) ip_hdr_t;

typedef struct {
  uint16_t src_port;
  uint16_t dst_port;
  uint16_t length;
  uint16_t checksum;
} __attribute__((__packed__)) udp_hdr_t;

typedef struct {
  ip_hdr_t ip_hdr;
  udp_hdr_t udp_hdr;
} __attribute__((__packed__)) pkt_hdr_t;

_Static_assert(sizeof(ip_hdr_t) == 20, "ip_hdr_t is 20 bytes");
_Static_assert(sizeof(udp_hdr_t) == 8, "udp_hdr_t is 8 bytes");
_Static_assert(sizeof(pkt_hdr_t) == 28, "pkt_hdr_t is 28 bytes");
