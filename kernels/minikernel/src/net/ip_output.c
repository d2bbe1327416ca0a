/* net/ip_output.c - IPv4 output and forwarding */
#include "net.h"
#include "kern.h"
#include "lib.h"

/* m->off points at the transport header, m->len is its length */
int ip_output(struct mbuf *m, u32 src, u32 dst, u8 proto, u8 ttl, u8 tos)
{
	const struct rtentry *rt;
	u8 *ip;
	static u16 out_id = 0x4000;

	m->l4off = m->off;
	ip = m_prepend(m, 20);
	m->l3off = m->off;
	ip[0] = 0x45;
	ip[1] = tos;
	store16be(ip + 2, (u16)m->len);
	store16be(ip + 4, out_id++);
	store16be(ip + 6, 0x4000);
	ip[8] = ttl;
	ip[9] = proto;
	store16be(ip + 10, 0);
	store32be(ip + 12, src);
	store32be(ip + 16, dst);
	store16be(ip + 10, in_cksum(ip, 20));
	m->src = src;
	m->dst = dst;
	m->proto = proto;
	m->ttl = ttl;
	m->tos = tos;
	netstat.ip_out++;

	rt = rt_lookup(dst);
	if (!rt) {
		netstat.ip_noroute++;
		m_free(m);
		return -1;
	}
	if (pf_test(PF_OUT, rt->ifp, m) != PF_PASS) {
		res_add(0x0b10c);
		m_free(m);
		return -1;
	}
	flowacct_packet(m, 1);
	res_add(((u64)proto << 56) | ((u64)m->len << 32) | load16be(ip + 10));
	return ether_output(rt->ifp, m, rt->gateway ? rt->gateway : dst);
}

void ip_forward(struct mbuf *m)
{
	u8 *ip = m->data + m->l3off;
	const struct rtentry *rt;
	u16 old, sum;

	if (m->ttl <= 1) {
		icmp_error(m, 11, 0);
		m_free(m);
		return;
	}
	rt = rt_lookup(m->dst);
	if (!rt) {
		netstat.ip_noroute++;
		icmp_error(m, 3, 0);
		m_free(m);
		return;
	}
	old = load16be(ip + 8);
	ip[8]--;
	sum = cksum_adjust16(load16be(ip + 10), old, load16be(ip + 8));
	store16be(ip + 10, sum);
	m->ttl--;
	netstat.ip_fwd++;
	if (pf_test(PF_OUT, rt->ifp, m) != PF_PASS) {
		m_free(m);
		return;
	}
	/* strip the old link header */
	m->len = m_end(m) - m->l3off;
	m->off = m->l3off;
	m->flags |= M_FWD;
	ether_output(rt->ifp, m, rt->gateway ? rt->gateway : m->dst);
}
