/* net/route.c - IPv4 routing table, longest prefix match */
#include "net.h"
#include "kern.h"
#include "lib.h"

#define RT_MAX 64

static struct rtentry rt_table[RT_MAX];
static u32 rt_count;

static void rt_add(u32 dst, u32 plen, u32 gw, struct ifnet *ifp)
{
	struct rtentry *rt = &rt_table[rt_count++];

	rt->mask = plen ? ~0u << (32 - plen) : 0;
	rt->dst = dst & rt->mask;
	rt->gateway = gw;
	rt->ifp = ifp;
	rt->use = 0;
}

const struct rtentry *rt_lookup(u32 dst)
{
	struct rtentry *best = NULL;

	for (u32 i = 0; i < rt_count; i++) {
		struct rtentry *rt = &rt_table[i];

		if ((dst & rt->mask) == rt->dst && (!best || rt->mask > best->mask))
			best = rt;
	}
	if (best)
		best->use++;
	return best;
}

void route_init(void)
{
	rt_count = 0;
	rt_add(0, 0, 0x0a0000feu, &null0_if);			/* default */
	rt_add(0x0a000000u, 24, 0, &vnic0_if);			/* connected */
	rt_add(0x0a010000u, 16, 0, &lo0_if);			/* clients: replies loop back */
	rt_add(0x0a020000u, 16, 0x0a0000feu, &null0_if);	/* forwarded */
	rt_add(0x7f000000u, 8, 0, &lo0_if);
	/* many more specific routes, as a real table would have */
	for (u32 i = 0; rt_count < RT_MAX - 4; i++) {
		u32 net = 0x0a020000u | ((i * 37u) % 16) << 8;

		rt_add(net, 24 + (i % 5), 0x0a0000feu, &null0_if);
		if (rt_count < RT_MAX - 4)
			rt_add(0xac100000u | (i << 12), 20, 0x0a0000feu, &null0_if);
	}
}
