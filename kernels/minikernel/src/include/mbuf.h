/* mbuf.h - packet buffers */
#ifndef MBUF_H
#define MBUF_H
#include "types.h"

#define MBUF_DATA	2048
#define MBUF_HEADROOM	128
#define MBUF_POOL	64

#define M_BCAST		0x0001
#define M_MCAST		0x0002
#define M_LOOP		0x0004	/* came in on the loopback */
#define M_VLAN		0x0008
#define M_FWD		0x0010
#define M_REPLY		0x0020
#define M_STATE		0x0040	/* matched a pf state */

struct mbuf {
	u8 data[MBUF_DATA] ALIGN64;
	u32 off;		/* start of frame (layer 2) */
	u32 len;		/* frame length */
	u32 l3off, l4off, payoff;
	u32 flags;
	u32 ifindex;
	u16 ethertype;
	u16 vlan;
	u8 proto, ttl, tos, tcpflags;
	u32 src, dst;
	u16 sport, dport;
	u32 seq, ack;
	u32 qclass;
	u32 index;		/* pool slot */
	struct mbuf *next;	/* queue link */
} ALIGN64;

static inline u8 *mtod(struct mbuf *m) { return m->data + m->off; }
static inline u32 m_end(const struct mbuf *m) { return m->off + m->len; }

void mbuf_init(void);
struct mbuf *m_get(void);
void m_free(struct mbuf *m);
u32 mbuf_inuse(void);
u8 *m_prepend(struct mbuf *m, u32 n);
#endif
