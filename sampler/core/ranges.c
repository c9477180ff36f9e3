/*
 * ranges.c - the table of named ranges and the queue of window marks
 * (ranges.h), moved out of life/api.c so that the writer reads them from
 * below.
 */
#include "sampler/core/ranges.h"
#include "format/profile.h"
#include "sampler/base/sys.h"
#include "sampler/core/sampler.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct sp_range_node {
	uint32_t parent;
	uint32_t flags;
	uint32_t anchor; /* SP_ANCHOR_* (profile.h) */
	char *name;
};

static pthread_mutex_t sp_range_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_range_node *sp_ranges;
static uint32_t sp_n_ranges, sp_cap_ranges;
/* open addressing over sp_ranges: an id, 0 for empty; at most half full */
static uint32_t *sp_range_index;
static uint32_t sp_index_cap;

/* Marks not yet taken by the writer. A leaf lock: nothing is called under it. */
struct sp_mark {
	uint32_t kind;
	uint64_t time_ns;
};
static pthread_mutex_t sp_mark_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_mark *sp_marks;
static uint32_t sp_n_marks, sp_cap_marks;

static uint64_t sp_range_hash(uint32_t parent, const char *name, uint32_t flags, uint32_t anchor)
{
	uint64_t h = (0xcbf29ce484222325ull ^ parent ^ (uint64_t)flags << 32) * 0x100000001b3ull;
	h = (h ^ anchor) * 0x100000001b3ull;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h ^ h >> 29;
}

static uint32_t *sp_range_slot(uint32_t parent, const char *name, uint32_t flags, uint32_t anchor)
{
	uint32_t mask = sp_index_cap - 1;
	for (uint32_t j = (uint32_t)sp_range_hash(parent, name, flags, anchor) & mask;;
	     j = (j + 1) & mask) {
		uint32_t id = sp_range_index[j];
		if (!id)
			return &sp_range_index[j];
		const struct sp_range_node *r = &sp_ranges[id - 1];
		if (r->parent == parent && r->flags == flags && r->anchor == anchor &&
		    !strcmp(r->name, name))
			return &sp_range_index[j];
	}
}

/* Doubles the index (or makes the first); false on allocation failure. */
static bool sp_range_index_grow(void)
{
	uint32_t cap = sp_index_cap ? sp_index_cap * 2 : 128;
	uint32_t *a = calloc(cap, sizeof(*a));
	if (!a)
		return false;
	free(sp_range_index);
	sp_range_index = a;
	sp_index_cap = cap;
	for (uint32_t i = 0; i < sp_n_ranges; i++) {
		const struct sp_range_node *r = &sp_ranges[i];
		*sp_range_slot(r->parent, r->name, r->flags, r->anchor) = i + 1;
	}
	return true;
}

uint32_t sp_range_intern(uint32_t parent, const char *name, uint32_t flags, uint32_t anchor)
{
	uint32_t id = 0;
	pthread_mutex_lock(&sp_range_lock);
	if ((sp_n_ranges + 1) * 2 > sp_index_cap && !sp_range_index_grow())
		goto out;
	uint32_t *slot = sp_range_slot(parent, name, flags, anchor);
	if (*slot) {
		id = *slot;
		goto out;
	}
	if (sp_n_ranges == sp_cap_ranges) {
		uint32_t cap = sp_cap_ranges ? sp_cap_ranges * 2 : 64;
		struct sp_range_node *a = realloc(sp_ranges, cap * sizeof(*a));
		if (!a)
			goto out;
		sp_ranges = a;
		sp_cap_ranges = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		goto out;
	sp_ranges[sp_n_ranges].parent = parent;
	sp_ranges[sp_n_ranges].flags = flags;
	sp_ranges[sp_n_ranges].anchor = anchor;
	sp_ranges[sp_n_ranges].name = copy;
	id = ++sp_n_ranges;
	*slot = id;
out:
	pthread_mutex_unlock(&sp_range_lock);
	return id;
}

uint32_t sp_ranges_snapshot(uint32_t from, struct sp_prof_range *out, uint32_t max)
{
	uint32_t n = 0;
	pthread_mutex_lock(&sp_range_lock);
	for (uint32_t i = from; i < sp_n_ranges && n < max; i++, n++)
		out[n] = (struct sp_prof_range){.id = i + 1,
						.parent = sp_ranges[i].parent,
						.name = sp_ranges[i].name,
						.flags = sp_ranges[i].flags,
						.anchor = sp_ranges[i].anchor};
	pthread_mutex_unlock(&sp_range_lock);
	return n;
}

void sp_mark_add(uint32_t kind)
{
	uint64_t t = sp_now_ns() - sp_g.start_mono_ns;
	pthread_mutex_lock(&sp_mark_lock);
	if (sp_n_marks == sp_cap_marks) {
		uint32_t cap = sp_cap_marks ? sp_cap_marks * 2 : 16;
		struct sp_mark *a = realloc(sp_marks, cap * sizeof(*a));
		if (!a)
			goto out;
		sp_marks = a;
		sp_cap_marks = cap;
	}
	sp_marks[sp_n_marks++] = (struct sp_mark){.kind = kind, .time_ns = t};
out:
	pthread_mutex_unlock(&sp_mark_lock);
}

uint32_t sp_marks_take(uint32_t *kind, uint64_t *time_ns, uint32_t max)
{
	pthread_mutex_lock(&sp_mark_lock);
	uint32_t n = sp_n_marks < max ? sp_n_marks : max;
	for (uint32_t i = 0; i < n; i++) {
		kind[i] = sp_marks[i].kind;
		time_ns[i] = sp_marks[i].time_ns;
	}
	memmove(sp_marks, sp_marks + n, (sp_n_marks - n) * sizeof(*sp_marks));
	sp_n_marks -= n;
	pthread_mutex_unlock(&sp_mark_lock);
	return n;
}

void sp_ranges_lock(void)
{
	pthread_mutex_lock(&sp_range_lock);
}

void sp_ranges_unlock(void)
{
	pthread_mutex_unlock(&sp_range_lock);
}

void sp_marks_lock(void)
{
	pthread_mutex_lock(&sp_mark_lock);
}

void sp_marks_unlock(void)
{
	pthread_mutex_unlock(&sp_mark_lock);
}

void sp_ranges_atfork_child(bool window_open)
{
	pthread_mutex_init(&sp_mark_lock, NULL);
	pthread_mutex_init(&sp_range_lock, NULL);
	sp_n_marks = 0;
	if (window_open && sp_cap_marks)
		sp_marks[sp_n_marks++] =
		    (struct sp_mark){.kind = SP_MARK_WINDOW_BEGIN, .time_ns = 0};
}
