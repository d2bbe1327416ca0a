/* net/ether.c - Ethernet input/output, VLAN, ethertype dispatch */
#include "net.h"
#include "kern.h"
#include "lib.h"

struct netstat netstat;

static const u16 vlans_configured[] = { 10, 20, 30 };

static void ipv6_input(struct ifnet *ifp, struct mbuf *m);
static void lldp_input(struct ifnet *ifp, struct mbuf *m);

struct ether_proto {
	u16 type;
	void (*input)(struct ifnet *ifp, struct mbuf *m);
	u64 count;
};

static struct ether_proto ether_protos[] = {
	{ ETHERTYPE_IP, ip_input, 0 },
	{ ETHERTYPE_ARP, arp_input, 0 },
	{ ETHERTYPE_IPV6, ipv6_input, 0 },
	{ ETHERTYPE_LLDP, lldp_input, 0 },
};

static void ether_drop(struct mbuf *m, u32 why)
{
	netstat.eth_drop++;
	res_add(0xe700 + why);
	m_free(m);
}

/* no IPv6 stack: validate the fixed header and drop */
static void ipv6_input(struct ifnet *ifp UNUSED, struct mbuf *m)
{
	const u8 *h = m->data + m->l3off;
	u32 avail = m_end(m) - m->l3off;

	if (avail < 40) {
		ether_drop(m, 6);
		return;
	}
	res_add(0x6600000000ull | (u64)fnv1a32(h, 40, 0x6));
	ether_drop(m, 7);
}

/* walk the LLDP TLVs */
static void lldp_input(struct ifnet *ifp UNUSED, struct mbuf *m)
{
	const u8 *p = m->data + m->l3off;
	u32 avail = m_end(m) - m->l3off, i = 0, ntlv = 0;
	u64 acc = 0x11d9;

	while (i + 2 <= avail && ntlv < 32) {
		u16 hdr = load16be(p + i);
		u32 type = hdr >> 9, len = hdr & 0x1ff;

		if (type == 0 || i + 2 + len > avail)
			break;
		acc = acc * 31 + type * 1000 + len;
		acc ^= fnv1a32(p + i + 2, len, (u32)type);
		i += 2 + len;
		ntlv++;
	}
	res_add(acc ^ ntlv);
	ether_drop(m, 8);
}

void ether_input(struct ifnet *ifp, struct mbuf *m)
{
	u8 *eh = mtod(m);
	u32 hl = ETH_HLEN;
	u16 type;

	netstat.eth_in++;
	if (m->len < ETH_HLEN) {
		ether_drop(m, 1);
		return;
	}
	if (!(m->flags & M_LOOP)) {
		if (eh[0] & 1) {
			static const u8 bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

			m->flags |= memcmp(eh, bc, 6) ? M_MCAST : M_BCAST;
		} else if (memcmp(eh, ifp->lladdr, 6) != 0) {
			ether_drop(m, 2);
			return;
		}
	}
	type = load16be(eh + 12);
	if (type == ETHERTYPE_VLAN) {
		u16 vid;
		bool ok = false;

		if (m->len < 18) {
			ether_drop(m, 3);
			return;
		}
		vid = load16be(eh + 14) & 0xfff;
		for (u32 i = 0; i < ARRAY_SIZE(vlans_configured); i++)
			if (vlans_configured[i] == vid)
				ok = true;
		if (!ok) {
			ether_drop(m, 4);
			return;
		}
		netstat.eth_vlan++;
		m->flags |= M_VLAN;
		m->vlan = vid;
		type = load16be(eh + 16);
		hl = 18;
	}
	m->ethertype = type;
	m->l3off = m->off + hl;
	for (u32 i = 0; i < ARRAY_SIZE(ether_protos); i++) {
		if (ether_protos[i].type == type) {
			ether_protos[i].count++;
			ether_protos[i].input(ifp, m);
			return;
		}
	}
	netstat.eth_unknown++;
	ether_drop(m, 5);
}

