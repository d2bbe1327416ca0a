/* boot/boot.h - QEMU platform internals */
#ifndef BOOT_H
#define BOOT_H
#include "types.h"

static inline void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }
static inline u8 inb(u16 port)
{
	u8 v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

void serial_init(void);
void serial_write(const char *buf, size_t len);
const char *pvh_cmdline(void);
extern u64 pvh_start_info_paddr;
#endif
