/* net/in_pcb.c - protocol control blocks: hash table keyed by the 4-tuple */
#include "net.h"
#include "kern.h"
#include "lib.h"

#define PCB_POOL 2048
#define PCB_HASH 1024

static struct inpcb pcbs[PCB_POOL];
static s32 pcb_hash[PCB_HASH];
static u64 pcb_map[PCB_POOL / 64];
static u32 pcb_hint;
static u64 pcb_evictions;
static const u64 pcb_secret[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };

static u32 pcb_hashfn(u8 proto, u32 laddr, u16 lport, u32 faddr, u16 fport)
{
	return (u32)siphash_3u32(pcb_secret, laddr ^ proto, faddr, ((u32)lport << 16) | fport) % PCB_HASH;
}

struct inpcb *in_pcblookup(u8 proto, u32 laddr, u16 lport, u32 faddr, u16 fport)
{
	s32 i = pcb_hash[pcb_hashfn(proto, laddr, lport, faddr, fport)];

	while (i >= 0) {
		struct inpcb *p = &pcbs[i];

		if (p->proto == proto && p->laddr == laddr && p->faddr == faddr && p->lport == lport &&
		    p->fport == fport)
			return p;
		i = p->next;
	}
	return NULL;
}

void in_pcbfree(struct inpcb *pcb)
{
	u32 idx = (u32)(pcb - pcbs);
	s32 *link = &pcb_hash[pcb_hashfn(pcb->proto, pcb->laddr, pcb->lport, pcb->faddr, pcb->fport)];

	while (*link >= 0) {
		if ((u32)*link == idx) {
			*link = pcb->next;
			break;
		}
		link = &pcbs[*link].next;
	}
	pcb->used = 0;
	bitmap_clear(pcb_map, idx);
}

struct inpcb *in_pcballoc(u8 proto, u32 laddr, u16 lport, u32 faddr, u16 fport)
{
	s32 idx = bitmap_find_zero(pcb_map, PCB_POOL, pcb_hint);
	struct inpcb *p;
	u32 h;

	if (idx < 0) {
		/* table full: evict the slot at the hint */
		pcb_evictions++;
		idx = (s32)pcb_hint;
		in_pcbfree(&pcbs[idx]);
	}
	pcb_hint = ((u32)idx + 1) % PCB_POOL;
	p = &pcbs[idx];
	memset(p, 0, sizeof(*p));
	p->proto = proto;
	p->laddr = laddr;
	p->lport = lport;
	p->faddr = faddr;
	p->fport = fport;
	p->used = 1;
	h = pcb_hashfn(proto, laddr, lport, faddr, fport);
	p->next = pcb_hash[h];
	pcb_hash[h] = idx;
	bitmap_set(pcb_map, (u32)idx);
	return p;
}

/* the "socket layer": replies that came back through the loopback */
void so_deliver(struct mbuf *m, struct inpcb *pcb)
{
	const u8 *p = m->data + m->payoff;
	u32 len = m_end(m) - m->payoff;

	netstat.so_deliver++;
	res_add(fnv1a32(p, len, 0x50c) ^ ((u64)len << 32) ^ (pcb ? pcb->acc : 0));
	m_free(m);
}

void in_pcb_init(void)
{
	memset(pcbs, 0, sizeof(pcbs));
	for (u32 i = 0; i < PCB_HASH; i++)
		pcb_hash[i] = -1;
	bitmap_zero(pcb_map, PCB_POOL);
	pcb_hint = 0;
}
