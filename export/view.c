/*
 * view.c - a model's stacks rewritten as operator chains or module paths.
 *
 * What a view's stack is depends on one thing per model stack (its
 * operators) or per range node (its module path), so each is worked out
 * once: frames are classified once each, range nodes resolved once each,
 * and the samples only look their stack up.
 */
#define _GNU_SOURCE /* qsort_r */
#include "export/view.h"
#include "symbolize/arena.h"
#include "export/htab.h"
#include "export/ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SP_NONE UINT32_MAX

struct sp_view {
	struct sp_model m; /* what the writers read */
	const struct sp_model *src;
	struct sp_arena strs; /* frame names the view made */
	size_t frames_cap, stacks_cap;
	struct sp_htab frame_idx, stack_idx;
	uint32_t *pool; /* every stack's frame ids back to back */
	size_t n_pool, pool_cap;
	size_t *stack_off; /* per stack: its offset in pool */
	size_t stack_off_cap;
	uint32_t *zeros;   /* every stack's locs: a view's frames have no address */
	uint32_t cur[512]; /* the stack being made */
	size_t cur_n;
	const struct sp_mframe *probe_frame;
	/* per module-path frame: the length of its path without the class */
	uint32_t *path_len;
	size_t path_len_cap;
};

static bool sp_str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || !strcmp(a, b);
}

static bool sp_vframe_eq(const void *ctx, uint32_t idx)
{
	const struct sp_view *v = ctx;
	const struct sp_mframe *x = &v->m.frames[idx], *y = v->probe_frame;
	/* a Python frame is its line too */
	return x->kind == y->kind && sp_str_eq(x->func, y->func) && sp_str_eq(x->file, y->file) &&
	       x->line == y->line;
}

/* Interns f (its strings must outlive the view); the frame id, or -ENOMEM. */
static int64_t sp_vframe(struct sp_view *v, const struct sp_mframe *f)
{
	uint64_t h = sp_hash_u64(sp_hash_str(SP_HASH_SEED, f->func), (uint32_t)f->kind);
	h = sp_hash_u64(sp_hash_str(h, f->file ? f->file : ""), f->line);
	v->probe_frame = f;
	int64_t id = sp_htab_find(&v->frame_idx, h, sp_vframe_eq, v);
	if (id >= 0)
		return id;
	struct sp_model *m = &v->m;
	if (sp_array_grow((void **)&m->frames, &v->frames_cap, m->n_frames + 1,
			  sizeof(*m->frames)) ||
	    sp_htab_insert(&v->frame_idx, h, (uint32_t)m->n_frames))
		return -ENOMEM;
	m->frames[m->n_frames] = *f;
	return (int64_t)m->n_frames++;
}

/* A frame named func of kind, copying func into the view first when copy is set. */
static int64_t sp_vframe_named(struct sp_view *v, const char *func, int kind, bool copy)
{
	struct sp_mframe f = {.func = func, .kind = kind};
	int64_t id = sp_vframe(v, &f);
	if (id < 0 || !copy || v->m.frames[id].func != func)
		return id;
	/* new: it must not point into the caller's buffer */
	char *s = sp_arena_strdup(&v->strs, func);
	if (!s)
		return -ENOMEM;
	v->m.frames[id].func = s;
	return id;
}

static int sp_cur_push(struct sp_view *v, int64_t frame)
{
	if (frame < 0)
		return (int)frame;
	/* deeper than any real operator chain or module nesting: keep the outer part */
	if (v->cur_n < sizeof(v->cur) / sizeof(v->cur[0]))
		v->cur[v->cur_n++] = (uint32_t)frame;
	return 0;
}

static bool sp_vstack_eq(const void *ctx, uint32_t idx)
{
	const struct sp_view *v = ctx;
	return v->m.stacks[idx].n == v->cur_n &&
	       !memcmp(v->pool + v->stack_off[idx], v->cur, v->cur_n * sizeof(uint32_t));
}

