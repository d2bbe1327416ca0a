/*
 * layoutbench: /init for the Linux guest (initramfs), no libc needed.
 *
 * Build (x86-64, static, freestanding; nolibc from the kernel tree):
 *   clang-19 -Os -static -nostdlib -ffreestanding -fno-stack-protector -fno-asynchronous-unwind-tables \
 *     -include $KSRC/tools/include/nolibc/nolibc.h -I $KSRC/tools/include/nolibc \
 *     -o init init.c
 * (see kernels/linux/NOTES.md for the exact command)
 *
 * It measures, each as the median of REPS timed runs after one warm-up run:
 *   getppid   : one getppid() system call                        (ns/op)
 *   pipe_rtt  : 1-byte ping-pong over two pipes with a child     (ns/round trip)
 *   tcp_rtt   : 1-byte ping-pong over loopback TCP (TCP_NODELAY) (ns/round trip)
 * and prints
 *   LAYOUTBENCH build kernel=linux release=<uname -r>
 *   LAYOUTBENCH metric name=<name> value=<decimal> unit=ns better=lower
 *   LAYOUTBENCH end status=ok
 * then restarts the machine, which ends QEMU when it runs with -no-reboot
 * (exit status 0).  LINUX_REBOOT_CMD_POWER_OFF is not used: without ACPI
 * (the tinyconfig-based config) the kernel turns it into a halt and QEMU
 * keeps running.  A kernel panic with panic=-1 also restarts, so QEMU's exit
 * status does not tell success from failure: the end line does.
 * Each line is written with one write() so kernel messages cannot split it.
 *
 * With the word `lbmodel` on the kernel command line (the kernel passes it to
 * /init as an argument) it runs for a cache model, not a clock: no settling,
 * no clock check, 1/100 of the iterations, and the whole measured part (the
 * three benchmarks with their set-up and children) between the two marker
 * instructions of native/qemu-icache (magic NOPs: nothing on a real CPU).
 * Any failure prints
 *   LAYOUTBENCH end status=error where=<step> errno=<n>
 * instead of the ok line (where=coarse-clock: the guest fell back to the
 * jiffies clocksource, see clock_is_fine()).
 */

/* nolibc (kernel 6.1) lacks these wrappers: use its raw syscall macros */
#include <asm/unistd.h>

#define REPS 5

/* under QEMU TCG (2024 x86 host): ~350 ns, ~35 us, ~90 us per op, so
 * each timed run takes 0.3-0.9 s and the whole program ~13 s */
#define ITER_GETPPID 1000000
#define ITER_PIPE    20000
#define ITER_TCP     10000

/* start measuring only at this uptime: the kernel switches its clocksource
 * to the TSC about 1.4 s after boot (delayed calibration work) */
#define SETTLE_NS    2000000000ul

/* the markers of native/qemu-icache/icache.c: 8-byte NOPs with a magic displacement */
#define LB_MARK_BEGIN() __asm__ volatile("nopl 0x4c42b001(%%rax,%%rax,1)" ::: "memory")
#define LB_MARK_END()   __asm__ volatile("nopl 0x4c42b002(%%rax,%%rax,1)" ::: "memory")

/* 1 normally; 100 under the cache model (lbmodel) */
static long iter_div = 1;

/* ---- raw system calls ---------------------------------------------------- */

struct lb_timespec { long tv_sec; long tv_nsec; };
struct lb_utsname { char f[6][65]; };           /* struct new_utsname */
struct lb_sockaddr_in {                         /* struct sockaddr_in */
	unsigned short family;
	unsigned short port;                    /* network order */
	unsigned int addr;                      /* network order */
	unsigned char zero[8];
};
struct lb_ifreq {                               /* struct ifreq (40 bytes) */
	char name[16];
	short flags;
	char pad[22];
};

#define LB_AF_INET       2
#define LB_SOCK_STREAM   1
#define LB_IPPROTO_TCP   6
#define LB_TCP_NODELAY   1
#define LB_SOL_SOCKET    1
#define LB_SO_REUSEADDR  2
#define LB_SIOCGIFFLAGS  0x8913
#define LB_SIOCSIFFLAGS  0x8914
#define LB_IFF_UP        0x1
#define LB_CLOCK_MONOTONIC 1

