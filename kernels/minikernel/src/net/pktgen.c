/*
 * net/pktgen.c - the "remote hosts": builds Ethernet frames from a seeded
 * PRNG.  1024 flows with per-flow TCP state, a mix of TCP/UDP/ICMP/ARP/raw
 * IP/IPv6 frames, IP and TCP options, VLAN tags, fragments and some
 * corrupted packets.
 */
#include "net.h"
#include "kern.h"
#include "lib.h"

#define NFLOWS 1024

struct flow {
	u32 addr;
	u16 port;
	u8 tcp_svc;
	u8 udp_svc;
	u32 seq;
	u32 ack;
	u8 state;
	u8 vlan;
	u16 pad;
};

static struct flow flows[NFLOWS];
static struct prng rng;
static u16 ip_id;
static u64 generated;

static const u8 bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void pktgen_init(u64 seed)
{
	prng_seed(&rng, seed);
	for (u32 f = 0; f < NFLOWS; f++) {
		flows[f].addr = 0x0a010000u + f * 5 + 2;
		flows[f].port = (u16)(20000 + (f * 7919u) % 40000);
		flows[f].tcp_svc = (u8)((f * 37u) % TCP_NSVC);
		flows[f].udp_svc = (u8)((f * 11u) % UDP_NSVC);
		flows[f].seq = mix32(f) ;
		flows[f].ack = 0;
		flows[f].state = 0;
		flows[f].vlan = (f % 13) == 0;
	}
	ip_id = 1;
	generated = 0;
}

static void client_mac(u8 mac[6], u32 addr)
{
	mac[0] = 0x02;
	mac[1] = 0x00;
	store32be(mac + 2, addr);
}

static u32 put_eth(u8 *fr, const u8 *dst, u32 src_addr, u16 type, bool vlan, u16 vid)
{
	u8 smac[6];

	client_mac(smac, src_addr);
	memcpy(fr, dst, 6);
	memcpy(fr + 6, smac, 6);
	if (vlan) {
		store16be(fr + 12, ETHERTYPE_VLAN);
		store16be(fr + 14, vid);
		store16be(fr + 16, type);
		return 18;
	}
	store16be(fr + 12, type);
	return ETH_HLEN;
}

/* IPv4 options: 1-4 options of the generated kinds, padded to 4 bytes */
static u32 put_ipopts(u8 *p)
{
	u32 n = 0, want = 1 + prng_range(&rng, 4);

	for (u32 i = 0; i < want; i++) {
		u32 k = prng_range(&rng, IPOPT_NKINDS);
		u32 l = ipopt_kind_len(k);

		if (n + l > 36)
			break;
		if (prng_chance(&rng, 8)) {
			p[n++] = 1;	/* NOP */
			continue;
		}
		p[n] = ipopt_kind_type(k);
		p[n + 1] = (u8)l;
		prng_fill(&rng, p + n + 2, l - 2);
		if (prng_chance(&rng, 1))
			p[n + 1] = (u8)(l + 2);	/* bad length */
		n += l;
	}
	while (n & 3)
		p[n++] = 0;	/* EOL padding */
	return n;
}

static u32 put_ip(u8 *ip, u32 src, u32 dst, u8 proto, bool opts)
{
	u32 ihl = 20;

	if (opts)
		ihl += put_ipopts(ip + 20);
	ip[0] = (u8)(0x40 | (ihl / 4));
	ip[1] = (u8)(prng_range(&rng, 8) << 5);
	store16be(ip + 4, ip_id++);
	store16be(ip + 6, prng_chance(&rng, 1) ? 0x2000 | (u16)prng_range(&rng, 64) : 0x4000);
	ip[8] = (u8)(prng_chance(&rng, 3) ? 1 : 2 + prng_range(&rng, 62));
	ip[9] = proto;
	store32be(ip + 12, src);
	store32be(ip + 16, dst);
	return ihl;
}

static void finish_ip(u8 *ip, u32 ihl, u32 total)
{
	store16be(ip + 2, (u16)total);
	store16be(ip + 10, 0);
	store16be(ip + 10, in_cksum(ip, ihl));
}

static void put_payload(u8 *p, u32 len)
{
	prng_fill(&rng, p, len);
	if (len >= 8) {
		p[0] &= 0x0f;			/* op */
		store16be(p + 2, (u16)len);
	}
}

static u32 pick_dst(void)
{
	if (prng_chance(&rng, 92))
		return LOCAL_ADDR;
	return 0x0a020000u + prng_range(&rng, 4096);
}

