/* net.h - the network stack */
#ifndef NET_H
#define NET_H
#include "types.h"
#include "mbuf.h"
#include "dev.h"

#define ETH_HLEN	14
#define ETHERTYPE_IP	0x0800
#define ETHERTYPE_ARP	0x0806
#define ETHERTYPE_VLAN	0x8100
#define ETHERTYPE_IPV6	0x86dd
#define ETHERTYPE_LLDP	0x88cc

#define IPPROTO_ICMP	1
#define IPPROTO_TCP	6
#define IPPROTO_UDP	17
#define IPPROTO_GRE	47
#define IPPROTO_OSPF	89

#define TH_FIN	0x01
#define TH_SYN	0x02
#define TH_RST	0x04
#define TH_PUSH	0x08
#define TH_ACK	0x10
#define TH_URG	0x20

#define TCP_SVC_BASE	1000
#define TCP_NSVC	128
#define UDP_SVC_BASE	2000
#define UDP_NSVC	64

struct netstat {
	u64 eth_in, eth_drop, eth_vlan, eth_unknown;
	u64 arp_in, arp_reply, arp_miss;
	u64 ip_in, ip_drop, ip_badsum, ip_badhdr, ip_opts, ip_optdrop, ip_frag, ip_fwd, ip_out, ip_noroute;
	u64 pf_pass, pf_block, pf_state_hit, pf_state_new, pf_state_full, pf_rules_eval;
	u64 tcp_in, tcp_badsum, tcp_rst_out, tcp_syn, tcp_data, tcp_fin, tcp_out, tcp_opts;
	u64 udp_in, udp_badsum, udp_noport, udp_out;
	u64 icmp_in, icmp_out, icmp_err;
	u64 raw_in, svc_calls, svc_replies, so_deliver;
};
extern struct netstat netstat;
void netstat_dump(void);

/* ether.c */
void ether_input(struct ifnet *ifp, struct mbuf *m);
int ether_output(struct ifnet *ifp, struct mbuf *m, u32 nexthop);
void ether_init(void);

/* arp.c */
void arp_input(struct ifnet *ifp, struct mbuf *m);
bool arp_resolve(u32 addr, u8 mac[6]);
void arp_init(void);

/* route.c */
struct rtentry {
	u32 dst, mask, gateway;
	struct ifnet *ifp;
	u64 use;
};
const struct rtentry *rt_lookup(u32 dst);
void route_init(void);

/* ip_input.c / ip_output.c / ip_options.c */
void ip_input(struct ifnet *ifp, struct mbuf *m);
int ip_output(struct mbuf *m, u32 src, u32 dst, u8 proto, u8 ttl, u8 tos);
void ip_forward(struct mbuf *m);
int ip_dooptions(struct mbuf *m, const u8 *opts, u32 len);
void ipopt_init(void);
#define IPOPT_NKINDS 48
u8 ipopt_kind_type(u32 k);
u32 ipopt_kind_len(u32 k);

/* protosw.c */
struct protosw {
	u8 pr_protocol;
	const char *pr_name;
	void (*pr_input)(struct mbuf *m);
	void (*pr_init)(void);
	u64 pr_count;
};
void protosw_init(void);
void ip_deliver(struct mbuf *m);
void rip_input(struct mbuf *m);

/* icmp.c */
void icmp_input(struct mbuf *m);
void icmp_error(struct mbuf *m, u8 type, u8 code);
void icmp_init(void);

/* udp.c */
void udp_input(struct mbuf *m);
int udp_output(u32 src, u32 dst, u16 sport, u16 dport, const u8 *pay, u32 len);
void udp_init(void);

/* tcp */
struct tcpopt {
	u32 present;		/* bitmask of kinds seen (kind & 31) */
	u16 mss;
	u8 wscale;
	u8 sackok;
	u32 tsval, tsecr;
	u32 nsack;
	u64 acc;
};
void tcp_input(struct mbuf *m);
int tcp_dooptions(struct tcpopt *to, const u8 *p, u32 len, u8 flags);
int tcp_output(u32 src, u32 dst, u16 sport, u16 dport, u32 seq, u32 ack, u8 flags,
	       const struct tcpopt *to, const u8 *pay, u32 len);
void tcp_respond_rst(struct mbuf *m);
void tcpopt_init(void);
#define TCPOPT_NEXP 24
u8 tcpopt_exp_kind(u32 k);
u32 tcpopt_exp_len(u32 k);
void tcp_init(void);

/* in_pcb.c */
struct inpcb {
	u32 laddr, faddr;
	u16 lport, fport;
	u8 proto, state;
	u8 used, pad;
	u32 snd_nxt, rcv_nxt;
	u32 last;
	u64 rx_bytes, rx_pkts;
	u64 acc;
	s32 next;
};
#define PCBS_TCPS_LISTEN 0
#define PCBS_SYN_RCVD	1
#define PCBS_ESTAB	2
#define PCBS_CLOSING	3
struct inpcb *in_pcblookup(u8 proto, u32 laddr, u16 lport, u32 faddr, u16 fport);
struct inpcb *in_pcballoc(u8 proto, u32 laddr, u16 lport, u32 faddr, u16 fport);
void in_pcbfree(struct inpcb *pcb);
void in_pcb_init(void);
void so_deliver(struct mbuf *m, struct inpcb *pcb);

/* services: svc_tcp_a.c, svc_tcp_b.c, svc_udp.c */
struct svc_req {
	const u8 *pay;
	u32 len;
	u32 src;
	u16 sport, dport;
	u32 seq;
	u32 state;
	u64 result;
	u32 reply_len;
	u8 reply[32];
};
typedef void (*svc_fn)(struct svc_req *rq);
extern const svc_fn svc_tcp_a_table[64];
extern const svc_fn svc_tcp_b_table[64];
extern const svc_fn svc_udp_table[UDP_NSVC];
svc_fn tcp_service(u16 port);
svc_fn udp_service(u16 port);

/* classify.c */
u32 classify(struct mbuf *m);
void classify_init(void);

/* flowacct.c */
void flowacct_packet(const struct mbuf *m, u32 dir);
void flowacct_init(void);

/* pf */
#define PF_IN	0
#define PF_OUT	1
#define PF_PASS	0
#define PF_DROP	1
int pf_test(int dir, struct ifnet *ifp, struct mbuf *m);
void pf_init(void);
void pf_expire(u64 now);
void pf_tick(void);

/* pktgen.c */
struct mbuf *pktgen_next(void);
void pktgen_init(u64 seed);

#endif