static long lb_clock_gettime(int clk, struct lb_timespec *ts)
{ return my_syscall2(__NR_clock_gettime, clk, ts); }
static long lb_uname(struct lb_utsname *u)
{ return my_syscall1(__NR_uname, u); }
static long lb_pipe(int fd[2])
{ return my_syscall2(__NR_pipe2, fd, 0); }
static long lb_socket(int d, int t, int p)
{ return my_syscall3(__NR_socket, d, t, p); }
static long lb_bind(int s, const void *a, int l)
{ return my_syscall3(__NR_bind, s, a, l); }
static long lb_listen(int s, int n)
{ return my_syscall2(__NR_listen, s, n); }
static long lb_accept(int s)
{ return my_syscall3(__NR_accept, s, 0, 0); }
static long lb_connect(int s, const void *a, int l)
{ return my_syscall3(__NR_connect, s, a, l); }
static long lb_setsockopt(int s, int lvl, int opt, const void *v, int l)
{ return my_syscall5(__NR_setsockopt, s, lvl, opt, v, l); }
static long lb_getsockname(int s, void *a, int *l)
{ return my_syscall3(__NR_getsockname, s, a, l); }
static long lb_ioctl(int fd, unsigned long req, void *arg)
{ return my_syscall3(__NR_ioctl, fd, req, arg); }
static long lb_read(int fd, void *b, unsigned long n)
{ return my_syscall3(__NR_read, fd, b, n); }
static long lb_write(int fd, const void *b, unsigned long n)
{ return my_syscall3(__NR_write, fd, b, n); }
static long lb_getppid(void)
{ return my_syscall0(__NR_getppid); }
static long lb_wait4(int pid, int *st)
{ return my_syscall4(__NR_wait4, pid, st, 0, 0); }
static long lb_reboot(unsigned int cmd)
{ return my_syscall4(__NR_reboot, 0xfee1dead, 672274793, cmd, 0); }
static long lb_nanosleep(const struct lb_timespec *ts)
{ return my_syscall2(__NR_nanosleep, ts, 0); }

/* ---- output -------------------------------------------------------------- */

static int out_fd = 1;
static char line[256];
static unsigned long line_len;

/* appends to the line buffer; the line goes out at its '\n' */
static void put(const char *s)
{
	for (; *s; s++) {
		if (line_len < sizeof(line))
			line[line_len++] = *s;
		if (*s == '\n') {
			lb_write(out_fd, line, line_len);
			line_len = 0;
		}
	}
}