static u32 put_tcpopts(u8 *p, u8 flags)
{
	u32 n = 0;

	if (flags & TH_SYN) {
		p[n++] = 2; p[n++] = 4; store16be(p + n, (u16)(536 + prng_range(&rng, 1000))); n += 2;
		p[n++] = 4; p[n++] = 2;					/* SACK permitted */
		p[n++] = 8; p[n++] = 10; store32be(p + n, prng_u32(&rng)); store32be(p + n + 4, 0); n += 8;
		p[n++] = 1;
		p[n++] = 3; p[n++] = 3; p[n++] = (u8)prng_range(&rng, 15);	/* window scale */
	} else if (prng_chance(&rng, 60)) {
		p[n++] = 1; p[n++] = 1;
		p[n++] = 8; p[n++] = 10; store32be(p + n, prng_u32(&rng)); store32be(p + n + 4, prng_u32(&rng)); n += 8;
		if (prng_chance(&rng, 15)) {
			p[n++] = 1; p[n++] = 1;
			p[n++] = 5; p[n++] = 10; prng_fill(&rng, p + n, 8); n += 8;	/* one SACK block */
		}
	}
	if (prng_chance(&rng, 35)) {
		u32 cnt = 1 + prng_range(&rng, 3);

		for (u32 i = 0; i < cnt; i++) {
			u32 k = prng_range(&rng, TCPOPT_NEXP);
			u32 l = tcpopt_exp_len(k);

			if (n + l > 40)
				break;
			p[n] = tcpopt_exp_kind(k);
			p[n + 1] = (u8)l;
			prng_fill(&rng, p + n + 2, l - 2);
			n += l;
		}
	}
	while (n & 3)
		p[n++] = 0;
	return n;
}

static u32 build_tcp(u8 *fr, struct flow *fl, u32 f)
{
	u32 eh, ihl, thl, plen = 0, dst = pick_dst();
	u8 *ip, *th, flags;
	u16 dport;
	u64 sum;

	eh = put_eth(fr, vnic0_if.lladdr, fl->addr, ETHERTYPE_IP, fl->vlan, (u16)(10 + (f & 1) * 10));
	ip = fr + eh;
	ihl = put_ip(ip, fl->addr, dst, IPPROTO_TCP, prng_chance(&rng, 25));
	th = ip + ihl;
	if (fl->state == 0) {
		flags = TH_SYN;
		fl->state = 1;
		fl->seq = prng_u32(&rng);
	} else if (prng_chance(&rng, 2)) {
		flags = TH_RST | TH_ACK;
		fl->state = 0;
	} else if (fl->state == 2 && prng_chance(&rng, 6)) {
		flags = TH_FIN | TH_ACK;
		fl->state = 0;
	} else {
		flags = TH_ACK;
		if (fl->state == 1)
			fl->state = 2;
		else if (prng_chance(&rng, 80))
			flags |= TH_PUSH;
		if (!prng_chance(&rng, 20))
			plen = 16 + prng_range(&rng, 480);
	}
	dport = prng_chance(&rng, 95) ? (u16)(TCP_SVC_BASE + fl->tcp_svc) : (u16)(3000 + prng_range(&rng, 2000));
	store16be(th, fl->port);
	store16be(th + 2, dport);
	store32be(th + 4, fl->seq);
	store32be(th + 8, flags & TH_ACK ? fl->ack + 1 : 0);
	thl = 20 + put_tcpopts(th + 20, flags);
	th[12] = (u8)((thl / 4) << 4);
	th[13] = flags;
	store16be(th + 14, (u16)(8192 + prng_range(&rng, 50000)));
	store16be(th + 16, 0);
	store16be(th + 18, flags & TH_URG ? 1 : 0);
	put_payload(th + thl, plen);
	fl->seq += plen + ((flags & (TH_SYN | TH_FIN)) ? 1 : 0);
	fl->ack += 1 + plen / 2;
	finish_ip(ip, ihl, ihl + thl + plen);
	sum = cksum_pseudo(fl->addr, dst, IPPROTO_TCP, (u16)(thl + plen));
	store16be(th + 16, (u16)~cksum_fold(cksum_add(sum, th, thl + plen)));
	return eh + ihl + thl + plen;
}

static u32 build_udp(u8 *fr, struct flow *fl, u32 f)
{
	u32 eh, ihl, plen = 8 + prng_range(&rng, 400), dst = pick_dst();
	u8 *ip, *uh;
	u16 dport;
	u64 sum;

	eh = put_eth(fr, vnic0_if.lladdr, fl->addr, ETHERTYPE_IP, fl->vlan, (u16)(10 + (f & 1) * 10));
	ip = fr + eh;
	ihl = put_ip(ip, fl->addr, dst, IPPROTO_UDP, prng_chance(&rng, 15));
	uh = ip + ihl;
	dport = prng_chance(&rng, 92) ? (u16)(UDP_SVC_BASE + fl->udp_svc) : (u16)(3000 + prng_range(&rng, 3000));
	store16be(uh, (u16)(fl->port + 1));
	store16be(uh + 2, dport);
	store16be(uh + 4, (u16)(8 + plen));
	store16be(uh + 6, 0);
	put_payload(uh + 8, plen);
	finish_ip(ip, ihl, ihl + 8 + plen);
	if (!prng_chance(&rng, 10)) {
		u16 c;

		sum = cksum_pseudo(fl->addr, dst, IPPROTO_UDP, (u16)(8 + plen));
		c = (u16)~cksum_fold(cksum_add(sum, uh, 8 + plen));
		store16be(uh + 6, c ? c : 0xffff);
	}
	return eh + ihl + 8 + plen;
}