/* Interns v->cur as a stack; its index, or -ENOMEM. */
static int64_t sp_vstack(struct sp_view *v)
{
	uint64_t h = sp_hash_bytes(SP_HASH_SEED, v->cur, v->cur_n * sizeof(uint32_t));
	int64_t id = sp_htab_find(&v->stack_idx, h, sp_vstack_eq, v);
	if (id >= 0)
		return id;
	struct sp_model *m = &v->m;
	if (sp_array_grow((void **)&m->stacks, &v->stacks_cap, m->n_stacks + 1,
			  sizeof(*m->stacks)) ||
	    sp_array_grow((void **)&v->stack_off, &v->stack_off_cap, m->n_stacks + 1,
			  sizeof(*v->stack_off)) ||
	    sp_array_grow((void **)&v->pool, &v->pool_cap, v->n_pool + v->cur_n,
			  sizeof(*v->pool)) ||
	    sp_htab_insert(&v->stack_idx, h, (uint32_t)m->n_stacks))
		return -ENOMEM;
	memcpy(v->pool + v->n_pool, v->cur, v->cur_n * sizeof(uint32_t));
	v->stack_off[m->n_stacks] = v->n_pool;
	v->n_pool += v->cur_n;
	m->stacks[m->n_stacks] = (struct sp_mstack){.n = (uint32_t)v->cur_n};
	return (int64_t)m->n_stacks++;
}

/* Starts v->cur with the thread root of source stack s, if it has one. */
static int sp_cur_start(struct sp_view *v, const struct sp_mstack *s)
{
	v->cur_n = 0;
	if (!s || !s->n)
		return 0;
	const struct sp_mframe *f = &v->src->frames[s->frames[0]];
	return f->kind == SP_MFRAME_THREAD ? sp_cur_push(v, sp_vframe(v, f)) : 0;
}

/* ---------------------------------------------------------------- by operator */

struct sp_opclass {
	uint32_t frame;		 /* view frame of the operator, or SP_NONE: not an operator */
	const char *struct_name; /* at::_ops struct: the same call when redispatched */
	bool redispatch;
};

/*
 * Every source frame classified once; map[i] gets source stack i's view
 * stack. With python set, the Python frames stay in it, around the
 * operators they called.
 */
static int sp_view_ops(struct sp_view *v, uint32_t *map, bool python)
{
	const struct sp_model *src = v->src;
	struct sp_opclass *cls = calloc(src->n_frames ? src->n_frames : 1, sizeof(*cls));
	struct sp_op op;
	int err = -ENOMEM;
	int64_t none = sp_vframe_named(v, "[no operator]", SP_MFRAME_OP, false);
	if (!cls || none < 0)
		goto out;
	for (size_t i = 0; i < src->n_frames; i++) {
		const struct sp_mframe *f = &src->frames[i];
		cls[i].frame = SP_NONE;
		if (python && f->kind == SP_MFRAME_PYTHON) {
			int64_t id = sp_vframe(v, f);
			if (id < 0)
				goto out;
			cls[i].frame = (uint32_t)id;
			continue;
		}
		/* code only: a range or thread named like an operator is not one */
		if (f->kind >= SP_MFRAME_RANGE || !sp_ops_parse(f->func, &op))
			continue;
		int64_t id = sp_vframe_named(v, op.name, SP_MFRAME_OP, true);
		cls[i].struct_name = sp_arena_strdup(&v->strs, op.unambiguous);
		if (id < 0 || !cls[i].struct_name)
			goto out;
		cls[i].frame = (uint32_t)id;
		cls[i].redispatch = op.redispatch;
	}
	for (size_t i = 0; i < src->n_stacks; i++) {
		const struct sp_mstack *s = &src->stacks[i];
		if ((err = sp_cur_start(v, s)))
			goto out;
		size_t start = v->cur_n, inner = start; /* past the innermost operator */
		const char *last = NULL;
		for (uint32_t k = 0; k < s->n; k++) {
			const struct sp_opclass *c = &cls[s->frames[k]];
			if (c->frame == SP_NONE)
				continue;
			if (!c->struct_name) {
				/* a Python frame (python set): context, not an operator */
				if ((err = sp_cur_push(v, c->frame)))
					goto out;
				continue;
			}
			/* the backend's redispatch of the call just entered is that call */
			if (c->redispatch && last && !strcmp(last, c->struct_name))
				continue;
			last = c->struct_name;
			if ((err = sp_cur_push(v, c->frame)))
				goto out;
			inner = v->cur_n;
		}
		if (inner > start)
			v->cur_n = inner; /* Python inside the innermost operator: its time */
		else if ((err = sp_cur_push(v, none)))
			goto out;
		int64_t st = sp_vstack(v);
		if (st < 0) {
			err = (int)st;
			goto out;
		}
		map[i] = (uint32_t)st;
	}
	err = 0;
out:
	free(cls);
	return err;
}

/* ---------------------------------------------------------------- by module path */

