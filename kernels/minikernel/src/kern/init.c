/* kern/init.c - subsystem initialisation through an initcall table */
#include "kern.h"
#include "lib.h"
#include "net.h"
#include "pf.h"

static void pktgen_init_default(void)
{
	pktgen_init(0x4c41594f55544245ull);	/* "LAYOUTBE" */
}

struct initcall {
	const char *name;
	void (*fn)(void);
};

static const struct initcall initcalls[] = {
	{ "lib", lib_init },
	{ "mbuf", mbuf_init },
	{ "ifnet", ifnet_init },
	{ "vnic", vnic_init },
	{ "loopback", loopback_init },
	{ "route", route_init },
	{ "arp", arp_init },
	{ "ether", ether_init },
	{ "ipopt", ipopt_init },
	{ "tcpopt", tcpopt_init },
	{ "in_pcb", in_pcb_init },
	{ "protosw", protosw_init },
	{ "classify", classify_init },
	{ "flowacct", flowacct_init },
	{ "pf", pf_init },
	{ "pktgen", pktgen_init_default },
};

void subsys_init_all(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(initcalls); i++)
		initcalls[i].fn();
}
