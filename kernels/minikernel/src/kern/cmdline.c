/* kern/cmdline.c - kernel command line: iterations=N quiet panic hang */
#include "kern.h"
#include "lib.h"

struct kconfig kconf;

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

struct cmd_opt {
	const char *name;
	bool has_value;
	void (*set)(struct kconfig *cfg, const char *val, size_t len);
};

static void set_iterations(struct kconfig *cfg, const char *val, size_t len)
{
	u64 v;

	if (parse_u64(val, len, &v) && v > 0)
		cfg->iterations = v;
}

static void set_quiet(struct kconfig *cfg, const char *val UNUSED, size_t len UNUSED) { cfg->quiet = true; }
static void set_panic(struct kconfig *cfg, const char *val UNUSED, size_t len UNUSED) { cfg->panic = true; }
static void set_hang(struct kconfig *cfg, const char *val UNUSED, size_t len UNUSED) { cfg->hang = true; }
static void set_stats(struct kconfig *cfg, const char *val UNUSED, size_t len UNUSED) { cfg->stats = true; }

static const struct cmd_opt cmd_opts[] = {
	{ "iterations", true, set_iterations },
	{ "quiet", false, set_quiet },
	{ "panic", false, set_panic },
	{ "hang", false, set_hang },
	{ "stats", false, set_stats },
};

static void handle_token(struct kconfig *cfg, const char *tok, size_t len)
{
	size_t klen = 0;

	while (klen < len && tok[klen] != '=')
		klen++;
	for (size_t i = 0; i < ARRAY_SIZE(cmd_opts); i++) {
		const struct cmd_opt *o = &cmd_opts[i];

		if (strlen(o->name) != klen || strncmp(o->name, tok, klen))
			continue;
		if (o->has_value != (klen < len))
			continue;
		if (o->has_value)
			o->set(cfg, tok + klen + 1, len - klen - 1);
		else
			o->set(cfg, NULL, 0);
	}
}

void cmdline_parse(const char *s, struct kconfig *cfg)
{
	cfg->iterations = DEFAULT_ITERATIONS;
	cfg->quiet = cfg->panic = cfg->hang = cfg->stats = false;
	while (*s) {
		const char *start;

		while (*s && is_space(*s))
			s++;
		start = s;
		while (*s && !is_space(*s))
			s++;
		if (s > start)
			handle_token(cfg, start, (size_t)(s - start));
	}
}
