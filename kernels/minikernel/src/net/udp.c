/* net/udp.c - UDP input/output */
#include "net.h"
#include "kern.h"
#include "lib.h"

void udp_input(struct mbuf *m)
{
	const u8 *uh = m->data + m->l4off;
	u32 avail = m_end(m) - m->l4off, ulen;
	struct inpcb *pcb;
	struct svc_req rq;
	svc_fn svc;

	netstat.udp_in++;
	if (avail < 8 || (ulen = load16be(uh + 4)) < 8 || ulen > avail) {
		res_add(0x0dbad1);
		m_free(m);
		return;
	}
	if (load16be(uh + 6) != 0) {
		u64 sum = cksum_pseudo(m->src, m->dst, IPPROTO_UDP, (u16)ulen);

		if (cksum_fold(cksum_add(sum, uh, ulen)) != 0xffff) {
			netstat.udp_badsum++;
			res_add(0x0dbad2);
			m_free(m);
			return;
		}
	}
	m->sport = load16be(uh);
	m->dport = load16be(uh + 2);
	m->payoff = m->l4off + 8;
	if (m->flags & M_LOOP) {
		so_deliver(m, NULL);
		return;
	}
	svc = udp_service(m->dport);
	if (!svc) {
		netstat.udp_noport++;
		icmp_error(m, 3, 3);
		m_free(m);
		return;
	}
	pcb = in_pcblookup(IPPROTO_UDP, m->dst, m->dport, m->src, m->sport);
	if (!pcb)
		pcb = in_pcballoc(IPPROTO_UDP, m->dst, m->dport, m->src, m->sport);
	pcb->rx_pkts++;
	pcb->rx_bytes += ulen - 8;
	rq.pay = uh + 8;
	rq.len = ulen - 8;
	rq.src = m->src;
	rq.sport = m->sport;
	rq.dport = m->dport;
	rq.seq = (u32)pcb->rx_pkts;
	rq.state = pcb->state;
	rq.result = 0;
	rq.reply_len = 0;
	netstat.svc_calls++;
	svc(&rq);
	pcb->acc = mix64(pcb->acc ^ rq.result);
	res_add(rq.result ^ pcb->acc);
	if (rq.reply_len) {
		netstat.svc_replies++;
		udp_output(m->dst, m->src, m->dport, m->sport, rq.reply, rq.reply_len);
	}
	m_free(m);
}

int udp_output(u32 src, u32 dst, u16 sport, u16 dport, const u8 *pay, u32 len)
{
	struct mbuf *m = m_get();
	u8 *uh = mtod(m);
	u64 sum;
	u16 c;

	store16be(uh, sport);
	store16be(uh + 2, dport);
	store16be(uh + 4, (u16)(8 + len));
	store16be(uh + 6, 0);
	memcpy(uh + 8, pay, len);
	sum = cksum_pseudo(src, dst, IPPROTO_UDP, (u16)(8 + len));
	c = (u16)~cksum_fold(cksum_add(sum, uh, 8 + len));
	store16be(uh + 6, c ? c : 0xffff);
	m->len = 8 + len;
	netstat.udp_out++;
	return ip_output(m, src, dst, IPPROTO_UDP, 64, 0);
}

void udp_init(void)
{
}
