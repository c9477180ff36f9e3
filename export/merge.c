/*
 * merge.c - several models interned into one.
 *
 * Frames are interned by everything a writer reads of them, stacks by
 * their frame ids; each source frame and each source stack is looked up
 * once, and the samples only follow the stack map.
 */
#include "export/merge.h"
#include "symbolize/arena.h"
#include "export/htab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sp_merge {
	struct sp_model m;    /* what the writers read */
	struct sp_arena strs; /* process root names */
	size_t frames_cap, stacks_cap;
	struct sp_htab frame_idx, stack_idx;
	uint32_t *pool; /* every stack's frame ids back to back */
	size_t n_pool, pool_cap;
	size_t *stack_off; /* per stack: its offset in pool */
	size_t stack_off_cap;
	uint32_t *zeros; /* every stack's locs: a merge keeps no addresses */
	uint32_t *cur;	 /* the stack being made */
	size_t cur_n, cur_cap;
	const struct sp_mframe *probe_frame;
};

static bool sp_str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || !strcmp(a, b);
}

static uint64_t sp_gframe_hash(const struct sp_mframe *f)
{
	uint64_t h = sp_hash_str(SP_HASH_SEED, f->func);
	h = sp_hash_str(h, f->file);
	h = sp_hash_str(h, f->module);
	return sp_hash_u64(h, ((uint64_t)f->line << 32) ^ (uint32_t)f->kind);
}

static bool sp_gframe_eq(const void *ctx, uint32_t idx)
{
	const struct sp_merge *g = ctx;
	const struct sp_mframe *x = &g->m.frames[idx], *y = g->probe_frame;
	/* the offset is per process (where the module was loaded): not compared */
	return x->line == y->line && x->def_line == y->def_line && x->kind == y->kind &&
	       sp_str_eq(x->func, y->func) && sp_str_eq(x->file, y->file) &&
	       sp_str_eq(x->module, y->module) && sp_str_eq(x->import_path, y->import_path);
}

/* Interns f (its strings must outlive the merge); the frame id, or -ENOMEM. */
static int64_t sp_gframe(struct sp_merge *g, const struct sp_mframe *f)
{
	uint64_t h = sp_gframe_hash(f);
	g->probe_frame = f;
	int64_t id = sp_htab_find(&g->frame_idx, h, sp_gframe_eq, g);
	if (id >= 0)
		return id;
	struct sp_model *m = &g->m;
	if (sp_array_grow((void **)&m->frames, &g->frames_cap, m->n_frames + 1,
			  sizeof(*m->frames)) ||
	    sp_htab_insert(&g->frame_idx, h, (uint32_t)m->n_frames))
		return -ENOMEM;
	m->frames[m->n_frames] = *f;
	return (int64_t)m->n_frames++;
}

static bool sp_gstack_eq(const void *ctx, uint32_t idx)
{
	const struct sp_merge *g = ctx;
	return g->m.stacks[idx].n == g->cur_n &&
	       !memcmp(g->pool + g->stack_off[idx], g->cur, g->cur_n * sizeof(uint32_t));
}

/* Interns g->cur as a stack; its index, or -ENOMEM. */
static int64_t sp_gstack(struct sp_merge *g)
{
	uint64_t h = sp_hash_bytes(SP_HASH_SEED, g->cur, g->cur_n * sizeof(uint32_t));
	int64_t id = sp_htab_find(&g->stack_idx, h, sp_gstack_eq, g);
	if (id >= 0)
		return id;
	struct sp_model *m = &g->m;
	if (sp_array_grow((void **)&m->stacks, &g->stacks_cap, m->n_stacks + 1,
			  sizeof(*m->stacks)) ||
	    sp_array_grow((void **)&g->stack_off, &g->stack_off_cap, m->n_stacks + 1,
			  sizeof(*g->stack_off)) ||
	    sp_array_grow((void **)&g->pool, &g->pool_cap, g->n_pool + g->cur_n,
			  sizeof(*g->pool)) ||
	    sp_htab_insert(&g->stack_idx, h, (uint32_t)m->n_stacks))
		return -ENOMEM;
	memcpy(g->pool + g->n_pool, g->cur, g->cur_n * sizeof(uint32_t));
	g->stack_off[m->n_stacks] = g->n_pool;
	g->n_pool += g->cur_n;
	m->stacks[m->n_stacks] = (struct sp_mstack){.n = (uint32_t)g->cur_n};
	return (int64_t)m->n_stacks++;
}

/* The process root of src: "<program> (pid N)", the program's file name
 * from its command line. */
static int64_t sp_gprocess(struct sp_merge *g, const struct sp_model *src, size_t i)
{
	const struct sp_profile *p = src->prof;
	const char *cmd = p && p->header.cmdline ? p->header.cmdline : "";
	size_t len = strcspn(cmd, " ");
	const char *base = cmd;
	for (size_t k = 0; k < len; k++)
		if (cmd[k] == '/')
			base = cmd + k + 1;
	len -= (size_t)(base - cmd);
	char *name = p ? sp_arena_printf(&g->strs, "%.*s (pid %d)", (int)len,
					 len ? base : "[process]", (int)p->header.pid)
		       : sp_arena_printf(&g->strs, "[process %zu]", i + 1);
	if (!name)
		return -ENOMEM;
	struct sp_mframe f = {.func = name, .kind = SP_MFRAME_PROCESS};
	return sp_gframe(g, &f);
}