/*
 * inner[r] is range node r's innermost module path (a view frame), or
 * SP_NONE when no module range encloses it; parent[f] is the path frame f
 * is nested in. Range nodes are resolved outermost first, without
 * recursion: a corrupt profile may chain thousands of them, or in a loop.
 */
static int sp_module_inner(struct sp_view *v, uint32_t id, uint32_t *inner, uint32_t **parent,
			   size_t *parent_cap, uint32_t *todo)
{
	const struct sp_profile *p = v->src->prof;
	size_t n = 0;
	uint32_t r = id;
	/* the unresolved nodes from id outward; inner[r] == SP_NONE - 1 marks unresolved */
	while (r && r <= p->n_ranges && inner[r] == SP_NONE - 1 && n < p->n_ranges) {
		todo[n++] = r;
		r = p->ranges[r - 1].parent;
	}
	uint32_t outer = r && r <= p->n_ranges && inner[r] != SP_NONE - 1 ? inner[r] : SP_NONE;
	char buf[4096];
	while (n-- > 0) {
		const struct sp_prof_range *rg = &p->ranges[todo[n] - 1];
		if (rg->flags & SP_RANGE_MODULE) {
			const char *seg = rg->name && rg->name[0] ? rg->name : "[unnamed module]";
			int len;
			if (outer == SP_NONE)
				len = snprintf(buf, sizeof(buf), "%s", seg);
			else
				len = snprintf(buf, sizeof(buf), "%.*s/%s", (int)v->path_len[outer],
					       v->m.frames[outer].func, seg);
			size_t plen = len < 0			  ? 0
				      : (size_t)len < sizeof(buf) ? (size_t)len
								  : sizeof(buf) - 1;
			/* as torch's with_modules: the module's class after its path,
			 * but for the model, whose segment is its class already */
			if (v->src->module_classes && rg->cls && rg->cls[0] && strcmp(rg->cls, seg))
				snprintf(buf + plen, sizeof(buf) - plen, " (%s)", rg->cls);
			int64_t f = sp_vframe_named(v, buf, SP_MFRAME_MODPATH, true);
			if (f < 0 ||
			    sp_array_grow((void **)parent, parent_cap, v->m.n_frames,
					  sizeof(**parent)) ||
			    sp_array_grow((void **)&v->path_len, &v->path_len_cap, v->m.n_frames,
					  sizeof(*v->path_len)))
				return -ENOMEM;
			(*parent)[f] = outer;
			v->path_len[f] = (uint32_t)plen;
			outer = (uint32_t)f;
		}
		inner[todo[n]] = outer;
	}
	return 0;
}

/* map[i] gets sample i's view stack. */
static int sp_view_modules(struct sp_view *v, uint32_t *map)
{
	const struct sp_model *src = v->src;
	const struct sp_profile *p = src->prof;
	size_t nr = p ? p->n_ranges : 0;
	uint32_t *inner = malloc((nr + 1) * sizeof(*inner));
	uint32_t *todo = malloc((nr + 1) * sizeof(*todo));
	uint32_t *parent = NULL, chain[256];
	size_t parent_cap = 0;
	int err = -ENOMEM;
	int64_t none = sp_vframe_named(v, "[no module]", SP_MFRAME_MODPATH, false);
	if (!inner || !todo || none < 0)
		goto out;
	for (size_t r = 0; r <= nr; r++)
		inner[r] = SP_NONE - 1;
	inner[0] = SP_NONE;
	for (size_t i = 0; i < src->n_samples; i++) {
		const struct sp_msample *s = &src->samples[i];
		uint32_t r = s->range <= nr ? s->range : 0;
		if (inner[r] == SP_NONE - 1 &&
		    (err = sp_module_inner(v, r, inner, &parent, &parent_cap, todo)))
			goto out;
		if ((err = sp_cur_start(v, &src->stacks[s->stack])))
			goto out;
		size_t n = 0;
		for (uint32_t f = inner[r]; f != SP_NONE && n < 256; f = parent[f])
			chain[n++] = f;
		if (!n && (err = sp_cur_push(v, none)))
			goto out;
		while (n-- > 0)
			if ((err = sp_cur_push(v, chain[n])))
				goto out;
		int64_t st = sp_vstack(v);
		if (st < 0) {
			err = (int)st;
			goto out;
		}
		map[i] = (uint32_t)st;
	}
	err = 0;
out:
	free(inner);
	free(todo);
	free(parent);
	return err;
}

/* ---------------------------------------------------------------- pool threads */

