/* Table-driven CRC-32C, one byte at a time. The table is built on first use; the runtime is
 * single-threaded. */
#include "crc32c.h"

static uint32_t table[256];
static int table_ready;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    table_ready = 1;
}

uint32_t crc32c_update(uint32_t crc, const void *bytes, size_t n)
{
    if (!table_ready)
        build_table();
    const uint8_t *p = bytes;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
