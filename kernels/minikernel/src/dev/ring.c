/* dev/ring.c - single producer / single consumer descriptor rings */
#include "dev.h"
#include "lib.h"

void ring_init(struct ring *r)
{
	memset(r, 0, sizeof(*r));
	for (u32 i = 0; i < RING_SIZE; i++)
		r->desc[i].buf = i;
}

u32 ring_count(const struct ring *r)
{
	return r->prod - r->cons;
}

bool ring_full(const struct ring *r)
{
	return ring_count(r) >= RING_SIZE;
}

bool ring_empty(const struct ring *r)
{
	return r->prod == r->cons;
}

struct ring_desc *ring_produce(struct ring *r)
{
	if (ring_full(r)) {
		r->full++;
		return NULL;
	}
	r->posted++;
	return &r->desc[r->prod++ % RING_SIZE];
}

struct ring_desc *ring_consume(struct ring *r)
{
	if (ring_empty(r))
		return NULL;
	return &r->desc[r->cons++ % RING_SIZE];
}
