/*
 * net/icmp.c - ICMP input with one handler per message type (32 types,
 * generated), echo/timestamp reflection and ICMP error generation.
 */
#include "net.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define ICMP_NTYPES 32

typedef int (*icmp_fn)(struct mbuf *m, const u8 *ic, u32 len);

static u64 icmp_type_counts[ICMP_NTYPES];

#define ICMP_HANDLER(n)								\
static int icmp_h##n(struct mbuf *m, const u8 *ic, u32 len)			\
{										\
	u32 code = ic[1], h = 0x1c3b0000u + (n) * 0x01000193u;			\
	u64 acc;								\
										\
	icmp_type_counts[n]++;							\
	if (code > ((n) % 6) + 2)						\
		return -1;							\
	switch ((n) % 4) {							\
	case 0: /* echo-like: digest the data */				\
		acc = hash_bytes64(ic + 8, len - 8, (n) + code);		\
		h ^= (u32)acc ^ (u32)(acc >> 32);				\
		break;								\
	case 1: { /* error-like: check the quoted header */			\
		const u8 *q = ic + 8;						\
		if (len < 28 || (q[0] >> 4) != 4)				\
			return -1;						\
		if (in_cksum(q, 20) != 0)					\
			h ^= 0xbad;						\
		h += load32be(q + 12) ^ rotl32(load32be(q + 16), (n) % 29);	\
		h ^= (u32)q[9] << ((n) % 24);					\
		break;								\
	}									\
	case 2: /* timestamp-like: three 32-bit times */			\
		if (len >= 20)							\
			h += load32be(ic + 8) - load32be(ic + 12) + 3 * load32be(ic + 16); \
		else								\
			h ^= load32be(ic + 4);					\
		break;								\
	default: { /* router-advertisement-like: address/preference list */	\
		u32 cnt = ic[4] & 7;						\
		for (u32 i = 0; i < cnt && 8 + i * 8 + 8 <= len; i++)		\
			h += load32be(ic + 8 + i * 8) * ((n) | 1u) ^ load32be(ic + 12 + i * 8); \
		break;								\
	}									\
	}									\
	h = mix32(h ^ m->src);							\
	res_add(((u64)(n) << 48) ^ h);						\
	return ((n) == 8 || (n) == 13) ? 1 : 0;					\
}

REP32(ICMP_HANDLER)

#define ICMP_ENTRY(n) icmp_h##n,
static const icmp_fn icmp_types[ICMP_NTYPES] = { REP32(ICMP_ENTRY) };

static void icmp_reflect(struct mbuf *m, const u8 *ic, u32 len)
{
	struct mbuf *r = m_get();
	u8 *p = mtod(r);

	memcpy(p, ic, len);
	p[0] = ic[0] == 8 ? 0 : 14;
	store16be(p + 2, 0);
	store16be(p + 2, in_cksum(p, len));
	r->len = len;
	netstat.icmp_out++;
	ip_output(r, m->dst, m->src, IPPROTO_ICMP, 64, m->tos);
}

void icmp_input(struct mbuf *m)
{
	const u8 *ic = m->data + m->l4off;
	u32 len = m_end(m) - m->l4off;
	int r;

	netstat.icmp_in++;
	if (len < 8 || in_cksum(ic, len) != 0 || ic[0] >= ICMP_NTYPES) {
		res_add(0x1c0bad);
		m_free(m);
		return;
	}
	r = icmp_types[ic[0]](m, ic, len);
	if (r > 0 && !(m->flags & (M_LOOP | M_BCAST | M_MCAST)))
		icmp_reflect(m, ic, len);
	m_free(m);
}

void icmp_error(struct mbuf *m, u8 type, u8 code)
{
	const u8 *ip = m->data + m->l3off;
	u32 ihl = m->l4off - m->l3off;
	u32 qlen = ihl + 8;
	struct mbuf *r;
	u8 *p;

	if (m->flags & (M_LOOP | M_BCAST | M_MCAST))
		return;
	if (m->proto == IPPROTO_ICMP) {
		const u8 *ic = m->data + m->l4off;

		if (ic[0] != 8 && ic[0] != 13)
			return;		/* never answer an error with an error */
	}
	if (m->l3off + qlen > m_end(m))
		qlen = m_end(m) - m->l3off;
	r = m_get();
	p = mtod(r);
	p[0] = type;
	p[1] = code;
	store16be(p + 2, 0);
	store32be(p + 4, 0);
	memcpy(p + 8, ip, qlen);
	store16be(p + 2, in_cksum(p, 8 + qlen));
	r->len = 8 + qlen;
	netstat.icmp_err++;
	ip_output(r, LOCAL_ADDR, m->src, IPPROTO_ICMP, 64, 0);
}

void icmp_init(void)
{
	memset(icmp_type_counts, 0, sizeof(icmp_type_counts));
}