static void put_u(unsigned long v)
{
	char b[24];
	int i = sizeof(b) - 1;
	b[i] = 0;
	do {
		b[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	put(b + i);
}

/* value in tenths, printed as a decimal with one fractional digit */
static void put_tenths(unsigned long t)
{
	char d[2] = { '0' + t % 10, 0 };
	put_u(t / 10);
	put(".");
	put(d);
}

static void finish(const char *status)
{
	put("LAYOUTBENCH end status=");
	put(status);
	put("\n");
	lb_reboot(0x01234567);  /* LINUX_REBOOT_CMD_RESTART: QEMU -no-reboot exits */
	for (;;)
		;
}

static void fail(const char *where, long err)
{
	put("LAYOUTBENCH end status=error where=");
	put(where);
	put(" errno=");
	put_u(err < 0 ? -err : err);
	put("\n");
	lb_reboot(0x01234567);
	for (;;)
		;
}

static unsigned long now_ns(void)
{
	struct lb_timespec ts;
	lb_clock_gettime(LB_CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + ts.tv_nsec;
}

/*
 * 1 if CLOCK_MONOTONIC is fine-grained.  Under TCG a busy host makes the
 * guest's TSC calibration fail and the kernel falls back to the jiffies
 * clocksource (1-4 ms steps): then most back-to-back reads are equal and the
 * results would be garbage.  Pass tsc_early_khz=<host TSC kHz> (NOTES.md).
 */
static int clock_is_fine(void)
{
	int increasing = 0;
	unsigned long prev = now_ns();
	for (int i = 0; i < 100; i++) {
		unsigned long t = now_ns();
		if (t > prev)
			increasing++;
		prev = t;
	}
	return increasing > 90;
}

static void metric(const char *name, unsigned long tenths_ns)
{
	put("LAYOUTBENCH metric name=");
	put(name);
	put(" value=");
	put_tenths(tenths_ns);
	put(" unit=ns better=lower\n");
}

static unsigned long median(unsigned long *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			unsigned long t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/* ---- benchmarks ---------------------------------------------------------- */

/* returns tenths of ns per getppid() */
static unsigned long run_getppid(void)
{
	unsigned long t0 = now_ns();
	for (long i = 0; i < ITER_GETPPID / iter_div; i++)
		lb_getppid();
	return (now_ns() - t0) * 10 / (ITER_GETPPID / iter_div);
}

/* ping-pong over a pair of fds (pipes or one socket); returns tenths of ns */
static unsigned long pingpong(int wfd, int rfd, long iters, const char *what)
{
	char c = 'x';
	unsigned long t0;

	iters /= iter_div;
	t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		long r = lb_write(wfd, &c, 1);
		if (r != 1)
			fail(what, r);
		r = lb_read(rfd, &c, 1);
		if (r != 1)
			fail(what, r);
	}
	return (now_ns() - t0) * 10 / iters;
}

/* the child echoes bytes until the parent closes its end */
static void echo_child(int rfd, int wfd)
{
	char c;
	while (lb_read(rfd, &c, 1) == 1)
		if (lb_write(wfd, &c, 1) != 1)
			break;
	sys_exit(0);
}

static unsigned long bench_pipe(void)
{
	int to_child[2], to_parent[2], st;
	unsigned long v[REPS];
	long r;

	if ((r = lb_pipe(to_child)) < 0 || (r = lb_pipe(to_parent)) < 0)
		fail("pipe", r);
	r = sys_fork();
	if (r < 0)
		fail("fork", r);
	if (r == 0) {
		sys_close(to_child[1]);
		sys_close(to_parent[0]);
		echo_child(to_child[0], to_parent[1]);
	}
	sys_close(to_child[0]);
	sys_close(to_parent[1]);
	pingpong(to_child[1], to_parent[0], ITER_PIPE / 4, "pipe_warmup");
	for (int i = 0; i < REPS; i++)
		v[i] = pingpong(to_child[1], to_parent[0], ITER_PIPE, "pipe_rtt");
	sys_close(to_child[1]);
	sys_close(to_parent[0]);
	lb_wait4(-1, &st);
	return median(v, REPS);
}

static void bring_up_lo(void)
{
	struct lb_ifreq ifr = { "lo" };
	long s = lb_socket(LB_AF_INET, LB_SOCK_STREAM, 0), r;

	if (s < 0)
		fail("socket_lo", s);
	if ((r = lb_ioctl(s, LB_SIOCGIFFLAGS, &ifr)) < 0)
		fail("SIOCGIFFLAGS", r);
	ifr.flags |= LB_IFF_UP;
	if ((r = lb_ioctl(s, LB_SIOCSIFFLAGS, &ifr)) < 0)
		fail("SIOCSIFFLAGS", r);
	sys_close(s);
}

static unsigned long bench_tcp(void)
{
	struct lb_sockaddr_in a = { LB_AF_INET, 0, 0x0100007f };  /* 127.0.0.1:any */
	int one = 1, len = sizeof(a), st;
	unsigned long v[REPS];
	long ls, s, r;

	bring_up_lo();
	ls = lb_socket(LB_AF_INET, LB_SOCK_STREAM, 0);
	if (ls < 0)
		fail("socket", ls);
	lb_setsockopt(ls, LB_SOL_SOCKET, LB_SO_REUSEADDR, &one, sizeof(one));
	if ((r = lb_bind(ls, &a, sizeof(a))) < 0)
		fail("bind", r);
	if ((r = lb_listen(ls, 1)) < 0)
		fail("listen", r);
	if ((r = lb_getsockname(ls, &a, &len)) < 0)
		fail("getsockname", r);
	r = sys_fork();
	if (r < 0)
		fail("fork", r);
	if (r == 0) {
		long c = lb_accept(ls);
		if (c < 0)
			sys_exit(1);
		lb_setsockopt(c, LB_IPPROTO_TCP, LB_TCP_NODELAY, &one, sizeof(one));
		echo_child(c, c);
	}
	s = lb_socket(LB_AF_INET, LB_SOCK_STREAM, 0);
	if (s < 0)
		fail("socket", s);
	if ((r = lb_connect(s, &a, sizeof(a))) < 0)
		fail("connect", r);
	lb_setsockopt(s, LB_IPPROTO_TCP, LB_TCP_NODELAY, &one, sizeof(one));
	pingpong(s, s, ITER_TCP / 4, "tcp_warmup");
	for (int i = 0; i < REPS; i++)
		v[i] = pingpong(s, s, ITER_TCP, "tcp_rtt");
	sys_close(s);
	sys_close(ls);
	lb_wait4(-1, &st);
	return median(v, REPS);
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

int main(int argc, char **argv)
{
	struct lb_utsname u;
	unsigned long v[REPS];
	int model = 0;

	for (int i = 1; i < argc; i++)
		if (streq(argv[i], "lbmodel"))
			model = 1;
	if (model)
		iter_div = 100;

	/* the kernel opened /dev/console as fds 0-2 if the initramfs has it */
	if (lb_write(1, "", 0) < 0) {
		sys_mkdir("/dev", 0755);
		sys_mount("devtmpfs", "/dev", "devtmpfs", 0, 0);
		out_fd = sys_open("/dev/console", 2 /* O_RDWR */, 0);
	}
	/* firmware text (SeaBIOS "Booting from ROM..") may precede us on the line */
	put("\n");
	if (lb_uname(&u) < 0)
		fail("uname", 0);
	put("LAYOUTBENCH build kernel=linux release=");
	put(u.f[2]);
	put("\n");

	for (; !model;) {
		unsigned long t = now_ns();
		struct lb_timespec d = { 0, 100000000 };
		if (t >= SETTLE_NS)
			break;
		if (SETTLE_NS - t < 100000000ul)
			d.tv_nsec = SETTLE_NS - t;
		lb_nanosleep(&d);
	}
	if (!model && !clock_is_fine())
		fail("coarse-clock", 0);
	LB_MARK_BEGIN();
	run_getppid();
	for (int i = 0; i < REPS; i++)
		v[i] = run_getppid();
	metric("getppid", median(v, REPS));
	metric("pipe_rtt", bench_pipe());
	metric("tcp_rtt", bench_tcp());
	LB_MARK_END();
	finish("ok");
	return 0;
}
