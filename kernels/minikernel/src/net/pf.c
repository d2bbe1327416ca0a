/*
 * net/pf.c - packet filter: header extraction, normalisation (scrub),
 * state lookup, ruleset evaluation (last match wins, quick stops), actions.
 */
#include "pf.h"
#include "kern.h"
#include "lib.h"
#include "platform.h"

static u64 pf_cycles;
static u64 pf_counters[2][3];

u64 pf_cycles_total(void)
{
	return pf_cycles;
}

typedef int (*pf_norm_fn)(struct pf_pdesc *pd);

static int pf_norm_tcp(struct pf_pdesc *pd)
{
	u8 f = pd->tcpflags;

	if ((f & TH_SYN) && (f & (TH_FIN | TH_RST)))
		return -1;			/* nonsense flag combination */
	if (!(f & (TH_SYN | TH_ACK | TH_RST)))
		return -1;			/* no ACK on a non-SYN segment */
	pd->acc += (u64)f * 0x9e37 + pd->sport;
	return 0;
}

static int pf_norm_udp(struct pf_pdesc *pd)
{
	if (pd->l4 && load16be(pd->l4 + 4) < 8)
		return -1;
	pd->acc += pd->dport * 0x51ull;
	return 0;
}

static int pf_norm_icmp(struct pf_pdesc *pd)
{
	pd->acc += pd->icmp_type * 0x1cull;
	return pd->icmp_type == 5 ? -1 : 0;	/* no redirects */
}

static int pf_norm_other(struct pf_pdesc *pd)
{
	pd->acc += pd->proto;
	return 0;
}

static pf_norm_fn pf_norm_table[256];

static void pf_setup_pdesc(struct pf_pdesc *pd, int dir, struct ifnet *ifp, struct mbuf *m)
{
	u32 l4len = m_end(m) - m->l4off;

	pd->m = m;
	pd->ip = m->data + m->l3off;
	pd->l4 = NULL;
	pd->src = m->src;
	pd->dst = m->dst;
	pd->sport = pd->dport = 0;
	pd->len = (u16)(m_end(m) - m->l3off);
	pd->proto = m->proto;
	pd->ttl = m->ttl;
	pd->tos = m->tos;
	pd->tcpflags = 0;
	pd->dir = (u8)dir;
	pd->icmp_type = 0xff;
	pd->ifindex = ifp->index;
	pd->tag = 0;
	pd->acc = 0;
	switch (m->proto) {
	case IPPROTO_TCP:
		if (l4len >= 20) {
			pd->l4 = m->data + m->l4off;
			pd->sport = load16be(pd->l4);
			pd->dport = load16be(pd->l4 + 2);
			pd->tcpflags = pd->l4[13];
		}
		break;
	case IPPROTO_UDP:
		if (l4len >= 8) {
			pd->l4 = m->data + m->l4off;
			pd->sport = load16be(pd->l4);
			pd->dport = load16be(pd->l4 + 2);
		}
		break;
	case IPPROTO_ICMP:
		if (l4len >= 8) {
			pd->l4 = m->data + m->l4off;
			pd->icmp_type = pd->l4[0];
			pd->sport = load16be(pd->l4 + 4);	/* echo id */
		}
		break;
	default:
		break;
	}
}

static const struct pf_rule *pf_match_rules(struct pf_rule *rules, u32 n, struct pf_pdesc *pd)
{
	const struct pf_rule *last = NULL;

	for (u32 i = 0; i < n; i++) {
		struct pf_rule *r = &rules[i];
		bool ok = true;

		r->evaluations++;
		if (r->dir != pd->dir && r->dir != 2)
			continue;
		if (r->proto && r->proto != pd->proto)
			continue;
		if (((pd->src ^ r->src_addr) & r->src_mask) || ((pd->dst ^ r->dst_addr) & r->dst_mask))
			continue;
		if (r->dport_hi && (pd->dport < r->dport_lo || pd->dport > r->dport_hi))
			continue;
		for (u32 j = 0; j < r->nmatch; j++) {
			if (!r->match[j](r, pd)) {
				ok = false;
				break;
			}
		}
		if (!ok)
			continue;
		r->matches++;
		last = r;
		if (r->quick)
			break;
	}
	netstat.pf_rules_eval += n;
	return last;
}

int pf_test(int dir, struct ifnet *ifp, struct mbuf *m)
{
	u64 t0 = plat_rdtsc();
	struct pf_pdesc pd;
	struct pf_state *s;
	int verdict = PF_PASS, rev;
	u32 rnr = 0xffff;

	pf_setup_pdesc(&pd, dir, ifp, m);
	if (pf_norm_table[pd.proto](&pd) < 0) {
		verdict = PF_DROP;
		goto out;
	}
	s = pf_state_lookup(&pd, &rev);
	if (s) {
		pf_state_update(s, &pd, rev);
		netstat.pf_state_hit++;
		m->flags |= M_STATE;
		rnr = s->rule_nr | 0x10000;
	} else {
		const struct pf_rule *r;

		if (dir == PF_IN)
			r = pf_match_rules(pf_rules_in, PF_NRULES_IN, &pd);
		else
			r = pf_match_rules(pf_rules_out, PF_NRULES_OUT, &pd);
		if (!r) {
			verdict = PF_PASS;
		} else {
			rnr = r->nr;
			pf_action_table[r->action_idx](r, &pd);
			if (r->action == PF_ACT_BLOCK)
				verdict = PF_DROP;
			else if (r->keep_state && !(m->flags & M_LOOP))
				pf_state_insert(&pd, r->nr);
		}
	}
out:
	pf_counters[dir][verdict]++;
	if (verdict == PF_PASS)
		netstat.pf_pass++;
	else
		netstat.pf_block++;
	res_add(pd.acc ^ ((u64)rnr << 40) ^ ((u64)verdict << 62) ^ pd.tag);
	pf_cycles += plat_rdtsc() - t0;
	return verdict;
}

void pf_init(void)
{
	for (u32 i = 0; i < 256; i++)
		pf_norm_table[i] = pf_norm_other;
	pf_norm_table[IPPROTO_TCP] = pf_norm_tcp;
	pf_norm_table[IPPROTO_UDP] = pf_norm_udp;
	pf_norm_table[IPPROTO_ICMP] = pf_norm_icmp;
	pf_rules_init();
	pf_state_init();
	pf_cycles = 0;
	memset(pf_counters, 0, sizeof(pf_counters));
}
