/*
 * dev/vnic.c - a virtual NIC.  Transmit copies the frame into a tx buffer
 * and computes the FCS; the "wire" moves frames from the tx ring of the
 * remote end to our rx ring; rx polling checks the FCS and hands mbufs to
 * if_input.
 */
#include "dev.h"
#include "kern.h"
#include "lib.h"
#include "net.h"

#define VNIC_BUF 2048

struct vnic {
	struct ring tx, rx;
	u8 txbuf[RING_SIZE][VNIC_BUF] ALIGN64;
	u8 rxbuf[RING_SIZE][VNIC_BUF] ALIGN64;
	u64 tx_frames, rx_frames, fcs_errors, runts;
};

static struct vnic vnic0 ALIGN64;

static int vnic_output(struct ifnet *ifp, struct mbuf *m);

struct ifnet vnic0_if = {
	.name = "vnic0",
	.mtu = 1500,
	.lladdr = { 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01 },
	.addr = LOCAL_ADDR,
	.if_input = ether_input,
	.if_output = vnic_output,
};

static int vnic_output(struct ifnet *ifp, struct mbuf *m)
{
	struct ring_desc *d = ring_produce(&vnic0.tx);
	u8 *buf;

	if (!d || m->len > VNIC_BUF || m->len < ETH_HLEN) {
		ifp->odrops++;
		m_free(m);
		return -1;
	}
	buf = vnic0.txbuf[d->buf];
	memcpy(buf, mtod(m), m->len);
	d->len = m->len;
	d->fcs = crc32c(0, buf, m->len);
	d->flags = m->flags & M_VLAN;
	ifp->opackets++;
	ifp->obytes += m->len;
	vnic0.tx_frames++;
	m_free(m);
	return 0;
}

void vnic_wire(void)
{
	struct ring_desc *td, *rd;

	while ((td = ring_consume(&vnic0.tx)) != NULL) {
		rd = ring_produce(&vnic0.rx);
		if (!rd)
			continue;
		memcpy(vnic0.rxbuf[rd->buf], vnic0.txbuf[td->buf], td->len);
		rd->len = td->len;
		rd->fcs = td->fcs;
		rd->flags = td->flags;
	}
}

u32 vnic_rx_poll(u32 budget)
{
	struct ring_desc *d;
	u32 n = 0;

	while (n < budget && (d = ring_consume(&vnic0.rx)) != NULL) {
		const u8 *buf = vnic0.rxbuf[d->buf];
		struct mbuf *m;

		n++;
		if (d->len < ETH_HLEN) {
			vnic0.runts++;
			continue;
		}
		if (crc32c(0, buf, d->len) != d->fcs) {
			vnic0.fcs_errors++;
			res_add(0xfc5);
			continue;
		}
		m = m_get();
		memcpy(mtod(m), buf, d->len);
		m->len = d->len;
		m->ifindex = vnic0_if.index;
		vnic0.rx_frames++;
		vnic0_if.ipackets++;
		vnic0_if.ibytes += d->len;
		vnic0_if.if_input(&vnic0_if, m);
	}
	return n;
}

void vnic_init(void)
{
	ring_init(&vnic0.tx);
	ring_init(&vnic0.rx);
	ifq_init(&vnic0_if.snd, 64);
	if_attach(&vnic0_if);
}
