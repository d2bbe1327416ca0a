/*
 * net/classify.c - flow classifier: 96 feature extractors (generated) feed
 * a small decision forest that picks a queueing class.  Every packet that
 * passes the inbound filter runs all extractors.
 */
#include "net.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define NFEAT 96
#define NTREES 12
#define TREE_DEPTH 5
#define TREE_NODES ((1u << TREE_DEPTH) - 1)

struct cls_ctx {
	const struct mbuf *m;
	const u8 *l3;
	const u8 *l4;
	u32 l4len;
};

typedef u32 (*feat_fn)(const struct cls_ctx *c);

struct tree_node {
	u8 feat;
	u8 shift;
	u16 pad;
	u32 threshold;
};

static struct tree_node forest[NTREES][TREE_NODES];
static u8 leaf_class[NTREES][1u << TREE_DEPTH];
static u64 class_counts[8];

static const u16 len_buckets[8] = { 64, 96, 128, 192, 256, 384, 512, 1024 };

#define FEAT(n)									\
static u32 feat_##n(const struct cls_ctx *c)					\
{										\
	const struct mbuf *m = c->m;						\
	u32 v = 0, i;								\
										\
	switch ((n) % 6) {							\
	case 0:									\
		v = c->l3[((n) * 7) % 20] * 0x9e3779b1u ^ c->l3[((n) * 3 + 1) % 20]; \
		break;								\
	case 1:									\
		v = ((u32)m->sport ^ ((u32)m->dport << ((n) % 8))) * 0x85ebca6bu >> ((n) % 16); \
		break;								\
	case 2:									\
		if (c->l4len > 24)						\
			v = c->l4[20 + ((n) * 5) % (c->l4len - 20)] * ((n) + 1);	\
		break;								\
	case 3:									\
		v = (m->src >> ((n) % 24)) ^ (m->dst & (0xffffffffu << ((n) % 32))); \
		break;								\
	case 4:									\
		for (i = 0; i < 8; i++)						\
			if (c->l4len + (n) < len_buckets[i])			\
				break;						\
		v = i * 0x1111u + (c->l4len >> ((n) % 4));			\
		break;								\
	default:								\
		if (c->l4len >= 16)						\
			v = popcount64(load64le(c->l4 + ((n) % 8))) * 0x1010101u; \
		break;								\
	}									\
	switch (((n) / 6) % 4) {						\
	case 0:									\
		v = mix32(v + (n));						\
		break;								\
	case 1:									\
		for (i = 0; i < 4; i++)						\
			v = rotl32(v, 5) ^ c->l3[((n) + i * 4) % 20];		\
		break;								\
	case 2:									\
		v ^= (u32)m->ttl << ((n) % 24) | m->tos;			\
		break;								\
	default:								\
		v = v * 2654435761u + (u32)m->proto * ((n) + 17);		\
		break;								\
	}									\
	return v;								\
}

REP96(FEAT)

#define FEAT_ENTRY(n) feat_##n,
static const feat_fn features[NFEAT] = { REP96(FEAT_ENTRY) };

u32 classify(struct mbuf *m)
{
	struct cls_ctx c;
	u32 fv[NFEAT];
	u32 votes[8] = { 0 };
	u32 best = 0;
	u64 acc = 0;

	c.m = m;
	c.l3 = m->data + m->l3off;
	c.l4 = m->data + m->l4off;
	c.l4len = m_end(m) - m->l4off;
	for (u32 i = 0; i < NFEAT; i++) {
		fv[i] = features[i](&c);
		acc = acc * 0x100000001b3ull + fv[i];
	}
	for (u32 t = 0; t < NTREES; t++) {
		u32 node = 0;

		for (u32 d = 0; d < TREE_DEPTH; d++) {
			const struct tree_node *tn = &forest[t][node];
			u32 go_right = ((fv[tn->feat] >> tn->shift) & 0xffff) > tn->threshold;

			node = 2 * node + 1 + go_right;
		}
		votes[leaf_class[t][node - TREE_NODES]]++;
	}
	for (u32 k = 1; k < 8; k++)
		if (votes[k] > votes[best])
			best = k;
	class_counts[best]++;
	res_add(acc ^ best);
	return best;
}

void classify_init(void)
{
	struct prng rng;

	prng_seed(&rng, 0x636c617373696679ull);
	for (u32 t = 0; t < NTREES; t++) {
		for (u32 n = 0; n < TREE_NODES; n++) {
			forest[t][n].feat = (u8)prng_range(&rng, NFEAT);
			forest[t][n].shift = (u8)prng_range(&rng, 16);
			forest[t][n].threshold = prng_range(&rng, 0x10000);
		}
		for (u32 l = 0; l < (1u << TREE_DEPTH); l++)
			leaf_class[t][l] = (u8)prng_range(&rng, 8);
	}
	memset(class_counts, 0, sizeof(class_counts));
}
