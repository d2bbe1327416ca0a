/* pf.h - packet filter internals */
#ifndef PF_H
#define PF_H
#include "net.h"

struct pf_pdesc {
	struct mbuf *m;
	const u8 *ip;
	const u8 *l4;
	u32 src, dst;
	u16 sport, dport;
	u16 len;
	u8 proto, ttl, tos, tcpflags;
	u8 dir;
	u8 icmp_type;
	u32 ifindex;
	u32 tag;
	u64 acc;
};

struct pf_rule;
typedef int (*pf_match_fn)(const struct pf_rule *r, struct pf_pdesc *pd);

#define PF_ACT_PASS	0
#define PF_ACT_BLOCK	1
#define PF_ACT_MATCH	2

struct pf_rule {
	u32 nr;
	u8 action;
	u8 quick;
	u8 dir;
	u8 proto;		/* 0 = any */
	u8 keep_state;
	u8 log;
	u16 tag;
	u32 src_addr, src_mask;
	u32 dst_addr, dst_mask;
	u16 dport_lo, dport_hi;
	u32 arg0, value, mask;
	u32 nmatch;
	pf_match_fn match[3];
	u32 action_idx;
	u64 evaluations, matches;
};

/* pf_match.c */
#define PF_NMATCH 96
extern const pf_match_fn pf_match_table[PF_NMATCH];
#define PF_NACTION 16
typedef void (*pf_action_fn)(const struct pf_rule *r, struct pf_pdesc *pd);
extern const pf_action_fn pf_action_table[PF_NACTION];

/* pf_rules.c */
#define PF_NRULES_IN 128
#define PF_NRULES_OUT 64
extern struct pf_rule pf_rules_in[PF_NRULES_IN];
extern struct pf_rule pf_rules_out[PF_NRULES_OUT];
void pf_rules_init(void);

/* pf_state.c */
struct pf_state_key {
	u32 a1, a2;
	u16 p1, p2;
	u8 proto;
};
struct pf_state {
	struct pf_state_key key;
	u32 rule_nr;
	u8 used;
	u8 tcp_state;
	u16 pad;
	u32 seqhi[2];
	u64 packets[2], bytes[2];
	u64 expire;
	s32 next;
};
struct pf_state *pf_state_lookup(const struct pf_pdesc *pd, int *reverse);
struct pf_state *pf_state_insert(const struct pf_pdesc *pd, u32 rule_nr);
void pf_state_update(struct pf_state *s, const struct pf_pdesc *pd, int reverse);
void pf_state_init(void);
void pf_state_expire(u64 now);
u32 pf_state_count(void);
u64 pf_now(void);
#endif
