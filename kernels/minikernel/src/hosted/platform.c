/* hosted/platform.c - platform API for the hosted Linux executable */
#include "types.h"
#include "platform.h"
#include "hosted.h"

static char cmdline_buf[1024];

void hosted_entry(long argc, char **argv);

void hosted_entry(long argc, char **argv)
{
	size_t pos = 0;

	for (long i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (pos && pos < sizeof(cmdline_buf) - 1)
			cmdline_buf[pos++] = ' ';
		while (*a && pos < sizeof(cmdline_buf) - 1)
			cmdline_buf[pos++] = *a++;
	}
	cmdline_buf[pos] = 0;
	kmain();
	plat_exit(PLAT_EXIT_FAILURE);
}

void plat_init(void)
{
}

void plat_console_write(const char *buf, size_t len)
{
	while (len) {
		long n = sys_write(1, buf, len);

		if (n <= 0)
			break;
		buf += n;
		len -= (size_t)n;
	}
}

u64 plat_rdtsc(void)
{
	u32 lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

NORETURN void plat_exit(int success)
{
	sys_exit_group(success ? 0 : 3);
}

const char *plat_cmdline(void)
{
	return cmdline_buf;
}

const char *plat_name(void)
{
	return "hosted";
}