static u32 build_icmp(u8 *fr, struct flow *fl)
{
	u32 eh, ihl, plen, dst = pick_dst();
	u8 *ip, *ic, type;

	eh = put_eth(fr, vnic0_if.lladdr, fl->addr, ETHERTYPE_IP, false, 0);
	ip = fr + eh;
	ihl = put_ip(ip, fl->addr, dst, IPPROTO_ICMP, prng_chance(&rng, 10));
	ic = ip + ihl;
	type = prng_chance(&rng, 50) ? 8 : (u8)prng_range(&rng, 40);
	ic[0] = type;
	ic[1] = (u8)prng_range(&rng, 6);
	store16be(ic + 2, 0);
	store32be(ic + 4, prng_u32(&rng));
	if (type == 3 || type == 11 || type == 12 || type == 5) {
		/* quote an IP header plus 8 bytes */
		u8 *q = ic + 8;

		memset(q, 0, 28);
		q[0] = 0x45;
		store16be(q + 2, 60);
		q[8] = 17;
		q[9] = (u8)(prng_chance(&rng, 50) ? IPPROTO_UDP : IPPROTO_TCP);
		store32be(q + 12, LOCAL_ADDR);
		store32be(q + 16, fl->addr);
		store16be(q + 10, in_cksum(q, 20));
		prng_fill(&rng, q + 20, 8);
		plen = 28;
	} else {
		plen = 16 + prng_range(&rng, 80);
		prng_fill(&rng, ic + 8, plen);
	}
	store16be(ic + 2, in_cksum(ic, 8 + plen));
	finish_ip(ip, ihl, ihl + 8 + plen);
	return eh + ihl + 8 + plen;
}

static u32 build_arp(u8 *fr, struct flow *fl)
{
	u32 eh = put_eth(fr, bcast_mac, fl->addr, ETHERTYPE_ARP, false, 0);
	u8 *a = fr + eh;

	store16be(a, 1);
	store16be(a + 2, ETHERTYPE_IP);
	a[4] = 6;
	a[5] = 4;
	store16be(a + 6, prng_chance(&rng, 85) ? 1 : 2);
	client_mac(a + 8, fl->addr);
	store32be(a + 14, fl->addr);
	memset(a + 18, 0, 6);
	store32be(a + 24, prng_chance(&rng, 80) ? LOCAL_ADDR : 0x0a000000u + prng_range(&rng, 256));
	memset(a + 28, 0, 18);
	return eh + 46;
}

static u32 build_raw(u8 *fr, struct flow *fl)
{
	static const u8 protos[] = { IPPROTO_GRE, IPPROTO_OSPF, 99, 132 };
	u32 eh, ihl, plen = 24 + prng_range(&rng, 100);
	u8 *ip;

	eh = put_eth(fr, vnic0_if.lladdr, fl->addr, ETHERTYPE_IP, false, 0);
	ip = fr + eh;
	ihl = put_ip(ip, fl->addr, LOCAL_ADDR, protos[prng_range(&rng, 4)], false);
	prng_fill(&rng, ip + ihl, plen);
	finish_ip(ip, ihl, ihl + plen);
	return eh + ihl + plen;
}

static u32 build_other(u8 *fr, struct flow *fl)
{
	u32 eh, plen = 46 + prng_range(&rng, 64);
	u8 mac[6];

	if (prng_chance(&rng, 30)) {
		/* unicast to someone else: dropped by the MAC filter */
		client_mac(mac, 0x0a0a0a0au + prng_range(&rng, 100));
		eh = put_eth(fr, mac, fl->addr, ETHERTYPE_IP, false, 0);
	} else {
		eh = put_eth(fr, vnic0_if.lladdr, fl->addr,
			     prng_chance(&rng, 50) ? ETHERTYPE_IPV6 : ETHERTYPE_LLDP, false, 0);
	}
	prng_fill(&rng, fr + eh, plen);
	return eh + plen;
}

struct mbuf *pktgen_next(void)
{
	struct mbuf *m = m_get();
	u8 *fr = mtod(m);
	u32 r = prng_range(&rng, 1000);
	u32 f = prng_range(&rng, NFLOWS);
	struct flow *fl = &flows[f];
	u32 len;

	if (r < 600)
		len = build_tcp(fr, fl, f);
	else if (r < 840)
		len = build_udp(fr, fl, f);
	else if (r < 930)
		len = build_icmp(fr, fl);
	else if (r < 960)
		len = build_arp(fr, fl);
	else if (r < 980)
		len = build_raw(fr, fl);
	else
		len = build_other(fr, fl);
	if (len < 60) {
		memset(fr + len, 0, 60 - len);
		len = 60;
	}
	if (prng_chance(&rng, 2)) {
		/* corrupt one byte somewhere after the Ethernet header */
		u32 pos = ETH_HLEN + prng_range(&rng, len - ETH_HLEN);

		fr[pos] ^= (u8)(1 + prng_range(&rng, 255));
	}
	m->len = len;
	generated++;
	return m;
}
