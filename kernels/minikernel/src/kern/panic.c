/* kern/panic.c */
#include "kern.h"
#include "lib.h"
#include "platform.h"

static int panicking;

NORETURN void panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (panicking++)
		plat_exit(PLAT_EXIT_FAILURE);
	va_start(ap, fmt);
	kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("PANIC: %s\n", buf);
	kputs("LAYOUTBENCH end status=panic\n");
	plat_exit(PLAT_EXIT_FAILURE);
}
