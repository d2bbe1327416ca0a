/* net/tcp_output.c - TCP segment construction, RST generation */
#include "net.h"
#include "kern.h"
#include "lib.h"

int tcp_output(u32 src, u32 dst, u16 sport, u16 dport, u32 seq, u32 ack, u8 flags,
	       const struct tcpopt *to, const u8 *pay, u32 len)
{
	struct mbuf *m = m_get();
	u8 *th = mtod(m);
	u32 hl = 20;
	u64 sum;

	if (to && (flags & TH_SYN)) {
		th[hl++] = 2; th[hl++] = 4; store16be(th + hl, to->mss); hl += 2;
		if (to->sackok) {
			th[hl++] = 1; th[hl++] = 1; th[hl++] = 4; th[hl++] = 2;
		}
		if (to->present & (1u << 3)) {
			th[hl++] = 1; th[hl++] = 3; th[hl++] = 3; th[hl++] = 7;
		}
	}
	if (to && (to->present & (1u << 8))) {
		th[hl++] = 1; th[hl++] = 1; th[hl++] = 8; th[hl++] = 10;
		store32be(th + hl, to->tsecr + 1000);
		store32be(th + hl + 4, to->tsval);
		hl += 8;
	}
	store16be(th, sport);
	store16be(th + 2, dport);
	store32be(th + 4, seq);
	store32be(th + 8, ack);
	th[12] = (u8)((hl / 4) << 4);
	th[13] = flags;
	store16be(th + 14, 65535);
	store16be(th + 16, 0);
	store16be(th + 18, 0);
	if (len)
		memcpy(th + hl, pay, len);
	sum = cksum_pseudo(src, dst, IPPROTO_TCP, (u16)(hl + len));
	store16be(th + 16, (u16)~cksum_fold(cksum_add(sum, th, hl + len)));
	m->len = hl + len;
	netstat.tcp_out++;
	return ip_output(m, src, dst, IPPROTO_TCP, 64, 0);
}

void tcp_respond_rst(struct mbuf *m)
{
	u32 plen = m_end(m) - m->payoff;
	u32 seq, ack;
	u8 flags;

	if (m->tcpflags & TH_RST)
		return;
	if (m->tcpflags & TH_ACK) {
		seq = m->ack;
		ack = 0;
		flags = TH_RST;
	} else {
		seq = 0;
		ack = m->seq + plen + ((m->tcpflags & (TH_SYN | TH_FIN)) ? 1 : 0);
		flags = TH_RST | TH_ACK;
	}
	netstat.tcp_rst_out++;
	tcp_output(m->dst, m->src, m->dport, m->sport, seq, ack, flags, NULL, NULL, 0);
}
