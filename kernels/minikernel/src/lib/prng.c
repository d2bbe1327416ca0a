/* lib/prng.c - xoshiro256** */
#include "lib.h"

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void prng_seed(struct prng *r, u64 seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

u64 prng_next(struct prng *r)
{
	u64 *s = r->s;
	u64 result = rotl64(s[1] * 5, 7) * 9;
	u64 t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

u32 prng_u32(struct prng *r)
{
	return (u32)(prng_next(r) >> 32);
}

u32 prng_range(struct prng *r, u32 n)
{
	return (u32)(((u64)prng_u32(r) * n) >> 32);
}

bool prng_chance(struct prng *r, u32 percent)
{
	return prng_range(r, 100) < percent;
}

void prng_fill(struct prng *r, u8 *buf, size_t len)
{
	while (len >= 8) {
		store64le(buf, prng_next(r));
		buf += 8;
		len -= 8;
	}
	if (len) {
		u64 v = prng_next(r);

		while (len--) {
			*buf++ = (u8)v;
			v >>= 8;
		}
	}
}
