/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4 and SCTP:
 * crc32c("123456789") == 0xE3069283. Frames carry one for their header and one for their
 * payload. */
#ifndef ALPHA_CRC32C_H
#define ALPHA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over n more bytes; start with crc = 0. */
uint32_t crc32c_update(uint32_t crc, const void *bytes, size_t n);

static inline uint32_t crc32c(const void *bytes, size_t n) { return crc32c_update(0, bytes, n); }

#endif
