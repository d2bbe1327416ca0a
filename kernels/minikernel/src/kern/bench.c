/* kern/bench.c - the benchmark loop: N packets through the stack */
#include "kern.h"
#include "platform.h"
#include "net.h"

void bench_run(u64 n, struct bench_stats *st)
{
	u64 gen = 0, rx = 0, lo = 0;
	u64 t0 = plat_rdtsc();

	plat_mark_begin();
	for (u64 i = 0; i < n; i++) {
		struct mbuf *m;
		u64 a, b, c, d;

		a = plat_rdtsc();
		res_begin(i);
		m = pktgen_next();
		vnic0_if.if_output(&vnic0_if, m);	/* the remote host transmits */
		vnic_wire();
		b = plat_rdtsc();
		vnic_rx_poll(16);
		c = plat_rdtsc();
		loopback_drain(64);
		d = plat_rdtsc();
		pf_tick();
		res_commit();
		gen += b - a;
		rx += c - b;
		lo += d - c;
	}
	plat_mark_end();
	st->total_cycles = plat_rdtsc() - t0;
	st->packets = n;
	st->gen_cycles = gen;
	st->rx_cycles = rx;
	st->lo_cycles = lo;
	st->pf_cycles = pf_cycles_total();
	if (mbuf_inuse() != 0)
		panic("mbuf leak: %u in use", mbuf_inuse());
}
