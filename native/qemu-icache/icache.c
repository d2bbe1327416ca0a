/*
 * icache.c - a QEMU TCG plugin for layoutbench: a deterministic model of an L1
 * instruction cache over the guest's instruction fetches, counted only between
 * two marker instructions the guest executes around its benchmark.
 *
 *   qemu-system-x86_64 -accel tcg,thread=single -icount shift=0,sleep=off ... \
 *     -plugin file=libicache.so,size=4096,assoc=2,line=64,out=/path/result.txt
 *
 * The cache: `size` bytes, `assoc` ways, `line` bytes per line (like cachegrind's
 * --I1=size,assoc,line), LRU, indexed by guest virtual address (a line number
 * modulo the number of sets, which must be a power of two).  Every executed
 * instruction fetches the lines its bytes cover; a fetch of the line fetched just
 * before is a hit on the most recent way and changes nothing, so each translated
 * block keeps the list of lines it fetches in order, with repeats of the previous
 * line dropped, and one callback per executed block simulates the whole list.
 *
 * The markers are 8-byte NOPs with a magic displacement (nothing on a real CPU):
 *   begin: nopl 0x4c42b001(%rax,%rax,1)   0f 1f 84 00 01 b0 42 4c
 *   end:   nopl 0x4c42b002(%rax,%rax,1)   0f 1f 84 00 02 b0 42 4c
 * Counting starts after a begin marker and stops at an end marker; several
 * begin/end pairs add up.  Blocks that contain a marker are simulated instruction
 * by instruction so the switch happens at the marker itself.
 *
 * The result is written to `out` at every end marker and when QEMU exits:
 *   status=ok|no-begin|no-end    (no-end: a begin marker without its end)
 *   regions=N  ir=N  i1_misses=N  i1=size,assoc,line  (one key=value per line)
 * and, with blocks=on (symdiff --cache asks for it; a measurement does not), beside it
 * `out`.blocks, the measured blocks (those without a marker), one line each:
 *   VADDR INSNS EXECUTIONS MISSES   (hex address of its first instruction, then decimal)
 * a block QEMU translated more than once has a line per translation.
 *
 * Instructions are counted by an inline add before every instruction (ir is the
 * difference of that counter between the markers), so a block that QEMU leaves in
 * its middle (a fault, or a store into a page that holds translated code, which
 * depends on the layout) counts only what ran.  The cache is simulated per block:
 * such a block's later lines are fetched once more, a small, deterministic excess.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later (see LICENSE: QEMU's plugin API is)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-api.h"

LB_EXPORT int qemu_plugin_version = 1;

#define MARK_BEGIN 0x4c42b001u
#define MARK_END   0x4c42b002u

struct block {			/* one translated block */
	struct block *next;	/* every block, for the .blocks file */
	uint64_t vaddr;		/* its first instruction */
	uint64_t execs, misses;	/* executions and misses while measuring */
	uint32_t ninsns;
	uint32_t nlines;
	uint64_t lines[];	/* line numbers fetched, in order, repeats dropped */
};

static struct block *blocks;

struct insn {			/* one instruction of a block that holds a marker */
	uint64_t first, last;	/* the lines its bytes cover */
	int mark;		/* 0, 1 (begin), 2 (end) */
};

static uint64_t size = 4096, assoc = 2, line = 64;
static unsigned line_shift;
static uint64_t nsets, set_mask;
static uint64_t *tags;		/* nsets x assoc, way 0 most recently used; ~0 = empty */
static const char *out_path;
static int write_blocks_too;	/* blocks=on */

static int measuring;
static uint64_t ir, misses, regions, begins;
static uint64_t executed, executed_at_begin;	/* every instruction, by inline adds */

static void fetch(uint64_t ln)
{
	uint64_t *w = tags + (ln & set_mask) * assoc;
	uint64_t i;

	if (w[0] == ln)
		return;
	for (i = 1; i < assoc; i++)
		if (w[i] == ln)
			break;
	if (i == assoc) {
		misses++;
		i = assoc - 1;	/* the least recently used way goes */
	}
	memmove(w + 1, w, i * sizeof(*w));
	w[0] = ln;
}

static void write_blocks(void)
{
	char *path = malloc(strlen(out_path) + sizeof(".blocks"));
	FILE *f;

	strcpy(path, out_path);
	strcat(path, ".blocks");
	f = fopen(path, "w");
	free(path);
	if (!f) {
		qemu_plugin_outs("icache: cannot write the blocks file\n");
		return;
	}
	for (const struct block *b = blocks; b; b = b->next)
		if (b->execs)
			fprintf(f, "%llx %u %llu %llu\n", (unsigned long long)b->vaddr, b->ninsns,
				(unsigned long long)b->execs, (unsigned long long)b->misses);
	fclose(f);
}

