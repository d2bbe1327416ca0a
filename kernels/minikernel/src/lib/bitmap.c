/* lib/bitmap.c - bitmaps of u64 words */
#include "lib.h"

u32 popcount64(u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (u32)((x * 0x0101010101010101ull) >> 56);
}

void bitmap_zero(u64 *map, u32 nbits)
{
	for (u32 i = 0; i < (nbits + 63) / 64; i++)
		map[i] = 0;
}

void bitmap_set(u64 *map, u32 bit)
{
	map[bit / 64] |= 1ull << (bit % 64);
}

void bitmap_clear(u64 *map, u32 bit)
{
	map[bit / 64] &= ~(1ull << (bit % 64));
}

bool bitmap_test(const u64 *map, u32 bit)
{
	return (map[bit / 64] >> (bit % 64)) & 1;
}

/* first zero bit at or after start (wrapping), -1 if full */
s32 bitmap_find_zero(const u64 *map, u32 nbits, u32 start)
{
	u32 words = nbits / 64;

	for (u32 n = 0; n <= words; n++) {
		u32 w = (start / 64 + n) % words;
		u64 v = ~map[w];

		if (n == 0)
			v &= ~0ull << (start % 64);
		if (v) {
			u32 b = 0;

			while (!(v & 1)) {
				v >>= 1;
				b++;
			}
			return (s32)(w * 64 + b);
		}
	}
	return -1;
}

u32 bitmap_weight(const u64 *map, u32 nbits)
{
	u32 n = 0;

	for (u32 i = 0; i < nbits / 64; i++)
		n += popcount64(map[i]);
	return n;
}
