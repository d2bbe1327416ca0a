/*
 * net/pf_match.c - rule match predicates (96 generated variants) and rule
 * actions (16 generated variants).  Rules reference them through function
 * pointers, like pf's per-rule criteria.
 */
#include "pf.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define PF_MATCH(n)								\
static int pf_match_##n(const struct pf_rule *r, struct pf_pdesc *pd)		\
{										\
	const u8 *ip = pd->ip;							\
	u32 h = r->arg0 ^ (0x9e3779b9u * ((n) + 1));				\
	u32 x;									\
										\
	switch ((n) % 6) {							\
	case 0:									\
		x = pd->src ^ rotl32(pd->dst, ((n) % 13) + 1);			\
		break;								\
	case 1:									\
		x = (((u32)pd->sport << 16) | pd->dport) + (n) * 0x10001u;	\
		break;								\
	case 2:									\
		x = load32be(ip + 4 * ((n) % 5)) ^ pd->len;			\
		break;								\
	case 3:									\
		x = ((u32)pd->proto << 24) ^ ((u32)pd->ttl << 8) ^ pd->tos ^ pd->len; \
		break;								\
	case 4:									\
		x = pd->l4 ? load32be(pd->l4) ^ ((u32)pd->tcpflags << ((n) % 24)) : pd->icmp_type; \
		break;								\
	default:								\
		x = (pd->src & (0xffffff00u << ((n) % 8))) + pd->ifindex * 977u + pd->dir; \
		break;								\
	}									\
	for (u32 i = 0; i < 4 + ((n) % 5); i++) {				\
		h ^= ip[((n) * 3 + i * 5) % 20];				\
		h *= 0x01000193u;						\
		h = rotl32(h, ((n) % 7) + 5);					\
	}									\
	h ^= x;									\
	h ^= h >> (((n) % 11) + 7);						\
	h *= 0x85ebca6bu + (n) * 2;						\
	h ^= h >> 13;								\
	if (((n) / 6) % 3 == 0) {						\
		/* port-range style secondary criterion */			\
		if (pd->dport >= 1000 + (n) * 7 && pd->dport < 1100 + (n) * 7)	\
			h ^= 0x80000000u;					\
	} else if (((n) / 6) % 3 == 1) {					\
		/* tcp-flags style secondary criterion */			\
		if ((pd->tcpflags & (1u << ((n) % 6))) != 0)			\
			h = rotl32(h, 3);					\
	} else {								\
		/* ttl/tos style secondary criterion */				\
		if (pd->ttl < 16 + (n) % 32)					\
			h += pd->tos * 0x01010101u;				\
	}									\
	pd->acc = pd->acc * 31 + (h & 0xffff) + (n);				\
	return ((h ^ r->value) & r->mask) == 0;					\
}

REP96(PF_MATCH)

#define PF_MATCH_ENTRY(n) pf_match_##n,
const pf_match_fn pf_match_table[PF_NMATCH] = { REP96(PF_MATCH_ENTRY) };

#define PF_ACTION(n)								\
static void pf_action_##n(const struct pf_rule *r, struct pf_pdesc *pd)	\
{										\
	u32 t = r->tag ^ (n) * 0x2545u;						\
										\
	switch ((n) % 4) {							\
	case 0: /* tag */							\
		pd->tag = t ^ pd->proto;					\
		break;								\
	case 1: /* log: digest the headers */					\
		pd->acc ^= fnv1a32(pd->ip, 20, t);				\
		break;								\
	case 2: /* route-to style rewrite of the accounting key */		\
		pd->tag = (pd->dst & 0xffffff00u) | ((n) & 0xff);		\
		break;								\
	default: /* set-tos style */						\
		pd->tag = ((u32)pd->tos << 16) | (t & 0xffff);			\
		break;								\
	}									\
	pd->acc = pd->acc * 0x100000001b3ull + pd->tag + (n);			\
}

REP16(PF_ACTION)

#define PF_ACTION_ENTRY(n) pf_action_##n,
const pf_action_fn pf_action_table[PF_NACTION] = { REP16(PF_ACTION_ENTRY) };
