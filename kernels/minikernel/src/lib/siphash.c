/* lib/siphash.c - SipHash-2-4 */
#include "lib.h"

#define SIPROUND do {						\
	v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32); \
	v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2;		\
	v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0;		\
	v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32); \
} while (0)

u64 siphash24(const u64 key[2], const u8 *p, size_t len)
{
	u64 v0 = 0x736f6d6570736575ull ^ key[0];
	u64 v1 = 0x646f72616e646f6dull ^ key[1];
	u64 v2 = 0x6c7967656e657261ull ^ key[0];
	u64 v3 = 0x7465646279746573ull ^ key[1];
	u64 b = (u64)len << 56;
	size_t left = len & 7;
	const u8 *end = p + len - left;

	for (; p != end; p += 8) {
		u64 m = load64le(p);

		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t i = 0; i < left; i++)
		b |= (u64)p[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

u64 siphash_3u32(const u64 key[2], u32 a, u32 b, u32 c)
{
	u8 buf[12];

	store32be(buf, a);
	store32be(buf + 4, b);
	store32be(buf + 8, c);
	return siphash24(key, buf, sizeof(buf));
}
