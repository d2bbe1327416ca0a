/* kern/main.c - kmain: parse the command line, run the benchmark, report */
#include "kern.h"
#include "lib.h"
#include "platform.h"
#include "version.h"
#include "net.h"

extern char __lb_plan_id[];

static struct bench_stats stats;

static void print_metric(const char *name, u64 num, u64 den, u32 digits, const char *unit,
			 const char *better)
{
	char prefix[96], suffix[64];

	ksnprintf(prefix, sizeof(prefix), "LAYOUTBENCH metric name=%s value=", name);
	ksnprintf(suffix, sizeof(suffix), " unit=%s better=%s\n", unit, better);
	kprint_fixed(prefix, num, den, digits, suffix);
}

void kmain(void)
{
	plat_init();
	cmdline_parse(plat_cmdline(), &kconf);

	if (kconf.quiet)
		kprintf("LAYOUTBENCH build kernel=minikernel version=%s platform=%s\n", MK_VERSION,
			plat_name());
	else
		kprintf("LAYOUTBENCH build kernel=minikernel version=%s platform=%s plan=0x%lx hot=0x%lx\n",
			MK_VERSION, plat_name(), (unsigned long)__lb_plan_id,
			(unsigned long)(uintptr_t)&ip_input);

	if (kconf.panic)
		panic("requested by command line");
	if (kconf.hang)
		for (;;)
			__asm__ volatile("pause");

	subsys_init_all();
	bench_run(kconf.iterations, &stats);

	if (!kconf.quiet) {
		print_metric("cycles_per_packet", stats.total_cycles, stats.packets, 2, "cycles", "lower");
		print_metric("packets_per_mcycle", stats.packets * 1000000ull, stats.total_cycles, 3,
			     "pkt/Mcycle", "higher");
		print_metric("gen_cycles_per_packet", stats.gen_cycles, stats.packets, 2, "cycles", "lower");
		print_metric("rx_cycles_per_packet", stats.rx_cycles, stats.packets, 2, "cycles", "lower");
		print_metric("loopback_cycles_per_packet", stats.lo_cycles, stats.packets, 2, "cycles",
			     "lower");
		print_metric("pf_cycles_per_packet", stats.pf_cycles, stats.packets, 2, "cycles", "lower");
		if (kconf.stats)
			netstat_dump();
	}
	kprintf("LAYOUTBENCH check name=checksum value=0x%016llx\n", digest_value());
	kputs("LAYOUTBENCH end status=ok\n");
	plat_exit(PLAT_EXIT_SUCCESS);
}
