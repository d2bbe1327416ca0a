/*
 * kern/digest.c - per-packet results are folded into one 64-bit digest,
 * printed as the check value.  Only packet data and counters feed it.
 */
#include "kern.h"
#include "lib.h"

static u64 cur_result;
static u64 digest = 0x6a09e667f3bcc908ull;
static u64 nresults;

void res_begin(u64 seq)
{
	cur_result = mix64(seq + 1);
}

void res_add(u64 v)
{
	cur_result = rotl64(cur_result, 11) ^ (v * 0x9e3779b97f4a7c15ull);
	cur_result += v >> 17;
	nresults++;
}

void res_commit(void)
{
	digest = mix64(digest ^ cur_result) + 0x632be59bd9b4e019ull;
}

u64 digest_value(void)
{
	return mix64(digest ^ nresults);
}
