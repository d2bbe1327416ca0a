/* dev/loopback.c - lo0 (frames come back in through ether_input) and null0 */
#include "dev.h"
#include "kern.h"
#include "lib.h"
#include "net.h"

static int lo_output(struct ifnet *ifp, struct mbuf *m);
static void lo_input(struct ifnet *ifp, struct mbuf *m);
static int null_output(struct ifnet *ifp, struct mbuf *m);

struct ifnet lo0_if = {
	.name = "lo0",
	.mtu = 16384,
	.lladdr = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x7f },
	.addr = 0x7f000001u,
	.if_input = lo_input,
	.if_output = lo_output,
};

struct ifnet null0_if = {
	.name = "null0",
	.mtu = 1500,
	.lladdr = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x00 },
	.addr = 0,
	.if_input = lo_input,
	.if_output = null_output,
};

static int lo_output(struct ifnet *ifp, struct mbuf *m)
{
	ifp->opackets++;
	ifp->obytes += m->len;
	m->flags |= M_LOOP;
	return ifq_enqueue(&ifp->snd, m);
}

static void lo_input(struct ifnet *ifp, struct mbuf *m)
{
	ifp->ipackets++;
	ifp->ibytes += m->len;
	m->ifindex = ifp->index;
	ether_input(ifp, m);
}

/* the forwarding sink: account and drop */
static int null_output(struct ifnet *ifp, struct mbuf *m)
{
	ifp->opackets++;
	ifp->obytes += m->len;
	res_add(0x4e55000000ull | (u64)in_cksum(mtod(m), m->len));
	m_free(m);
	return 0;
}

u32 loopback_drain(u32 budget)
{
	struct mbuf *m;
	u32 n = 0;

	while (n < budget && (m = ifq_dequeue(&lo0_if.snd)) != NULL) {
		n++;
		lo0_if.if_input(&lo0_if, m);
	}
	while ((m = ifq_dequeue(&lo0_if.snd)) != NULL) {
		lo0_if.idrops++;
		m_free(m);
	}
	return n;
}

void loopback_init(void)
{
	ifq_init(&lo0_if.snd, 32);
	ifq_init(&null0_if.snd, 1);
	if_attach(&lo0_if);
	if_attach(&null0_if);
}