int ether_output(struct ifnet *ifp, struct mbuf *m, u32 nexthop)
{
	u8 mac[6];
	u8 *eh;

	if (!arp_resolve(nexthop, mac))
		memset(mac, 0xff, 6);
	eh = m_prepend(m, ETH_HLEN);
	memcpy(eh, mac, 6);
	memcpy(eh + 6, ifp->lladdr, 6);
	store16be(eh + 12, ETHERTYPE_IP);
	return ifp->if_output(ifp, m);
}

void ether_init(void)
{
	memset(&netstat, 0, sizeof(netstat));
	for (u32 i = 0; i < ARRAY_SIZE(ether_protos); i++)
		ether_protos[i].count = 0;
}

/* "stats" on the command line: debugging aid, never used by layoutbench */
void netstat_dump(void)
{
	kprintf("# netstat eth_in=%llu\n", netstat.eth_in);
	kprintf("# netstat eth_drop=%llu\n", netstat.eth_drop);
	kprintf("# netstat eth_vlan=%llu\n", netstat.eth_vlan);
	kprintf("# netstat eth_unknown=%llu\n", netstat.eth_unknown);
	kprintf("# netstat arp_in=%llu\n", netstat.arp_in);
	kprintf("# netstat arp_reply=%llu\n", netstat.arp_reply);
	kprintf("# netstat arp_miss=%llu\n", netstat.arp_miss);
	kprintf("# netstat ip_in=%llu\n", netstat.ip_in);
	kprintf("# netstat ip_drop=%llu\n", netstat.ip_drop);
	kprintf("# netstat ip_badsum=%llu\n", netstat.ip_badsum);
	kprintf("# netstat ip_badhdr=%llu\n", netstat.ip_badhdr);
	kprintf("# netstat ip_opts=%llu\n", netstat.ip_opts);
	kprintf("# netstat ip_optdrop=%llu\n", netstat.ip_optdrop);
	kprintf("# netstat ip_frag=%llu\n", netstat.ip_frag);
	kprintf("# netstat ip_fwd=%llu\n", netstat.ip_fwd);
	kprintf("# netstat ip_out=%llu\n", netstat.ip_out);
	kprintf("# netstat ip_noroute=%llu\n", netstat.ip_noroute);
	kprintf("# netstat pf_pass=%llu\n", netstat.pf_pass);
	kprintf("# netstat pf_block=%llu\n", netstat.pf_block);
	kprintf("# netstat pf_state_hit=%llu\n", netstat.pf_state_hit);
	kprintf("# netstat pf_state_new=%llu\n", netstat.pf_state_new);
	kprintf("# netstat pf_state_full=%llu\n", netstat.pf_state_full);
	kprintf("# netstat pf_rules_eval=%llu\n", netstat.pf_rules_eval);
	kprintf("# netstat tcp_in=%llu\n", netstat.tcp_in);
	kprintf("# netstat tcp_badsum=%llu\n", netstat.tcp_badsum);
	kprintf("# netstat tcp_rst_out=%llu\n", netstat.tcp_rst_out);
	kprintf("# netstat tcp_syn=%llu\n", netstat.tcp_syn);
	kprintf("# netstat tcp_data=%llu\n", netstat.tcp_data);
	kprintf("# netstat tcp_fin=%llu\n", netstat.tcp_fin);
	kprintf("# netstat tcp_out=%llu\n", netstat.tcp_out);
	kprintf("# netstat tcp_opts=%llu\n", netstat.tcp_opts);
	kprintf("# netstat udp_in=%llu\n", netstat.udp_in);
	kprintf("# netstat udp_badsum=%llu\n", netstat.udp_badsum);
	kprintf("# netstat udp_noport=%llu\n", netstat.udp_noport);
	kprintf("# netstat udp_out=%llu\n", netstat.udp_out);
	kprintf("# netstat icmp_in=%llu\n", netstat.icmp_in);
	kprintf("# netstat icmp_out=%llu\n", netstat.icmp_out);
	kprintf("# netstat icmp_err=%llu\n", netstat.icmp_err);
	kprintf("# netstat raw_in=%llu\n", netstat.raw_in);
	kprintf("# netstat svc_calls=%llu\n", netstat.svc_calls);
	kprintf("# netstat svc_replies=%llu\n", netstat.svc_replies);
	kprintf("# netstat so_deliver=%llu\n", netstat.so_deliver);
}
