/* boot/platform.c - platform API for the QEMU PVH kernel */
#include "types.h"
#include "platform.h"
#include "boot.h"

#define DEBUG_EXIT_PORT 0xf4

void plat_init(void)
{
	serial_init();
}

void plat_console_write(const char *buf, size_t len)
{
	serial_write(buf, len);
}

u64 plat_rdtsc(void)
{
	u32 lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

NORETURN void plat_exit(int success)
{
	/* isa-debug-exit: QEMU exits with (value << 1) | 1, i.e. 33 or 35 */
	outl(DEBUG_EXIT_PORT, success ? 0x10 : 0x11);
	for (;;)
		__asm__ volatile("cli; hlt");
}

const char *plat_cmdline(void)
{
	return pvh_cmdline();
}

const char *plat_name(void)
{
	return "qemu";
}
