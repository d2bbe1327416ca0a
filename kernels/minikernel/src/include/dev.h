/* dev.h - network interfaces, queues, rings, virtual devices */
#ifndef DEV_H
#define DEV_H
#include "types.h"
#include "mbuf.h"

struct ifqueue {
	struct mbuf *head, *tail;
	u32 len, maxlen;
	u64 drops, enq, deq;
};

struct ifnet {
	const char *name;
	u32 index;
	u32 mtu;
	u8 lladdr[6];
	u32 addr;			/* IPv4 address, host order */
	void (*if_input)(struct ifnet *ifp, struct mbuf *m);
	int (*if_output)(struct ifnet *ifp, struct mbuf *m);
	struct ifqueue snd;
	u64 ipackets, opackets, ibytes, obytes, idrops, odrops;
};

/* ifnet.c */
void ifq_init(struct ifqueue *q, u32 maxlen);
int ifq_enqueue(struct ifqueue *q, struct mbuf *m);
struct mbuf *ifq_dequeue(struct ifqueue *q);
void if_attach(struct ifnet *ifp);
struct ifnet *if_byindex(u32 index);
void ifnet_init(void);
bool if_isours(u32 addr);

/* ring.c: descriptor rings */
#define RING_SIZE 64
struct ring_desc {
	u32 len;
	u32 fcs;
	u32 flags;
	u32 buf;
};
struct ring {
	u32 prod, cons;
	u64 full, posted;
	struct ring_desc desc[RING_SIZE];
};
void ring_init(struct ring *r);
bool ring_full(const struct ring *r);
bool ring_empty(const struct ring *r);
struct ring_desc *ring_produce(struct ring *r);
struct ring_desc *ring_consume(struct ring *r);
u32 ring_count(const struct ring *r);

/* vnic.c: virtual NIC with tx and rx rings and a loop "wire" */
#define LOCAL_ADDR	0x0a000001u	/* 10.0.0.1 */
extern struct ifnet vnic0_if;
void vnic_init(void);
void vnic_wire(void);
u32 vnic_rx_poll(u32 budget);

/* loopback.c */
extern struct ifnet lo0_if;
extern struct ifnet null0_if;
void loopback_init(void);
u32 loopback_drain(u32 budget);
#endif
