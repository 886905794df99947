/* crc32c.h -- CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78, initial
 * value and final xor 0xFFFFFFFF), the checksum of iSCSI, ext4 and SSE4.2's crc32
 * instruction.  crc32c("123456789") = 0xE3069283.
 *
 * Incremental: crc = rl_crc32c(0, a, na); crc = rl_crc32c(crc, b, nb) equals the checksum
 * of a followed by b. */
#ifndef RL_CRC32C_H
#define RL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t rl_crc32c(uint32_t crc, const void *data, size_t len);

#endif
