/* net/pf_state.c - pf state table: hash of normalised 5-tuples, logical-time expiry */
#include "pf.h"
#include "kern.h"
#include "lib.h"

#define PF_STATES 4096
#define PF_BUCKETS 2048

static struct pf_state states[PF_STATES];
static s32 buckets[PF_BUCKETS];
static u64 state_map[PF_STATES / 64];
static u32 state_hint, nstates;
static u64 pf_clock;

u64 pf_now(void)
{
	return pf_clock;
}

static void pf_key(const struct pf_pdesc *pd, struct pf_state_key *k, int *reverse)
{
	bool swap = pd->src > pd->dst || (pd->src == pd->dst && pd->sport > pd->dport);

	k->proto = pd->proto;
	k->a1 = swap ? pd->dst : pd->src;
	k->a2 = swap ? pd->src : pd->dst;
	k->p1 = swap ? pd->dport : pd->sport;
	k->p2 = swap ? pd->sport : pd->dport;
	*reverse = swap;
}

static u32 pf_hash(const struct pf_state_key *k)
{
	return jhash_3words(k->a1, k->a2, ((u32)k->p1 << 16) | k->p2, k->proto) % PF_BUCKETS;
}

static bool key_eq(const struct pf_state_key *a, const struct pf_state_key *b)
{
	return a->a1 == b->a1 && a->a2 == b->a2 && a->p1 == b->p1 && a->p2 == b->p2 && a->proto == b->proto;
}

static u64 pf_timeout(const struct pf_state *s)
{
	switch (s->key.proto) {
	case IPPROTO_TCP:
		return s->tcp_state >= 2 ? 64 : 4000;
	case IPPROTO_UDP:
		return 1500;
	case IPPROTO_ICMP:
		return 300;
	default:
		return 600;
	}
}

struct pf_state *pf_state_lookup(const struct pf_pdesc *pd, int *reverse)
{
	struct pf_state_key k;
	s32 i;

	pf_key(pd, &k, reverse);
	for (i = buckets[pf_hash(&k)]; i >= 0; i = states[i].next)
		if (key_eq(&states[i].key, &k))
			return &states[i];
	return NULL;
}

struct pf_state *pf_state_insert(const struct pf_pdesc *pd, u32 rule_nr)
{
	struct pf_state *s;
	int rev;
	s32 idx;
	u32 h;

	idx = bitmap_find_zero(state_map, PF_STATES, state_hint);
	if (idx < 0) {
		netstat.pf_state_full++;
		return NULL;
	}
	state_hint = ((u32)idx + 1) % PF_STATES;
	s = &states[idx];
	memset(s, 0, sizeof(*s));
	pf_key(pd, &s->key, &rev);
	s->rule_nr = rule_nr;
	s->used = 1;
	s->tcp_state = 0;
	s->expire = pf_clock + pf_timeout(s);
	h = pf_hash(&s->key);
	s->next = buckets[h];
	buckets[h] = idx;
	bitmap_set(state_map, (u32)idx);
	nstates++;
	netstat.pf_state_new++;
	return s;
}

void pf_state_update(struct pf_state *s, const struct pf_pdesc *pd, int reverse)
{
	u32 d = reverse ? 1 : 0;

	s->packets[d]++;
	s->bytes[d] += pd->len;
	if (pd->proto == IPPROTO_TCP && pd->l4) {
		u32 seq = load32be(pd->l4 + 4);

		if ((s32)(seq - s->seqhi[d]) > 0 || !s->seqhi[d])
			s->seqhi[d] = seq;
		if (pd->tcpflags & (TH_FIN | TH_RST))
			s->tcp_state = pd->tcpflags & TH_RST ? 3 : 2;
		else if (pd->tcpflags & TH_SYN)
			s->tcp_state = 0;
		else if (s->tcp_state == 0)
			s->tcp_state = 1;
	}
	s->expire = pf_clock + pf_timeout(s);
}

static void pf_state_remove(u32 idx)
{
	struct pf_state *s = &states[idx];
	s32 *link = &buckets[pf_hash(&s->key)];

	while (*link >= 0) {
		if ((u32)*link == idx) {
			*link = s->next;
			break;
		}
		link = &states[*link].next;
	}
	s->used = 0;
	bitmap_clear(state_map, idx);
	nstates--;
}

void pf_state_expire(u64 now)
{
	u64 acc = 0;

	for (u32 w = 0; w < PF_STATES / 64; w++) {
		u64 bits = state_map[w];

		while (bits) {
			u32 b = 0;

			while (!((bits >> b) & 1))
				b++;
			bits &= ~(1ull << b);
			if (states[w * 64 + b].expire <= now) {
				acc += states[w * 64 + b].packets[0] + states[w * 64 + b].packets[1] * 3;
				pf_state_remove(w * 64 + b);
			}
		}
	}
	res_add(acc ^ ((u64)nstates << 40));
}

u32 pf_state_count(void)
{
	return nstates;
}

void pf_tick(void)
{
	pf_clock++;
	if ((pf_clock & 255) == 0)
		pf_state_expire(pf_clock);
}

void pf_state_init(void)
{
	memset(states, 0, sizeof(states));
	for (u32 i = 0; i < PF_BUCKETS; i++)
		buckets[i] = -1;
	bitmap_zero(state_map, PF_STATES);
	state_hint = 0;
	nstates = 0;
	pf_clock = 0;
}
