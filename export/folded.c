#include "export/folded.h"
#include "export/htab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sp_folded_init(struct sp_folded *f, struct sp_labels *labels)
{
	memset(f, 0, sizeof(*f));
	f->labels = labels;
}

void sp_folded_release(struct sp_folded *f)
{
	free(f->stacks);
	free(f->ids);
	memset(f, 0, sizeof(*f));
}

struct sp_fold_ctx {
	const struct sp_folded *f;
	const uint32_t *probe;
	uint32_t n;
};

static bool sp_fold_eq(const void *ctx, uint32_t idx)
{
	const struct sp_fold_ctx *c = ctx;
	const struct sp_fstack *s = &c->f->stacks[idx];
	return s->n == c->n && !memcmp(c->f->ids + s->off, c->probe, c->n * sizeof(uint32_t));
}

int sp_folded_add(struct sp_folded *f, const struct sp_model *m, int side)
{
	int err = -ENOMEM;
	struct sp_htab idx;
	size_t stacks_cap = f->n_stacks, ids_len = 0, ids_cap = 0;
	uint32_t *seq = NULL;
	uint32_t max_n = 1;
	sp_htab_init(&idx);
	uint32_t *lab = sp_labels_map(f->labels, m);
	if (!lab)
		goto out;
	for (size_t i = 0; i < f->n_stacks; i++) {
		ids_len += f->stacks[i].n;
		if (sp_htab_insert(&idx,
				   sp_hash_bytes(SP_HASH_SEED, f->ids + f->stacks[i].off,
						 f->stacks[i].n * sizeof(uint32_t)),
				   (uint32_t)i))
			goto out;
	}
	ids_cap = ids_len;
	for (size_t i = 0; i < m->n_stacks; i++)
		if (m->stacks[i].n > max_n)
			max_n = m->stacks[i].n;
	seq = malloc(max_n * sizeof(*seq));
	if (!seq)
		goto out;

	for (size_t i = 0; i < m->n_stacks; i++) {
		const struct sp_mstack *ms = &m->stacks[i];
		if (!ms->samples)
			continue;
		for (uint32_t k = 0; k < ms->n; k++)
			seq[k] = lab[ms->frames[k]];
		uint64_t h = sp_hash_bytes(SP_HASH_SEED, seq, ms->n * sizeof(uint32_t));
		struct sp_fold_ctx c = {f, seq, ms->n};
		int64_t j = sp_htab_find(&idx, h, sp_fold_eq, &c);
		if (j < 0) {
			if (f->n_stacks == stacks_cap) {
				size_t cap = stacks_cap ? stacks_cap * 2 : 256;
				void *p = realloc(f->stacks, cap * sizeof(*f->stacks));
				if (!p)
					goto out;
				f->stacks = p;
				stacks_cap = cap;
			}
			if (ids_len + ms->n > ids_cap) {
				size_t cap = ids_cap ? ids_cap * 2 : 4096;
				while (cap < ids_len + ms->n)
					cap *= 2;
				void *p = realloc(f->ids, cap * sizeof(*f->ids));
				if (!p)
					goto out;
				f->ids = p;
				ids_cap = cap;
			}
			memcpy(f->ids + ids_len, seq, ms->n * sizeof(uint32_t));
			j = (int64_t)f->n_stacks;
			f->stacks[j] = (struct sp_fstack){.n = ms->n, .off = (uint32_t)ids_len};
			ids_len += ms->n;
			f->n_stacks++;
			if (sp_htab_insert(&idx, h, (uint32_t)j))
				goto out;
		}
		f->stacks[j].weight_ns[side] += ms->weight_ns;
		f->stacks[j].samples[side] += ms->samples;
	}
	f->total_ns[side] += m->total_weight_ns;
	f->total_samples[side] += m->total_samples;
	err = 0;
out:
	sp_htab_release(&idx);
	free(lab);
	free(seq);
	return err;
}

/* qsort has no context argument; sorting is not reentrant anyway */
static const struct sp_folded *sp_sort_f;
static const uint32_t *sp_sort_rank;

static int sp_fold_cmp(const void *a, const void *b)
{
	const struct sp_fstack *x = a, *y = b;
	const uint32_t *p = sp_sort_f->ids + x->off, *q = sp_sort_f->ids + y->off;
	uint32_t n = x->n < y->n ? x->n : y->n;
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != q[i])
			return sp_sort_rank[p[i]] < sp_sort_rank[q[i]] ? -1 : 1;
	return (x->n > y->n) - (x->n < y->n);
}

int sp_folded_sort(struct sp_folded *f)
{
	const uint32_t *rank = sp_labels_ranks(f->labels);
	if (!rank)
		return -ENOMEM;
	sp_sort_f = f;
	sp_sort_rank = rank;
	if (f->n_stacks > 1) /* qsort(NULL, 0, ...) is undefined */
		qsort(f->stacks, f->n_stacks, sizeof(*f->stacks), sp_fold_cmp);
	return 0;
}
