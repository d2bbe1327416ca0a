/* net/tcp_input.c - TCP input: checksum, options, connection handling, services */
#include "net.h"
#include "kern.h"
#include "lib.h"

static void tcp_drop(struct mbuf *m, u32 why)
{
	res_add(0x7c9d00 + why);
	m_free(m);
}

static void tcp_call_service(struct mbuf *m, struct inpcb *pcb, svc_fn svc, const struct tcpopt *to)
{
	struct svc_req rq;
	u32 plen = m_end(m) - m->payoff;

	rq.pay = m->data + m->payoff;
	rq.len = plen;
	rq.src = m->src;
	rq.sport = m->sport;
	rq.dport = m->dport;
	rq.seq = m->seq;
	rq.state = pcb->state;
	rq.result = to->acc;
	rq.reply_len = 0;
	netstat.svc_calls++;
	svc(&rq);
	pcb->acc = mix64(pcb->acc + rq.result);
	pcb->rcv_nxt = m->seq + plen;
	res_add(rq.result ^ ((u64)pcb->rcv_nxt << 32));
	if (rq.reply_len) {
		netstat.svc_replies++;
		tcp_output(m->dst, m->src, m->dport, m->sport, pcb->snd_nxt, pcb->rcv_nxt,
			   TH_ACK | TH_PUSH, to, rq.reply, rq.reply_len);
		pcb->snd_nxt += rq.reply_len;
	} else if (plen && (pcb->rx_pkts & 1)) {
		tcp_output(m->dst, m->src, m->dport, m->sport, pcb->snd_nxt, pcb->rcv_nxt, TH_ACK, to,
			   NULL, 0);
	}
}

void tcp_input(struct mbuf *m)
{
	const u8 *th = m->data + m->l4off;
	u32 tlen = m_end(m) - m->l4off, off;
	struct tcpopt to;
	struct inpcb *pcb;
	svc_fn svc;
	u8 flags;
	u64 sum;

	netstat.tcp_in++;
	if (tlen < 20) {
		tcp_drop(m, 1);
		return;
	}
	sum = cksum_pseudo(m->src, m->dst, IPPROTO_TCP, (u16)tlen);
	if (cksum_fold(cksum_add(sum, th, tlen)) != 0xffff) {
		netstat.tcp_badsum++;
		tcp_drop(m, 2);
		return;
	}
	off = (u32)(th[12] >> 4) * 4;
	if (off < 20 || off > tlen) {
		tcp_drop(m, 3);
		return;
	}
	m->sport = load16be(th);
	m->dport = load16be(th + 2);
	m->seq = load32be(th + 4);
	m->ack = load32be(th + 8);
	flags = th[13];
	m->tcpflags = flags;
	m->payoff = m->l4off + off;
	memset(&to, 0, sizeof(to));
	if (off > 20) {
		netstat.tcp_opts++;
		if (tcp_dooptions(&to, th + 20, off - 20, flags) < 0) {
			tcp_drop(m, 4);
			return;
		}
	}
	if (m->flags & M_LOOP) {
		so_deliver(m, NULL);
		return;
	}
	svc = tcp_service(m->dport);
	pcb = in_pcblookup(IPPROTO_TCP, m->dst, m->dport, m->src, m->sport);
	if (flags & TH_RST) {
		if (pcb)
			in_pcbfree(pcb);
		tcp_drop(m, 5);
		return;
	}
	if (!svc) {
		tcp_respond_rst(m);
		tcp_drop(m, 6);
		return;
	}
	if (flags & TH_SYN) {
		netstat.tcp_syn++;
		if (!pcb)
			pcb = in_pcballoc(IPPROTO_TCP, m->dst, m->dport, m->src, m->sport);
		pcb->state = PCBS_SYN_RCVD;
		pcb->rcv_nxt = m->seq + 1;
		pcb->snd_nxt = mix32(m->seq ^ m->src) ;
		pcb->acc = to.acc;
		to.mss = 1460;
		tcp_output(m->dst, m->src, m->dport, m->sport, pcb->snd_nxt, pcb->rcv_nxt, TH_SYN | TH_ACK,
			   &to, NULL, 0);
		pcb->snd_nxt++;
		m_free(m);
		return;
	}
	if (!pcb) {
		tcp_respond_rst(m);
		tcp_drop(m, 7);
		return;
	}
	pcb->rx_pkts++;
	pcb->rx_bytes += m_end(m) - m->payoff;
	if (pcb->state == PCBS_SYN_RCVD && (flags & TH_ACK))
		pcb->state = PCBS_ESTAB;
	if (m_end(m) > m->payoff) {
		netstat.tcp_data++;
		tcp_call_service(m, pcb, svc, &to);
	}
	if (flags & TH_FIN) {
		netstat.tcp_fin++;
		tcp_output(m->dst, m->src, m->dport, m->sport, pcb->snd_nxt, m->seq + 1, TH_FIN | TH_ACK, &to,
			   NULL, 0);
		res_add(pcb->acc ^ pcb->rx_bytes);
		in_pcbfree(pcb);
	}
	m_free(m);
}

void tcp_init(void)
{
}