/* Adds src's frames, stacks, threads and samples to g. */
static int sp_merge_add(struct sp_merge *g, const struct sp_model *src, size_t i, bool per_process)
{
	struct sp_model *m = &g->m;
	uint32_t *fmap = malloc((src->n_frames ? src->n_frames : 1) * sizeof(*fmap));
	uint32_t *smap = malloc((src->n_stacks ? src->n_stacks : 1) * sizeof(*smap));
	int64_t root = -1;
	int err = -ENOMEM;
	if (!fmap || !smap)
		goto out;
	if (per_process && (root = sp_gprocess(g, src, i)) < 0)
		goto out;
	for (size_t k = 0; k < src->n_frames; k++) {
		int64_t id = sp_gframe(g, &src->frames[k]);
		if (id < 0)
			goto out;
		fmap[k] = (uint32_t)id;
	}
	for (size_t k = 0; k < src->n_stacks; k++) {
		const struct sp_mstack *s = &src->stacks[k];
		if (sp_array_grow((void **)&g->cur, &g->cur_cap, (size_t)s->n + 1, sizeof(*g->cur)))
			goto out;
		g->cur_n = 0;
		if (root >= 0)
			g->cur[g->cur_n++] = (uint32_t)root;
		for (uint32_t q = 0; q < s->n; q++)
			g->cur[g->cur_n++] = fmap[s->frames[q]];
		int64_t st = sp_gstack(g);
		if (st < 0)
			goto out;
		smap[k] = (uint32_t)st;
		m->stacks[st].weight_ns += s->weight_ns;
		m->stacks[st].samples += s->samples;
	}
	size_t t0 = m->n_threads, s0 = m->n_samples;
	for (size_t k = 0; k < src->n_threads; k++)
		m->threads[t0 + k] = src->threads[k];
	for (size_t k = 0; k < src->n_samples; k++) {
		struct sp_msample s = src->samples[k];
		s.thread += (uint32_t)t0;
		s.stack = smap[s.stack];
		s.range = 0; /* raw range ids are per profile */
		m->samples[s0 + k] = s;
	}
	m->n_threads += src->n_threads;
	m->n_samples += src->n_samples;
	m->total_weight_ns += src->total_weight_ns;
	m->total_samples += src->total_samples;
	m->outside_windows += src->outside_windows;
	m->windowed = m->windowed || src->windowed;
	err = 0;
out:
	free(fmap);
	free(smap);
	return err;
}

struct sp_merge *sp_merge_new(const struct sp_model *const *src, size_t n, bool per_process)
{
	struct sp_merge *g = NULL;
	int err = -EINVAL;
	if (!n)
		goto out;
	err = -ENOMEM;
	g = calloc(1, sizeof(*g));
	if (!g)
		goto out;
	sp_arena_init(&g->strs);
	sp_htab_init(&g->frame_idx);
	sp_htab_init(&g->stack_idx);
	struct sp_model *m = &g->m;
	m->prof = src[0]->prof;
	m->sym = src[0]->sym;
	m->module_classes = src[0]->module_classes;
	m->event = src[0]->event; /* the command asked every profile for one kind */
	size_t nt = 0, ns = 0;
	for (size_t i = 0; i < n; i++) {
		nt += src[i]->n_threads;
		ns += src[i]->n_samples;
	}
	m->threads = malloc((nt ? nt : 1) * sizeof(*m->threads));
	m->samples = malloc((ns ? ns : 1) * sizeof(*m->samples));
	if (!m->threads || !m->samples)
		goto out;
	for (size_t i = 0; i < n; i++)
		if ((err = sp_merge_add(g, src[i], i, per_process)))
			goto out;
	size_t deepest = 1;
	for (size_t i = 0; i < m->n_stacks; i++)
		deepest = m->stacks[i].n > deepest ? m->stacks[i].n : deepest;
	err = -ENOMEM;
	g->zeros = calloc(deepest, sizeof(*g->zeros));
	if (!g->zeros)
		goto out;
	for (size_t i = 0; i < m->n_stacks; i++) {
		m->stacks[i].frames = g->pool + g->stack_off[i];
		m->stacks[i].locs = g->zeros;
	}
	err = 0;
out:
	if (err) {
		sp_merge_free(g);
		errno = -err;
		return NULL;
	}
	return g;
}

const struct sp_model *sp_merge_model(const struct sp_merge *g)
{
	return &g->m;
}

void sp_merge_free(struct sp_merge *g)
{
	if (!g)
		return;
	sp_arena_release(&g->strs);
	sp_htab_release(&g->frame_idx);
	sp_htab_release(&g->stack_idx);
	free(g->m.frames);
	free(g->m.stacks);
	free(g->m.samples);
	free(g->m.threads);
	free(g->pool);
	free(g->stack_off);
	free(g->zeros);
	free(g->cur);
	free(g);
}
