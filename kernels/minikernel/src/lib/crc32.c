/* lib/crc32.c - CRC-32C, slice-by-1 table */
#include "lib.h"

static u32 crc32c_table[256];

void crc32c_init(void)
{
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc32c_table[i] = c;
	}
}

u32 crc32c(u32 crc, const u8 *p, size_t len)
{
	crc = ~crc;
	while (len >= 4) {
		crc = crc32c_table[(crc ^ p[0]) & 0xff] ^ (crc >> 8);
		crc = crc32c_table[(crc ^ p[1]) & 0xff] ^ (crc >> 8);
		crc = crc32c_table[(crc ^ p[2]) & 0xff] ^ (crc >> 8);
		crc = crc32c_table[(crc ^ p[3]) & 0xff] ^ (crc >> 8);
		p += 4;
		len -= 4;
	}
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void lib_init(void)
{
	crc32c_init();
}
