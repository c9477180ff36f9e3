#include "symbolize/addrmap.h"

#include <errno.h>
#include <stdlib.h>

void sp_addrmap_init(struct sp_addrmap *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = 0;
	m->n = 0;
}

void sp_addrmap_release(struct sp_addrmap *m)
{
	free(m->keys);
	free(m->vals);
	sp_addrmap_init(m);
}

static size_t sp_addrmap_slot(uint64_t key, size_t cap)
{
	/* Fibonacci hashing: addresses share low zero bits and high prefixes,
	 * the multiply spreads both into the top bits we keep */
	key *= 0x9e3779b97f4a7c15ull;
	return (size_t)(key >> 32 ^ key) & (cap - 1);
}

void *sp_addrmap_get(const struct sp_addrmap *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = sp_addrmap_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->vals[i])
			return NULL;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int sp_addrmap_grow(struct sp_addrmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = malloc(cap * sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t j = 0; j < m->cap; j++) {
		if (!m->vals[j])
			continue;
		size_t i = sp_addrmap_slot(m->keys[j], cap);
		while (vals[i])
			i = (i + 1) & (cap - 1);
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int sp_addrmap_put(struct sp_addrmap *m, uint64_t key, void *val)
{
	if ((m->n + 1) * 2 > m->cap && sp_addrmap_grow(m))
		return -ENOMEM;
	size_t i = sp_addrmap_slot(key, m->cap);
	while (m->vals[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->vals[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}
