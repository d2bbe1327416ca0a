/* dev/ifnet.c - interface list and interface queues */
#include "dev.h"
#include "kern.h"
#include "lib.h"

#define MAX_IF 8
static struct ifnet *ifnets[MAX_IF];
static u32 nifnets;

void ifq_init(struct ifqueue *q, u32 maxlen)
{
	q->head = q->tail = NULL;
	q->len = 0;
	q->maxlen = maxlen;
	q->drops = q->enq = q->deq = 0;
}

int ifq_enqueue(struct ifqueue *q, struct mbuf *m)
{
	if (q->len >= q->maxlen) {
		q->drops++;
		m_free(m);
		return -1;
	}
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->len++;
	q->enq++;
	return 0;
}

struct mbuf *ifq_dequeue(struct ifqueue *q)
{
	struct mbuf *m = q->head;

	if (!m)
		return NULL;
	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	m->next = NULL;
	q->len--;
	q->deq++;
	return m;
}

void if_attach(struct ifnet *ifp)
{
	if (nifnets >= MAX_IF)
		panic("too many interfaces");
	ifp->index = nifnets + 1;
	ifnets[nifnets++] = ifp;
}

struct ifnet *if_byindex(u32 index)
{
	if (index == 0 || index > nifnets)
		return NULL;
	return ifnets[index - 1];
}

bool if_isours(u32 addr)
{
	for (u32 i = 0; i < nifnets; i++)
		if (ifnets[i]->addr && ifnets[i]->addr == addr)
			return true;
	return false;
}

void ifnet_init(void)
{
	nifnets = 0;
}
