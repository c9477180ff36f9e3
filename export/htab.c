#include "export/htab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sp_htab_init(struct sp_htab *h)
{
	memset(h, 0, sizeof(*h));
}

void sp_htab_release(struct sp_htab *h)
{
	free(h->slots);
	sp_htab_init(h);
}

int64_t sp_htab_find(const struct sp_htab *h, uint64_t hash, sp_htab_eq_fn eq, const void *ctx)
{
	if (!h->slots)
		return -1;
	for (size_t i = hash & h->mask;; i = (i + 1) & h->mask) {
		const struct sp_htab_slot *s = &h->slots[i];
		if (!s->idx)
			return -1;
		if (s->hash == hash && eq(ctx, s->idx - 1))
			return s->idx - 1;
	}
}

static void sp_htab_place(struct sp_htab_slot *slots, size_t mask, uint64_t hash, uint32_t idx1)
{
	size_t i = hash & mask;
	while (slots[i].idx)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].idx = idx1;
}

int sp_htab_insert(struct sp_htab *h, uint64_t hash, uint32_t idx)
{
	/* grow at 1/2 load: probe chains stay short and lookups dominate */
	if (!h->slots || (h->n + 1) * 2 > h->mask + 1) {
		size_t cap = h->slots ? (h->mask + 1) * 2 : 64;
		struct sp_htab_slot *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		if (h->slots) {
			for (size_t i = 0; i <= h->mask; i++)
				if (h->slots[i].idx)
					sp_htab_place(slots, cap - 1, h->slots[i].hash,
						      h->slots[i].idx);
			free(h->slots);
		}
		h->slots = slots;
		h->mask = cap - 1;
	}
	sp_htab_place(h->slots, h->mask, hash, idx + 1);
	h->n++;
	return 0;
}

uint64_t sp_hash_bytes(uint64_t seed, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++) {
		seed ^= c[i];
		seed *= 0x100000001b3ull;
	}
	return seed;
}

uint64_t sp_hash_str(uint64_t seed, const char *s)
{
	if (!s)
		return sp_hash_bytes(seed, "\xff", 1);
	return sp_hash_bytes(seed, s, strlen(s) + 1);
}

uint64_t sp_hash_u64(uint64_t seed, uint64_t v)
{
	/* a multiply-xorshift finish spreads small integers over all bits */
	seed ^= v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
	seed *= 0xff51afd7ed558ccdull;
	return seed ^ (seed >> 33);
}
