/*
 * net/pf_rules.c - the loaded ruleset.  Generated at boot from a fixed seed:
 * address/port/protocol criteria plus 0-3 match predicates per rule.
 */
#include "pf.h"
#include "kern.h"
#include "lib.h"

struct pf_rule pf_rules_in[PF_NRULES_IN];
struct pf_rule pf_rules_out[PF_NRULES_OUT];

static void pf_rule_gen(struct prng *rng, struct pf_rule *r, u32 nr, u32 nrules, u32 mbase)
{
	u32 a = prng_range(rng, 100);

	memset(r, 0, sizeof(*r));
	r->nr = nr;
	r->dir = (u8)prng_range(rng, 3);	/* 0 in, 1 out, 2 both */
	r->action = a < 78 ? PF_ACT_PASS : a < 90 ? PF_ACT_BLOCK : PF_ACT_MATCH;
	r->quick = nr > nrules - nrules / 5 && prng_chance(rng, 10);
	a = prng_range(rng, 100);
	r->proto = a < 60 ? 0 : a < 80 ? IPPROTO_TCP : a < 92 ? IPPROTO_UDP : IPPROTO_ICMP;
	if (prng_chance(rng, 25)) {
		r->src_addr = 0x0a010000u;
		r->src_mask = 0xffff0000u;
	} else if (prng_chance(rng, 10)) {
		r->src_addr = 0x0a010000u | (prng_range(rng, 32) << 8);
		r->src_mask = 0xffffe000u;
	}
	if (prng_chance(rng, 20)) {
		r->dst_addr = 0x0a000000u;
		r->dst_mask = 0xffffff00u;
	}
	if (r->proto == IPPROTO_TCP && prng_chance(rng, 30)) {
		r->dport_lo = (u16)(1000 + prng_range(rng, 64));
		r->dport_hi = (u16)(r->dport_lo + 16 + prng_range(rng, 64));
	}
	r->nmatch = r->action == PF_ACT_BLOCK ? 2 + prng_range(rng, 2) : 1 + prng_range(rng, 2);
	for (u32 i = 0; i < r->nmatch; i++)
		r->match[i] = pf_match_table[(mbase + nr * 3 + i * 37 + prng_range(rng, 2)) % PF_NMATCH];
	r->arg0 = prng_u32(rng);
	r->value = prng_u32(rng);
	r->mask = (1u << prng_range(rng, 32)) | (prng_chance(rng, 30) ? 1u << prng_range(rng, 32) : 0);
	r->keep_state = r->action == PF_ACT_PASS && prng_chance(rng, 35);
	r->log = prng_chance(rng, 10);
	r->tag = (u16)prng_u32(rng);
	r->action_idx = prng_range(rng, PF_NACTION);
}

void pf_rules_init(void)
{
	struct prng rng;

	prng_seed(&rng, 0x7066727573657421ull);
	for (u32 i = 0; i < PF_NRULES_IN; i++)
		pf_rule_gen(&rng, &pf_rules_in[i], i, PF_NRULES_IN, 0);
	for (u32 i = 0; i < PF_NRULES_OUT; i++)
		pf_rule_gen(&rng, &pf_rules_out[i], i, PF_NRULES_OUT, 1);
	/* rule 0 of each set: pass all, no criteria */
	pf_rules_in[0].action = pf_rules_out[0].action = PF_ACT_PASS;
	pf_rules_in[0].dir = pf_rules_out[0].dir = 2;
	pf_rules_in[0].proto = pf_rules_out[0].proto = 0;
	pf_rules_in[0].src_mask = pf_rules_out[0].src_mask = 0;
	pf_rules_in[0].dst_mask = pf_rules_out[0].dst_mask = 0;
	pf_rules_in[0].dport_hi = pf_rules_out[0].dport_hi = 0;
	pf_rules_in[0].nmatch = pf_rules_out[0].nmatch = 0;
	pf_rules_in[0].quick = pf_rules_out[0].quick = 0;
}
