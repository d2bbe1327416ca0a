/* hosted/hosted.h - raw Linux system calls */
#ifndef HOSTED_H
#define HOSTED_H
#include "types.h"

long sys_write(int fd, const void *buf, size_t len);
NORETURN void sys_exit_group(int code);
#endif