static void write_result(const char *status)
{
	FILE *f;

	if (!out_path)
		return;
	f = fopen(out_path, "w");
	if (!f) {
		qemu_plugin_outs("icache: cannot write the result file\n");
		return;
	}
	fprintf(f, "status=%s\nregions=%llu\nir=%llu\ni1_misses=%llu\ni1=%llu,%llu,%llu\n", status,
		(unsigned long long)regions, (unsigned long long)ir, (unsigned long long)misses,
		(unsigned long long)size, (unsigned long long)assoc, (unsigned long long)line);
	fclose(f);
	if (write_blocks_too)
		write_blocks();
}

static void block_exec(unsigned int vcpu, void *ud)
{
	struct block *b = ud;
	uint64_t before = misses;

	(void)vcpu;
	if (!measuring)
		return;
	for (uint32_t i = 0; i < b->nlines; i++)
		fetch(b->lines[i]);
	b->execs++;
	b->misses += misses - before;
}

static void insn_exec(unsigned int vcpu, void *ud)
{
	const struct insn *in = ud;

	(void)vcpu;
	if (in->mark == 1) {
		if (!measuring)
			executed_at_begin = executed;
		measuring = 1;
		begins++;
		return;
	}
	if (in->mark == 2) {
		if (measuring) {
			measuring = 0;
			regions++;
			ir += executed - executed_at_begin;
			write_result("ok");
		}
		return;
	}
	if (!measuring)
		return;
	for (uint64_t ln = in->first; ln <= in->last; ln++)
		fetch(ln);
}

static int marker_of(const struct qemu_plugin_insn *insn)
{
	static const unsigned char nopl[4] = { 0x0f, 0x1f, 0x84, 0x00 };
	const unsigned char *d = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != 8 || memcmp(d, nopl, 4) != 0)
		return 0;
	disp = d[4] | d[5] << 8 | d[6] << 16 | (uint32_t)d[7] << 24;
	return disp == MARK_BEGIN ? 1 : disp == MARK_END ? 2 : 0;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	int marked = 0;
	struct block *b;

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		marked |= marker_of(insn);
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &executed, 1);
	}
	if (marked) {
		for (size_t i = 0; i < n; i++) {
			struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
			struct insn *in = malloc(sizeof(*in));
			uint64_t va = qemu_plugin_insn_vaddr(insn);

			in->first = va >> line_shift;
			in->last = (va + qemu_plugin_insn_size(insn) - 1) >> line_shift;
			in->mark = marker_of(insn);
			qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec, QEMU_PLUGIN_CB_NO_REGS, in);
		}
		return;
	}
	b = malloc(sizeof(*b) + 2 * n * sizeof(b->lines[0]));
	b->nlines = 0;
	b->ninsns = n;
	b->vaddr = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
	b->execs = b->misses = 0;
	b->next = blocks;
	blocks = b;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		uint64_t last = (va + qemu_plugin_insn_size(insn) - 1) >> line_shift;

		for (uint64_t ln = va >> line_shift; ln <= last; ln++)
			if (b->nlines == 0 || b->lines[b->nlines - 1] != ln)
				b->lines[b->nlines++] = ln;
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *ud)
{
	(void)id;
	(void)ud;
	write_result(measuring ? "no-end" : begins == 0 ? "no-begin" : "ok");
}

static int pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	*v = strtoull(s, &end, 0);
	return *s && !*end;
}

LB_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int ok = 1;

		if (!strncmp(a, "size=", 5))
			ok = parse_u64(a + 5, &size);
		else if (!strncmp(a, "assoc=", 6))
			ok = parse_u64(a + 6, &assoc);
		else if (!strncmp(a, "line=", 5))
			ok = parse_u64(a + 5, &line);
		else if (!strncmp(a, "out=", 4))
			out_path = a + 4;
		else if (!strcmp(a, "blocks=on"))
			write_blocks_too = 1;
		else
			ok = 0;
		if (!ok) {
			fprintf(stderr, "icache: bad argument %s (size=, assoc=, line=, out=, blocks=on)\n", a);
			return -1;
		}
	}
	if (!pow2(line) || !assoc || size % (assoc * line) || !pow2(size / (assoc * line))) {
		fprintf(stderr, "icache: size=%llu assoc=%llu line=%llu: line and size/(assoc*line) must be powers of two\n",
			(unsigned long long)size, (unsigned long long)assoc, (unsigned long long)line);
		return -1;
	}
	if (info->system_emulation && info->system.smp_vcpus != 1) {
		fprintf(stderr, "icache: models one vCPU; run with -smp 1\n");
		return -1;
	}
	while ((1ull << line_shift) < line)
		line_shift++;
	nsets = size / (assoc * line);
	set_mask = nsets - 1;
	tags = malloc(nsets * assoc * sizeof(*tags));
	memset(tags, 0xff, nsets * assoc * sizeof(*tags));
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