/* Whether view stack st is its "none" frame alone, after a thread root. */
static bool sp_vstack_is_none(const struct sp_view *v, uint32_t st, int64_t none)
{
	const struct sp_mstack *s = &v->m.stacks[st];
	const uint32_t *f = v->pool + v->stack_off[st];
	size_t root = s->n && v->m.frames[f[0]].kind == SP_MFRAME_THREAD;
	return s->n == root + 1 && f[root] == (uint32_t)none;
}

/* Whether source stack st has a Python frame. */
static bool sp_stack_has_python(const struct sp_model *m, uint32_t st)
{
	const struct sp_mstack *s = &m->stacks[st];
	for (uint32_t k = 0; k < s->n; k++)
		if (m->frames[s->frames[k]].kind == SP_MFRAME_PYTHON)
			return true;
	return false;
}

static int sp_cmp_sample_time(const void *a, const void *b, void *samples)
{
	const struct sp_msample *s = samples;
	uint64_t x = s[*(const uint32_t *)a].time_ns, y = s[*(const uint32_t *)b].time_ns;
	return x < y ? -1 : x > y;
}

/*
 * A pool thread's work is its caller's operator (view.h). Threads that
 * never show an operator (a module) or a Python frame are pool threads;
 * each of their samples that is "none" alone takes the view stack of the
 * nearest sample in time of the other threads, if one is within two
 * sampling periods, or of the samples around it when one thread has the
 * same stack just before and just after it (within 50 periods: a caller
 * that was off the CPU meanwhile), under its own thread root. The weights
 * move with it.
 */
