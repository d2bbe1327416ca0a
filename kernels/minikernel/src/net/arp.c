/* net/arp.c - ARP cache and ARP input */
#include "net.h"
#include "kern.h"
#include "lib.h"

#define ARP_SLOTS 512

struct arp_entry {
	u32 addr;
	u8 mac[6];
	u8 valid;
	u8 pad;
	u32 hits;
};

static struct arp_entry arp_cache[ARP_SLOTS];

static u32 arp_hash(u32 addr)
{
	return mix32(addr) % ARP_SLOTS;
}

static void arp_update(u32 addr, const u8 *mac)
{
	u32 h = arp_hash(addr);

	for (u32 i = 0; i < 8; i++) {
		struct arp_entry *e = &arp_cache[(h + i) % ARP_SLOTS];

		if (!e->valid || e->addr == addr) {
			e->addr = addr;
			memcpy(e->mac, mac, 6);
			e->valid = 1;
			return;
		}
	}
	/* replace the home slot */
	arp_cache[h].addr = addr;
	memcpy(arp_cache[h].mac, mac, 6);
	arp_cache[h].hits = 0;
}

bool arp_resolve(u32 addr, u8 mac[6])
{
	u32 h = arp_hash(addr);

	for (u32 i = 0; i < 8; i++) {
		struct arp_entry *e = &arp_cache[(h + i) % ARP_SLOTS];

		if (!e->valid)
			break;
		if (e->addr == addr) {
			e->hits++;
			memcpy(mac, e->mac, 6);
			return true;
		}
	}
	netstat.arp_miss++;
	return false;
}

static void arp_reply(struct ifnet *ifp, const u8 *req)
{
	struct mbuf *r = m_get();
	u8 *f = mtod(r), *a;

	memcpy(f, req + 8, 6);			/* to the sender */
	memcpy(f + 6, ifp->lladdr, 6);
	store16be(f + 12, ETHERTYPE_ARP);
	a = f + ETH_HLEN;
	store16be(a, 1);
	store16be(a + 2, ETHERTYPE_IP);
	a[4] = 6;
	a[5] = 4;
	store16be(a + 6, 2);
	memcpy(a + 8, ifp->lladdr, 6);
	store32be(a + 14, LOCAL_ADDR);
	memcpy(a + 18, req + 8, 10);
	memset(a + 28, 0, 18);
	r->len = ETH_HLEN + 46;
	netstat.arp_reply++;
	lo0_if.if_output(&lo0_if, r);
}

void arp_input(struct ifnet *ifp, struct mbuf *m)
{
	const u8 *a = m->data + m->l3off;
	u32 avail = m_end(m) - m->l3off;
	u16 op;
	u32 spa, tpa;

	netstat.arp_in++;
	if (avail < 28 || load16be(a) != 1 || load16be(a + 2) != ETHERTYPE_IP || a[4] != 6 || a[5] != 4) {
		res_add(0xa4900);
		m_free(m);
		return;
	}
	op = load16be(a + 6);
	spa = load32be(a + 14);
	tpa = load32be(a + 24);
	arp_update(spa, a + 8);
	res_add(((u64)op << 48) ^ ((u64)spa << 16) ^ tpa);
	if (op == 1 && !(m->flags & M_LOOP) && if_isours(tpa))
		arp_reply(ifp, a);
	m_free(m);
}

void arp_init(void)
{
	static const u8 gw_mac[6] = { 0x02, 0x00, 0x0a, 0x00, 0x00, 0xfe };

	memset(arp_cache, 0, sizeof(arp_cache));
	arp_update(0x0a0000feu, gw_mac);
}
