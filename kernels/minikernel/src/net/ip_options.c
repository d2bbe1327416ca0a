/*
 * net/ip_options.c - IPv4 option processing.  48 option kinds, each with
 * its own handler (generated below), dispatched through a 256-entry table
 * indexed by the option type byte.
 */
#include "net.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define IPOPT_EOL 0
#define IPOPT_NOP 1
#define IPOPT_TYPE(k) ((u8)(0x82 + (k)))
#define IPOPT_LEN(k) (4u + ((k) % 5u) * 2u)

typedef int (*ipopt_fn)(struct mbuf *m, const u8 *opt, u32 len);

static ipopt_fn ipopt_handlers[256];
static u64 ipopt_counts[256];
static u64 ipopt_unknown;

u8 ipopt_kind_type(u32 k)
{
	return IPOPT_TYPE(k);
}

u32 ipopt_kind_len(u32 k)
{
	return IPOPT_LEN(k);
}

static const u8 ipopt_sec_levels[16] = {
	0x00, 0xf1, 0x35, 0x78, 0xab, 0x5e, 0x26, 0x13, 0x9a, 0xc4, 0x6f, 0x81, 0xd2, 0x44, 0xe9, 0x3c,
};

/*
 * Each handler validates the length, digests the option data with its own
 * constants and then does one of four kinds of semantic processing
 * (record-route pointer, timestamp overflow/flags, security level, address
 * list).
 */
#define IPOPT_HANDLER(n)							\
static int ipopt_h##n(struct mbuf *m, const u8 *opt, u32 len)		\
{									\
	u32 h = 0x811c9dc5u ^ ((u32)(n) * 0x9e3779b1u);			\
	u32 ptr, v;							\
									\
	if (len != IPOPT_LEN(n))					\
		return -1;						\
	for (u32 i = 2; i < IPOPT_LEN(n); i++) {			\
		h ^= opt[i];						\
		h *= 0x01000193u;					\
		h = rotl32(h, ((n) % 9) + 3);				\
	}								\
	switch ((n) % 4) {						\
	case 0:	/* record-route-like: pointer must be inside */	\
		ptr = opt[2] & 0x1f;					\
		if (ptr < 4)						\
			ptr = 4;					\
		v = ptr < len ? opt[ptr - 1] : 0;			\
		h += (m->src ^ rotl32(m->dst, (n) % 31)) + v * 131u;	\
		break;							\
	case 1:	/* timestamp-like: overflow and flag nibbles */	\
		v = opt[3];						\
		if ((v & 0x0f) > 3)					\
			h ^= 0xa5a5u * ((v >> 4) + 1);			\
		else							\
			h += (v & 0x0f) * 0x1000193u + m->ttl;		\
		break;							\
	case 2:	/* security-like: level lookup */			\
		v = ipopt_sec_levels[opt[2] & 15];			\
		if (v > (n) * 5u)					\
			h = rotl32(h, 7) ^ v;				\
		else							\
			h -= v + m->tos;				\
		break;							\
	default: /* address-list-like: sum 16-bit words */		\
		v = 0;							\
		for (u32 i = 2; i + 1 < IPOPT_LEN(n); i += 2)		\
			v += load16be(opt + i);				\
		h ^= v * ((n) | 1u);					\
		break;							\
	}								\
	h ^= h >> 15;							\
	h *= 0x2c1b3c6du;						\
	h ^= h >> 12;							\
	if ((h & 0x1ff) == (n) * 3u)					\
		return -1;	/* parameter problem */			\
	res_add(h ^ ((u64)(n) << 40));					\
	return 0;							\
}

REP48(IPOPT_HANDLER)

#define IPOPT_ENTRY(n) ipopt_h##n,
static const ipopt_fn ipopt_generated[IPOPT_NKINDS] = { REP48(IPOPT_ENTRY) };

int ip_dooptions(struct mbuf *m, const u8 *opts, u32 len)
{
	u32 i = 0;

	while (i < len) {
		u8 type = opts[i];
		u32 olen;
		ipopt_fn fn;

		if (type == IPOPT_EOL)
			break;
		if (type == IPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return -1;
		olen = opts[i + 1];
		if (olen < 2 || i + olen > len)
			return -1;
		fn = ipopt_handlers[type];
		ipopt_counts[type]++;
		if (!fn)
			ipopt_unknown++;
		else if (fn(m, opts + i, olen) < 0)
			return -1;
		i += olen;
	}
	return 0;
}

void ipopt_init(void)
{
	memset(ipopt_handlers, 0, sizeof(ipopt_handlers));
	for (u32 k = 0; k < IPOPT_NKINDS; k++)
		ipopt_handlers[IPOPT_TYPE(k)] = ipopt_generated[k];
}