static int sp_view_lend(struct sp_view *v, int64_t none)
{
	const struct sp_model *src = v->src;
	struct sp_model *vm = &v->m;
	size_t n = src->n_samples, nt = src->n_threads;
	bool *issuer = calloc(nt ? nt : 1, sizeof(*issuer));
	uint32_t *by_time = malloc((n ? n : 1) * sizeof(*by_time));
	int err = -ENOMEM;
	if (!issuer || !by_time)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct sp_msample *s = &vm->samples[i];
		if (s->thread < nt && !issuer[s->thread])
			issuer[s->thread] = !sp_vstack_is_none(v, s->stack, none) ||
					    sp_stack_has_python(src, src->samples[i].stack);
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (vm->samples[i].thread < nt && issuer[vm->samples[i].thread])
			by_time[m++] = (uint32_t)i;
	err = 0;
	if (!m || m == n)
		goto out; /* no pool thread, or no one to lend to it */
	qsort_r(by_time, m, sizeof(*by_time), sp_cmp_sample_time, vm->samples);
	uint32_t hz = src->prof ? src->prof->header.freq_hz : 0;
	uint64_t window = 2 * (hz ? 1000000000u / hz : 10000000u);
	for (size_t i = 0; i < n; i++) {
		struct sp_msample *s = &vm->samples[i];
		if (s->thread >= nt || issuer[s->thread] || !sp_vstack_is_none(v, s->stack, none))
			continue;
		/* the first issuing sample at or after s, and the one before it */
		size_t lo = 0, hi = m;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (vm->samples[by_time[mid]].time_ns < s->time_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		const struct sp_msample *near = NULL;
		/* the caller was inside one operator at its samples just before
		 * and just after s: s is that operator's work, however long the
		 * caller was off the CPU between them (on a busy machine its
		 * samples are often further apart in time than the window) */
		if (lo > 0 && lo < m) {
			const struct sp_msample *a = &vm->samples[by_time[lo - 1]];
			const struct sp_msample *b = &vm->samples[by_time[lo]];
			if (a->stack == b->stack && a->thread == b->thread &&
			    b->time_ns - a->time_ns <= 25 * window)
				near = a;
		}
		uint64_t best = near ? 0 : window + 1;
		for (size_t k = lo > 0 ? lo - 1 : 0; k < m && k <= lo; k++) {
			const struct sp_msample *c = &vm->samples[by_time[k]];
			uint64_t d = c->time_ns > s->time_ns ? c->time_ns - s->time_ns
							     : s->time_ns - c->time_ns;
			if (d < best) {
				best = d;
				near = c;
			}
		}
		if (!near || sp_vstack_is_none(v, near->stack, none))
			continue;
		/* s's own thread root, then the issuing sample's chain */
		if ((err = sp_cur_start(v, &src->stacks[src->samples[i].stack])))
			goto out;
		const struct sp_mstack *ns = &vm->stacks[near->stack];
		size_t off = v->stack_off[near->stack];
		size_t root = ns->n && vm->frames[v->pool[off]].kind == SP_MFRAME_THREAD;
		for (size_t k = root; k < ns->n; k++)
			if ((err = sp_cur_push(v, v->pool[off + k])))
				goto out;
		int64_t st = sp_vstack(v);
		if (st < 0) {
			err = (int)st;
			goto out;
		}
		vm->stacks[s->stack].weight_ns -= s->weight_ns;
		vm->stacks[s->stack].samples--;
		s->stack = (uint32_t)st;
		vm->stacks[st].weight_ns += s->weight_ns;
		vm->stacks[st].samples++;
	}
out:
	free(issuer);
	free(by_time);
	return err;
}

/* ---------------------------------------------------------------- the view */

struct sp_view *sp_view_new(const struct sp_model *m, enum sp_view_by by)
{
	struct sp_view *v = calloc(1, sizeof(*v));
	uint32_t *map = NULL;
	int err = -ENOMEM;
	if (!v)
		goto out;
	v->src = m;
	sp_arena_init(&v->strs);
	sp_htab_init(&v->frame_idx);
	sp_htab_init(&v->stack_idx);
	struct sp_model *vm = &v->m;
	vm->prof = m->prof;
	vm->sym = m->sym;
	/* the threads are the model's: a view changes stacks, not who ran them */
	vm->threads = (struct sp_mthread *)m->threads;
	vm->n_threads = m->n_threads;
	vm->total_weight_ns = m->total_weight_ns;
	vm->total_samples = m->total_samples;
	vm->outside_windows = m->outside_windows;
	vm->event = m->event;
	vm->samples = malloc((m->n_samples ? m->n_samples : 1) * sizeof(*vm->samples));
	bool ops = by == SP_VIEW_OP || by == SP_VIEW_OP_PYTHON;
	size_t n_map = ops ? m->n_stacks : m->n_samples;
	map = malloc((n_map ? n_map : 1) * sizeof(*map));
	if (!vm->samples || !map)
		goto out;
	err = ops ? sp_view_ops(v, map, by == SP_VIEW_OP_PYTHON) : sp_view_modules(v, map);
	if (err)
		goto out;
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct sp_msample *s = &m->samples[i];
		uint32_t st = map[ops ? s->stack : i];
		vm->samples[i] = *s;
		vm->samples[i].stack = st;
	}
	vm->n_samples = m->n_samples;
	if (ops) {
		/* a model stack's weight is its samples', so stacks can be added up whole */
		for (size_t i = 0; i < m->n_stacks; i++) {
			vm->stacks[map[i]].weight_ns += m->stacks[i].weight_ns;
			vm->stacks[map[i]].samples += m->stacks[i].samples;
		}
	} else {
		for (size_t i = 0; i < m->n_samples; i++) {
			vm->stacks[map[i]].weight_ns += m->samples[i].weight_ns;
			vm->stacks[map[i]].samples++;
		}
	}
	/* pool threads' samples take their caller's operator (module path) */
	int64_t none = ops ? sp_vframe_named(v, "[no operator]", SP_MFRAME_OP, false)
			   : sp_vframe_named(v, "[no module]", SP_MFRAME_MODPATH, false);
	if ((err = none < 0 ? (int)none : sp_view_lend(v, none)))
		goto out;
	size_t deepest = 1;
	for (size_t i = 0; i < vm->n_stacks; i++)
		deepest = vm->stacks[i].n > deepest ? vm->stacks[i].n : deepest;
	v->zeros = calloc(deepest, sizeof(*v->zeros));
	if (!v->zeros)
		goto out;
	for (size_t i = 0; i < vm->n_stacks; i++) {
		vm->stacks[i].frames = v->pool + v->stack_off[i];
		vm->stacks[i].locs = v->zeros;
	}
	err = 0;
out:
	free(map);
	if (err) {
		sp_view_free(v);
		errno = -err;
		return NULL;
	}
	return v;
}

const struct sp_model *sp_view_model(const struct sp_view *v)
{
	return &v->m;
}

void sp_view_free(struct sp_view *v)
{
	if (!v)
		return;
	sp_arena_release(&v->strs);
	sp_htab_release(&v->frame_idx);
	sp_htab_release(&v->stack_idx);
	free(v->m.frames);
	free(v->m.stacks);
	free(v->m.samples);
	free(v->pool);
	free(v->stack_off);
	free(v->zeros);
	free(v->path_len);
	free(v);
}
