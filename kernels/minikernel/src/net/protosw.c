/* net/protosw.c - protocol switch: IP protocol number -> handler */
#include "net.h"
#include "kern.h"
#include "lib.h"

static struct protosw inetsw[] = {
	{ 0, "raw", rip_input, NULL, 0 },
	{ IPPROTO_ICMP, "icmp", icmp_input, icmp_init, 0 },
	{ IPPROTO_TCP, "tcp", tcp_input, tcp_init, 0 },
	{ IPPROTO_UDP, "udp", udp_input, udp_init, 0 },
};

static u8 ip_protox[256];

void protosw_init(void)
{
	memset(ip_protox, 0, sizeof(ip_protox));
	for (u32 i = 0; i < ARRAY_SIZE(inetsw); i++) {
		if (inetsw[i].pr_protocol)
			ip_protox[inetsw[i].pr_protocol] = (u8)i;
		if (inetsw[i].pr_init)
			inetsw[i].pr_init();
		inetsw[i].pr_count = 0;
	}
}

void ip_deliver(struct mbuf *m)
{
	struct protosw *pr = &inetsw[ip_protox[m->proto]];

	pr->pr_count++;
	pr->pr_input(m);
}

/* raw IP: protocols without a handler */
void rip_input(struct mbuf *m)
{
	const u8 *p = m->data + m->l4off;
	u32 len = m_end(m) - m->l4off;

	netstat.raw_in++;
	res_add(hash_bytes64(p, len, m->proto) ^ ((u64)m->proto << 56));
	if (m->proto != IPPROTO_GRE && m->proto != IPPROTO_OSPF)
		icmp_error(m, 3, 2);	/* protocol unreachable */
	m_free(m);
}
