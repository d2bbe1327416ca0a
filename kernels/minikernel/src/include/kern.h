/* kern.h - kernel core (kern/) */
#ifndef KERN_H
#define KERN_H
#include "types.h"

struct kconfig {
	u64 iterations;
	bool quiet;
	bool panic;
	bool hang;
	bool stats;
};
extern struct kconfig kconf;

#define DEFAULT_ITERATIONS 120000ull

/* printf.c */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kputs(const char *s);
void kprint_fixed(const char *prefix, u64 num, u64 den, u32 frac_digits, const char *suffix);

/* panic.c */
NORETURN void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define KASSERT(c) do { if (!(c)) panic("assertion failed: %s (%s:%d)", #c, __FILE__, __LINE__); } while (0)

/* cmdline.c */
void cmdline_parse(const char *s, struct kconfig *cfg);

/* init.c */
void subsys_init_all(void);

/* digest.c: per-packet result accumulation */
void res_add(u64 v);
void res_begin(u64 seq);
void res_commit(void);
u64 digest_value(void);

/* bench.c */
struct bench_stats {
	u64 packets;
	u64 total_cycles;
	u64 gen_cycles;
	u64 rx_cycles;
	u64 lo_cycles;
	u64 pf_cycles;
};
void bench_run(u64 n, struct bench_stats *st);
u64 pf_cycles_total(void);
#endif
