/* net/ip_input.c - IPv4 input: header checks, options, pf, classification, delivery */
#include "net.h"
#include "kern.h"
#include "lib.h"

static void ip_drop(struct mbuf *m, u32 why)
{
	netstat.ip_drop++;
	res_add(0x1d000 + why);
	m_free(m);
}

void ip_input(struct ifnet *ifp, struct mbuf *m)
{
	const u8 *ip = m->data + m->l3off;
	u32 avail = m_end(m) - m->l3off;
	u32 ihl, total;
	u16 frag;

	netstat.ip_in++;
	if (avail < 20) {
		ip_drop(m, 1);
		return;
	}
	if ((ip[0] >> 4) != 4) {
		netstat.ip_badhdr++;
		ip_drop(m, 2);
		return;
	}
	ihl = (ip[0] & 0x0fu) * 4;
	total = load16be(ip + 2);
	if (ihl < 20 || ihl > avail || total < ihl || total > avail) {
		netstat.ip_badhdr++;
		ip_drop(m, 3);
		return;
	}
	if (in_cksum(ip, ihl) != 0) {
		netstat.ip_badsum++;
		ip_drop(m, 4);
		return;
	}
	m->len = m->l3off - m->off + total;	/* trim Ethernet padding */
	m->tos = ip[1];
	m->ttl = ip[8];
	m->proto = ip[9];
	m->src = load32be(ip + 12);
	m->dst = load32be(ip + 16);
	m->l4off = m->l3off + ihl;
	frag = load16be(ip + 6);
	if (frag & 0x3fff) {
		/* no reassembly: account the fragment and drop it */
		netstat.ip_frag++;
		res_add(((u64)frag << 32) | load16be(ip + 4));
		ip_drop(m, 5);
		return;
	}
	if (ihl > 20) {
		netstat.ip_opts++;
		if (ip_dooptions(m, ip + 20, ihl - 20) < 0) {
			netstat.ip_optdrop++;
			ip_drop(m, 6);
			return;
		}
	}
	if (pf_test(PF_IN, ifp, m) != PF_PASS) {
		ip_drop(m, 7);
		return;
	}
	m->qclass = classify(m);
	flowacct_packet(m, 0);
	if (m->flags & M_LOOP) {
		/* looped-back replies: the client side of the connection */
		ip_deliver(m);
		return;
	}
	if (!if_isours(m->dst)) {
		if (m->flags & (M_LOOP | M_BCAST | M_MCAST)) {
			ip_drop(m, 8);
			return;
		}
		ip_forward(m);
		return;
	}
	ip_deliver(m);
}
