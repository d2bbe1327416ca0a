/*
 * net/tcp_options.c - TCP option parsing: MSS, window scale, SACK
 * permitted, SACK, timestamps and 24 experimental kinds (generated).
 */
#include "net.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define TCPOPT_EXP_KIND(k) ((u8)(30 + (k)))
#define TCPOPT_EXP_LEN(k) (4u + ((k) % 5u) * 2u)

typedef int (*tcpopt_fn)(struct tcpopt *to, const u8 *opt, u32 len, u8 flags);

static tcpopt_fn tcpopt_handlers[256];

u8 tcpopt_exp_kind(u32 k)
{
	return TCPOPT_EXP_KIND(k);
}

u32 tcpopt_exp_len(u32 k)
{
	return TCPOPT_EXP_LEN(k);
}

static int tcpopt_mss(struct tcpopt *to, const u8 *opt, u32 len, u8 flags)
{
	if (len != 4 || !(flags & TH_SYN))
		return -1;
	to->mss = load16be(opt + 2);
	if (to->mss < 64)
		to->mss = 536;
	to->acc = to->acc * 3 + to->mss;
	return 0;
}

static int tcpopt_wscale(struct tcpopt *to, const u8 *opt, u32 len, u8 flags)
{
	if (len != 3 || !(flags & TH_SYN))
		return -1;
	to->wscale = opt[2] > 14 ? 14 : opt[2];
	to->acc = to->acc * 5 + to->wscale;
	return 0;
}

static int tcpopt_sackok(struct tcpopt *to, const u8 *opt UNUSED, u32 len, u8 flags)
{
	if (len != 2 || !(flags & TH_SYN))
		return -1;
	to->sackok = 1;
	to->acc = to->acc * 7 + 1;
	return 0;
}

static int tcpopt_sack(struct tcpopt *to, const u8 *opt, u32 len, u8 flags)
{
	if (len < 10 || (len - 2) % 8 || (flags & TH_SYN))
		return -1;
	for (u32 i = 2; i + 8 <= len; i += 8) {
		u32 l = load32be(opt + i), r = load32be(opt + i + 4);

		to->nsack++;
		to->acc = to->acc * 11 + (r - l);
	}
	return 0;
}

static int tcpopt_ts(struct tcpopt *to, const u8 *opt, u32 len, u8 flags UNUSED)
{
	if (len != 10)
		return -1;
	to->tsval = load32be(opt + 2);
	to->tsecr = load32be(opt + 6);
	to->acc = to->acc * 13 + (to->tsval ^ to->tsecr);
	return 0;
}

#define TCPOPT_EXP(n)								\
static int tcpopt_exp##n(struct tcpopt *to, const u8 *opt, u32 len, u8 flags)	\
{										\
	u64 h = 0xcbf29ce484222325ull ^ ((u64)(n) << 32);			\
										\
	if (len != TCPOPT_EXP_LEN(n))						\
		return -1;							\
	for (u32 i = 2; i < TCPOPT_EXP_LEN(n); i++) {				\
		h ^= opt[i];							\
		h *= 0x100000001b3ull;						\
	}									\
	switch ((n) % 3) {							\
	case 0:									\
		h += (flags & TH_SYN) ? (n) * 977u : opt[2] * 31u;		\
		break;								\
	case 1:									\
		if ((opt[2] & 0xf0) == ((n) << 4 & 0xf0))			\
			h = rotl64(h, (n) + 1);					\
		break;								\
	default:								\
		h ^= (u64)load16be(opt + 2) << ((n) % 48);			\
		break;								\
	}									\
	to->acc = to->acc * 17 + (h ^ (h >> 29));				\
	return 0;								\
}

REP24(TCPOPT_EXP)

#define TCPOPT_EXP_ENTRY(n) tcpopt_exp##n,
static const tcpopt_fn tcpopt_exp_table[TCPOPT_NEXP] = { REP24(TCPOPT_EXP_ENTRY) };

int tcp_dooptions(struct tcpopt *to, const u8 *p, u32 len, u8 flags)
{
	u32 i = 0;

	while (i < len) {
		u8 kind = p[i];
		u32 olen;
		tcpopt_fn fn;

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return -1;
		olen = p[i + 1];
		if (olen < 2 || i + olen > len)
			return -1;
		to->present |= 1u << (kind & 31);
		fn = tcpopt_handlers[kind];
		if (fn && fn(to, p + i, olen, flags) < 0)
			return -1;
		i += olen;
	}
	return 0;
}

void tcpopt_init(void)
{
	memset(tcpopt_handlers, 0, sizeof(tcpopt_handlers));
	tcpopt_handlers[2] = tcpopt_mss;
	tcpopt_handlers[3] = tcpopt_wscale;
	tcpopt_handlers[4] = tcpopt_sackok;
	tcpopt_handlers[5] = tcpopt_sack;
	tcpopt_handlers[8] = tcpopt_ts;
	for (u32 k = 0; k < TCPOPT_NEXP; k++)
		tcpopt_handlers[TCPOPT_EXP_KIND(k)] = tcpopt_exp_table[k];
}
