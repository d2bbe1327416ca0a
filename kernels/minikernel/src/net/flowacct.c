/*
 * net/flowacct.c - IPFIX-like flow accounting.  For every packet that
 * passes the filter, 64 information-element exporters (generated) encode
 * fields of the packet into a record; the record is hashed into a flow
 * cache that keeps per-flow totals.
 */
#include "net.h"
#include "kern.h"
#include "lib.h"
#include "rep.h"

#define FA_NELEM 64
#define FA_SLOTS 1024
#define FA_RECMAX 512

struct fa_ctx {
	const struct mbuf *m;
	const u8 *l3;
	const u8 *l4;
	u32 l4len;
	u32 dir;
	u8 *rec;
	u32 pos;
};

struct fa_flow {
	u64 key;
	u64 packets;
	u64 octets;
	u64 digest;
};

typedef void (*fa_elem_fn)(struct fa_ctx *c);

static struct fa_flow fa_cache[FA_SLOTS];
static u8 fa_record[FA_RECMAX] ALIGN64;
static u64 fa_exported, fa_collisions;

static void fa_put_varint(struct fa_ctx *c, u64 v)
{
	while (v >= 0x80 && c->pos < FA_RECMAX - 1) {
		c->rec[c->pos++] = (u8)(v | 0x80);
		v >>= 7;
	}
	c->rec[c->pos++] = (u8)v;
}

/*
 * Element n: picks a source (addresses, ports, header bytes, lengths,
 * payload sample, flags), transforms it and encodes it as a varint, a
 * fixed 16-bit or a fixed 32-bit big-endian field.
 */
#define FA_ELEM(n)								\
static void fa_elem_##n(struct fa_ctx *c)					\
{										\
	const struct mbuf *m = c->m;						\
	u64 v;									\
										\
	switch ((n) % 8) {							\
	case 0: v = (u64)m->src << ((n) % 17) ^ m->dst; break;			\
	case 1: v = ((u64)m->sport << 16 | m->dport) * ((n) + 3); break;	\
	case 2: v = load32be(c->l3 + ((n) % 4) * 4) + c->l3[(n) % 20]; break;	\
	case 3: v = (u64)(m_end(m) - m->l3off) * ((n) | 1) + m->ttl; break;	\
	case 4: v = c->l4len > 8 + (n) % 8 ? load32le(c->l4 + (n) % 8) : (n); break; \
	case 5: v = ((u64)m->tcpflags << 8 | m->tos) ^ ((u64)m->qclass << ((n) % 12)); break; \
	case 6: v = c->l4len > 48 ? fnv1a32(c->l4 + 16 + (n) % 16, 16, (n)) : c->l4len; break; \
	default: v = (u64)m->proto * 0x100000001b3ull + c->dir + m->vlan * ((n) + 1); break; \
	}									\
	switch (((n) / 8) % 4) {						\
	case 0: v = v ^ (v >> ((n) % 13 + 3)); break;				\
	case 1: v = rotl64(v, (n) % 29 + 1) + (n); break;			\
	case 2: v = (v * 0x9e3779b97f4a7c15ull) >> ((n) % 40 + 8); break;	\
	default: v = v & (0xffffffffull >> ((n) % 16)); break;			\
	}									\
	switch ((n) % 3) {							\
	case 0:									\
		fa_put_varint(c, v);						\
		break;								\
	case 1:									\
		store16be(c->rec + c->pos, (u16)(v ^ (v >> 16)));		\
		c->pos += 2;							\
		break;								\
	default:								\
		store32be(c->rec + c->pos, (u32)(v ^ (v >> 32)));		\
		c->pos += 4;							\
		break;								\
	}									\
}

REP64(FA_ELEM)

#define FA_ELEM_ENTRY(n) fa_elem_##n,
static const fa_elem_fn fa_elems[FA_NELEM] = { REP64(FA_ELEM_ENTRY) };

void flowacct_packet(const struct mbuf *m, u32 dir)
{
	struct fa_ctx c;
	struct fa_flow *f;
	u64 key, rh;

	c.m = m;
	c.l3 = m->data + m->l3off;
	c.l4 = m->data + m->l4off;
	c.l4len = m_end(m) - m->l4off;
	c.dir = dir;
	c.rec = fa_record;
	c.pos = 0;
	for (u32 i = 0; i < FA_NELEM; i++)
		fa_elems[i](&c);
	rh = hash_bytes64(fa_record, c.pos, 0xf10f);
	key = ((u64)m->src << 32 | m->dst) ^ ((u64)m->sport << 16 | m->dport) ^ ((u64)m->proto << 56);
	f = &fa_cache[mix64(key) % FA_SLOTS];
	if (f->key != key) {
		if (f->packets)
			fa_collisions++;
		f->key = key;
		f->packets = 0;
		f->octets = 0;
		f->digest = 0;
	}
	f->packets++;
	f->octets += m_end(m) - m->l3off;
	f->digest = mix64(f->digest ^ rh);
	fa_exported++;
	res_add(f->digest ^ c.pos);
}

void flowacct_init(void)
{
	memset(fa_cache, 0, sizeof(fa_cache));
	fa_exported = fa_collisions = 0;
}
