#include "export/label.h"
#include "export/htab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sp_label_style_parse(const char *s, enum sp_label_style *out)
{
	if (!strcmp(s, "func (file:line)") || !strcmp(s, "func-line") || !strcmp(s, "default"))
		*out = SP_LABEL_FUNC_LINE;
	else if (!strcmp(s, "func"))
		*out = SP_LABEL_FUNC;
	else if (!strcmp(s, "pytorch") || !strcmp(s, "file(line): func"))
		*out = SP_LABEL_PYTORCH;
	else
		return -EINVAL;
	return 0;
}

static void sp_buf_puts(struct sp_buf *b, const char *s)
{
	sp_buf_put_bytes(b, s, strlen(s));
}

void sp_label_append(struct sp_buf *b, const struct sp_mframe *f, enum sp_label_style st)
{
	const char *func = f->func && f->func[0] ? f->func : "[unknown]";
	char num[16];
	bool has_file = f->file && f->file[0] && sp_mframe_is_code(f);
	if (!has_file || st == SP_LABEL_FUNC) {
		sp_buf_puts(b, func);
		return;
	}
	snprintf(num, sizeof(num), "%u", f->line);
	if (st == SP_LABEL_PYTORCH) {
		/* torch.profiler names Python files by their import path */
		sp_buf_puts(b, f->kind == SP_MFRAME_PYTHON && f->import_path ? f->import_path
									     : f->file);
		sp_buf_puts(b, "(");
		sp_buf_puts(b, f->line ? num : "?");
		sp_buf_puts(b, "): ");
		sp_buf_puts(b, func);
		return;
	}
	sp_buf_puts(b, func);
	sp_buf_puts(b, " (");
	sp_buf_puts(b, f->file);
	if (f->line) {
		sp_buf_puts(b, ":");
		sp_buf_puts(b, num);
	}
	sp_buf_puts(b, ")");
}

void sp_label_append_folded(struct sp_buf *b, const char *s, size_t n)
{
	size_t start = b->len;
	sp_buf_put_bytes(b, s, n);
	if (b->oom)
		return;
	for (size_t i = start; i < b->len; i++) {
		unsigned char c = b->data[i];
		if (c == ' ' || c == ';' || c < 0x20 || c == 0x7f)
			b->data[i] = '_';
	}
}

struct sp_labels {
	struct sp_label_opts o;
	struct sp_buf text; /* NUL-terminated labels back to back */
	size_t *off;
	size_t n, cap;
	struct sp_htab idx;
	uint32_t *ranks;
	size_t n_ranked;
	const char *probe;
	size_t probe_n;
};

struct sp_labels *sp_labels_new(const struct sp_label_opts *o)
{
	struct sp_labels *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	if (o)
		l->o = *o;
	sp_buf_init(&l->text);
	sp_htab_init(&l->idx);
	return l;
}

void sp_labels_free(struct sp_labels *l)
{
	if (!l)
		return;
	sp_buf_release(&l->text);
	sp_htab_release(&l->idx);
	free(l->off);
	free(l->ranks);
	free(l);
}

static bool sp_label_eq(const void *ctx, uint32_t idx)
{
	const struct sp_labels *l = ctx;
	const char *t = (const char *)l->text.data + l->off[idx];
	return !strncmp(t, l->probe, l->probe_n) && t[l->probe_n] == '\0';
}

int64_t sp_labels_find(const struct sp_labels *l, const char *s, size_t n)
{
	struct sp_labels *w = (struct sp_labels *)l; /* only the probe fields change */
	w->probe = s;
	w->probe_n = n;
	return sp_htab_find(&l->idx, sp_hash_bytes(SP_HASH_SEED, s, n), sp_label_eq, l);
}

int64_t sp_labels_intern(struct sp_labels *l, const char *s, size_t n)
{
	uint64_t h = sp_hash_bytes(SP_HASH_SEED, s, n);
	int64_t id = sp_labels_find(l, s, n);
	if (id >= 0)
		return id;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		size_t *off = realloc(l->off, cap * sizeof(*off));
		if (!off)
			return -ENOMEM;
		l->off = off;
		l->cap = cap;
	}
	l->off[l->n] = l->text.len;
	sp_buf_put_bytes(&l->text, s, n);
	sp_buf_put_u8(&l->text, 0);
	if (l->text.oom || sp_htab_insert(&l->idx, h, (uint32_t)l->n))
		return -ENOMEM;
	return (int64_t)l->n++;
}

uint32_t *sp_labels_map(struct sp_labels *l, const struct sp_model *m)
{
	uint32_t *ids = malloc((m->n_frames ? m->n_frames : 1) * sizeof(*ids));
	struct sp_buf raw, esc;
	sp_buf_init(&raw);
	sp_buf_init(&esc);
	if (!ids)
		goto fail;
	for (size_t i = 0; i < m->n_frames; i++) {
		const struct sp_mframe *f = &m->frames[i];
		sp_buf_reset(&raw);
		sp_label_append(&raw, f, l->o.style);
		if (l->o.inline_mark && f->kind == SP_FRAME_INLINED)
			sp_buf_put_bytes(&raw, "_[i]", 4);
		struct sp_buf *use = &raw;
		if (l->o.folded) {
			sp_buf_reset(&esc);
			sp_label_append_folded(&esc, (const char *)raw.data, raw.len);
			use = &esc;
		}
		if (use->oom)
			goto fail;
		int64_t id = sp_labels_intern(l, use->len ? (const char *)use->data : "", use->len);
		if (id < 0)
			goto fail;
		ids[i] = (uint32_t)id;
	}
	sp_buf_release(&raw);
	sp_buf_release(&esc);
	return ids;
fail:
	sp_buf_release(&raw);
	sp_buf_release(&esc);
	free(ids);
	return NULL;
}

size_t sp_labels_count(const struct sp_labels *l)
{
	return l->n;
}

const char *sp_labels_text(const struct sp_labels *l, uint32_t id)
{
	return (const char *)l->text.data + l->off[id];
}

/* qsort has no context argument; ranking is not reentrant anyway */
static const struct sp_labels *sp_rank_table;

static int sp_rank_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(sp_labels_text(sp_rank_table, x), sp_labels_text(sp_rank_table, y));
	return c ? c : (x > y) - (x < y);
}

const uint32_t *sp_labels_ranks(struct sp_labels *l)
{
	if (l->ranks && l->n_ranked == l->n)
		return l->ranks;
	uint32_t *order = malloc((l->n ? l->n : 1) * sizeof(*order));
	uint32_t *ranks = realloc(l->ranks, (l->n ? l->n : 1) * sizeof(*ranks));
	if (!order || !ranks) {
		free(order);
		if (ranks)
			l->ranks = ranks;
		return NULL;
	}
	l->ranks = ranks;
	for (size_t i = 0; i < l->n; i++)
		order[i] = (uint32_t)i;
	sp_rank_table = l;
	qsort(order, l->n, sizeof(*order), sp_rank_cmp);
	for (size_t i = 0; i < l->n; i++)
		ranks[order[i]] = (uint32_t)i;
	free(order);
	l->n_ranked = l->n;
	return ranks;
}
