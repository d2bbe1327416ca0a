/* dev/mbuf.c - fixed pool of packet buffers */
#include "mbuf.h"
#include "kern.h"
#include "lib.h"

static struct mbuf mbuf_pool[MBUF_POOL] ALIGN64;
static u32 free_stack[MBUF_POOL];
static u32 free_top;
static u64 m_allocs;

void mbuf_init(void)
{
	free_top = 0;
	for (u32 i = 0; i < MBUF_POOL; i++) {
		mbuf_pool[i].index = i;
		free_stack[free_top++] = MBUF_POOL - 1 - i;
	}
}

struct mbuf *m_get(void)
{
	struct mbuf *m;

	if (!free_top)
		panic("mbuf pool exhausted");
	m = &mbuf_pool[free_stack[--free_top]];
	m->off = MBUF_HEADROOM;
	m->len = 0;
	m->l3off = m->l4off = m->payoff = MBUF_HEADROOM;
	m->flags = 0;
	m->ifindex = 0;
	m->ethertype = 0;
	m->vlan = 0;
	m->proto = m->ttl = m->tos = m->tcpflags = 0;
	m->src = m->dst = 0;
	m->sport = m->dport = 0;
	m->seq = m->ack = 0;
	m->qclass = 0;
	m->next = NULL;
	m_allocs++;
	return m;
}

void m_free(struct mbuf *m)
{
	if (free_top >= MBUF_POOL)
		panic("mbuf double free");
	free_stack[free_top++] = m->index;
}

u32 mbuf_inuse(void)
{
	return MBUF_POOL - free_top;
}

u8 *m_prepend(struct mbuf *m, u32 n)
{
	if (m->off < n)
		panic("m_prepend: no headroom");
	m->off -= n;
	m->len += n;
	return m->data + m->off;
}
