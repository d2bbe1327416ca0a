/* lib/hash.c - integer and byte hashes */
#include "lib.h"

u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

u32 mix32(u32 x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

#define JHASH_MIX(a, b, c) do {				\
	a -= c; a ^= rotl32(c, 4); c += b;		\
	b -= a; b ^= rotl32(a, 6); a += c;		\
	c -= b; c ^= rotl32(b, 8); b += a;		\
	a -= c; a ^= rotl32(c, 16); c += b;		\
	b -= a; b ^= rotl32(a, 19); a += c;		\
	c -= b; c ^= rotl32(b, 4); b += a;		\
} while (0)

#define JHASH_FINAL(a, b, c) do {			\
	c ^= b; c -= rotl32(b, 14);			\
	a ^= c; a -= rotl32(c, 11);			\
	b ^= a; b -= rotl32(a, 25);			\
	c ^= b; c -= rotl32(b, 16);			\
	a ^= c; a -= rotl32(c, 4);			\
	b ^= a; b -= rotl32(a, 14);			\
	c ^= b; c -= rotl32(b, 24);			\
} while (0)

u32 jhash_3words(u32 a, u32 b, u32 c, u32 initval)
{
	a += 0xdeadbeef + (3 << 2) + initval;
	b += 0xdeadbeef + (3 << 2) + initval;
	c += 0xdeadbeef + (3 << 2) + initval;
	JHASH_MIX(a, b, c);
	JHASH_FINAL(a, b, c);
	return c;
}

u32 fnv1a32(const u8 *p, size_t len, u32 h)
{
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x01000193u;
	}
	return h;
}

u64 hash_bytes64(const u8 *p, size_t len, u64 seed)
{
	u64 h = seed ^ (len * 0x9e3779b97f4a7c15ull);

	while (len >= 8) {
		h ^= mix64(load64le(p));
		h = rotl64(h, 27) * 0x100000001b3ull + 0x52dce729u;
		p += 8;
		len -= 8;
	}
	while (len) {
		h ^= *p++;
		h *= 0x100000001b3ull;
		len--;
	}
	return mix64(h);
}
