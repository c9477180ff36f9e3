#include "symbolize/rangemap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static int sp_range_cmp_lo(const void *a, const void *b)
{
	const struct sp_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int sp_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether range a beats range b where both cover an address. */
static bool sp_range_beats(const struct sp_range *a, const struct sp_range *b)
{
	if (a->prio != b->prio)
		return a->prio > b->prio;
	return a->id < b->id;
}

/* A binary max-heap of indexes into the sorted ranges, best on top. */
struct sp_heap {
	const struct sp_range *r;
	size_t *v;
	size_t n;
};

static void sp_heap_push(struct sp_heap *h, size_t x)
{
	size_t i = h->n++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!sp_range_beats(&h->r[x], &h->r[h->v[up]]))
			break;
		h->v[i] = h->v[up];
		i = up;
	}
	h->v[i] = x;
}

static void sp_heap_pop(struct sp_heap *h)
{
	size_t x = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && sp_range_beats(&h->r[h->v[c + 1]], &h->r[h->v[c]]))
			c++;
		if (!sp_range_beats(&h->r[h->v[c]], &h->r[x]))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
}

void sp_rangemap_release(struct sp_rangemap *m)
{
	free(m->segs);
	m->segs = NULL;
	m->n = 0;
}

int sp_rangemap_build(struct sp_rangemap *m, struct sp_range *ranges, size_t n)
{
	int rc = -ENOMEM;
	uint64_t *pts = NULL;
	struct sp_heap h = {.r = ranges};

	sp_rangemap_release(m);
	if (!n)
		return 0;
	qsort(ranges, n, sizeof(*ranges), sp_range_cmp_lo);

	/* The common case (symbols of one unit, CUs): no overlap at all, so the
	 * sorted input already is the answer. */
	bool disjoint = true;
	for (size_t i = 1; i < n && disjoint; i++)
		disjoint = ranges[i - 1].hi <= ranges[i].lo;
	if (disjoint) {
		m->segs = malloc(n * sizeof(*m->segs));
		if (!m->segs)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			if (ranges[i].lo < ranges[i].hi)
				m->segs[m->n++] = ranges[i];
		return 0;
	}

	pts = malloc(2 * n * sizeof(*pts));
	h.v = malloc(n * sizeof(*h.v));
	m->segs = malloc(2 * n * sizeof(*m->segs));
	if (!pts || !h.v || !m->segs)
		goto out;
	size_t npts = 0;
	for (size_t i = 0; i < n; i++) {
		pts[npts++] = ranges[i].lo;
		pts[npts++] = ranges[i].hi;
	}
	qsort(pts, npts, sizeof(*pts), sp_u64_cmp);
	size_t u = 0;
	for (size_t i = 0; i < npts; i++)
		if (!u || pts[u - 1] != pts[i])
			pts[u++] = pts[i];
	npts = u;

	size_t next = 0;
	for (size_t k = 0; k + 1 < npts; k++) {
		uint64_t p = pts[k];
		while (next < n && ranges[next].lo <= p) {
			if (ranges[next].lo < ranges[next].hi)
				sp_heap_push(&h, next);
			next++;
		}
		/* lazy deletion: a range that ended only matters once it is on top */
		while (h.n && ranges[h.v[0]].hi <= p)
			sp_heap_pop(&h);
		if (!h.n)
			continue;
		const struct sp_range *top = &ranges[h.v[0]];
		struct sp_range *last = m->n ? &m->segs[m->n - 1] : NULL;
		if (last && last->hi == p && last->id == top->id && last->prio == top->prio) {
			last->hi = pts[k + 1];
			continue;
		}
		m->segs[m->n++] = (struct sp_range){p, pts[k + 1], top->id, top->prio};
	}
	rc = 0;
out:
	free(pts);
	free(h.v);
	if (rc)
		sp_rangemap_release(m);
	return rc;
}

const struct sp_range *sp_rangemap_floor(const struct sp_rangemap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->segs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &m->segs[lo - 1] : NULL;
}

const struct sp_range *sp_rangemap_find(const struct sp_rangemap *m, uint64_t addr)
{
	const struct sp_range *r = sp_rangemap_floor(m, addr);
	return r && addr < r->hi ? r : NULL;
}
