/* hosted/syscall.c - raw x86-64 Linux system calls, no libc */
#include "types.h"
#include "hosted.h"

#define SYS_write	1
#define SYS_exit_group	231

long sys_write(int fd, const void *buf, size_t len)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_write), "D"((long)fd), "S"(buf), "d"(len)
			 : "rcx", "r11", "memory");
	return ret;
}

NORETURN void sys_exit_group(int code)
{
	for (;;)
		__asm__ volatile("syscall"
				 :
				 : "a"((long)SYS_exit_group), "D"((long)code)
				 : "rcx", "r11", "memory");
}
