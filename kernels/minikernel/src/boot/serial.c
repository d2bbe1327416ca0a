/* boot/serial.c - 16550 UART on COM1 (0x3f8) */
#include "types.h"
#include "boot.h"

#define COM1 0x3f8

void serial_init(void)
{
	outb(COM1 + 1, 0x00);	/* no interrupts */
	outb(COM1 + 3, 0x80);	/* DLAB */
	outb(COM1 + 0, 0x01);	/* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);	/* 8N1 */
	outb(COM1 + 2, 0xc7);	/* FIFO */
	outb(COM1 + 4, 0x03);	/* DTR, RTS */
}

static void serial_putc(u8 c)
{
	u32 spins = 0;

	while (!(inb(COM1 + 5) & 0x20) && spins < 100000)
		spins++;
	outb(COM1, c);
}

void serial_write(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		serial_putc((u8)buf[i]);
}
