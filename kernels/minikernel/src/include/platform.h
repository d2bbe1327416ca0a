/*
 * platform.h - the platform API.  Implemented once by boot/ (QEMU PVH kernel)
 * and once by hosted/ (static Linux executable).  Everything else is common.
 */
#ifndef PLATFORM_H
#define PLATFORM_H
#include "types.h"

#define PLAT_EXIT_SUCCESS 1
#define PLAT_EXIT_FAILURE 0

void plat_init(void);                                /* console setup etc. */
void plat_console_write(const char *buf, size_t len);
u64 plat_rdtsc(void);
NORETURN void plat_exit(int success);                /* PLAT_EXIT_* */
const char *plat_cmdline(void);                      /* never NULL */
const char *plat_name(void);                         /* "qemu" or "hosted" */

void kmain(void);                                    /* common entry */

/*
 * The markers of layoutbench's cache model (native/qemu-icache): 8-byte NOPs with
 * a magic displacement that the QEMU plugin counts between; nothing on a CPU.
 */
static inline void plat_mark_begin(void)
{
	__asm__ volatile("nopl 0x4c42b001(%%rax,%%rax,1)" ::: "memory");
}

static inline void plat_mark_end(void)
{
	__asm__ volatile("nopl 0x4c42b002(%%rax,%%rax,1)" ::: "memory");
}
#endif
