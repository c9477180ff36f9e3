#define _GNU_SOURCE /* memrchr */
#include "export/table.h"
#include "format/buf.h"
#include "export/htab.h"
#include "export/label.h"
#include "export/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SP_COL_W      12 /* torch's DEFAULT_COLUMN_WIDTH */
#define SP_NAME_MAX_W 55 /* max_name_column_width: longer names lose their middle */
#define SP_SRC_MAX_W  75 /* max_src_column_width */

struct sp_row {
	const char *name;
	uint32_t off, n; /* entry frame ids at entries + off */
	uint64_t self_ns, total_ns, self_samples, total_samples;
	size_t stamp; /* last stack counted in total, + 1 */
};

struct sp_table {
	const struct sp_model *m;
	struct sp_row *rows;
	size_t n_rows, cap;
	uint32_t *entries;
	size_t n_entries, entries_cap;
	struct sp_htab idx;
	const char *probe_name;
	const uint32_t *probe_ids;
	uint32_t probe_n;
};

int sp_table_sort_parse(const char *s, enum sp_table_sort *out)
{
	/* top's names for the same columns are accepted too */
	if (!strcmp(s, "self_cpu_time_total") || !strcmp(s, "self"))
		*out = SP_TABLE_SELF;
	else if (!strcmp(s, "cpu_time_total") || !strcmp(s, "total"))
		*out = SP_TABLE_TOTAL;
	else if (!strcmp(s, "count") || !strcmp(s, "samples"))
		*out = SP_TABLE_COUNT;
	else
		return -EINVAL;
	return 0;
}

static bool sp_row_eq(const void *ctx, uint32_t idx)
{
	const struct sp_table *t = ctx;
	const struct sp_row *r = &t->rows[idx];
	return r->n == t->probe_n && !strcmp(r->name, t->probe_name) &&
	       (!r->n || !memcmp(t->entries + r->off, t->probe_ids, r->n * sizeof(uint32_t)));
}

/* The row for (name, ids[0..n)); ids are frame ids, innermost first. NULL on ENOMEM. */
static struct sp_row *sp_row_get(struct sp_table *t, const char *name, const uint32_t *ids,
				 uint32_t n)
{
	uint64_t h = sp_hash_bytes(sp_hash_str(SP_HASH_SEED, name), ids, n * sizeof(uint32_t));
	t->probe_name = name;
	t->probe_ids = ids;
	t->probe_n = n;
	int64_t i = sp_htab_find(&t->idx, h, sp_row_eq, t);
	if (i >= 0)
		return &t->rows[i];
	if (t->n_rows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		void *p = realloc(t->rows, cap * sizeof(*t->rows));
		if (!p)
			return NULL;
		t->rows = p;
		t->cap = cap;
	}
	if (t->n_entries + n > t->entries_cap) {
		size_t cap = t->entries_cap ? t->entries_cap * 2 : 1024;
		while (cap < t->n_entries + n)
			cap *= 2;
		void *p = realloc(t->entries, cap * sizeof(*t->entries));
		if (!p)
			return NULL;
		t->entries = p;
		t->entries_cap = cap;
	}
	if (n)
		memcpy(t->entries + t->n_entries, ids, n * sizeof(uint32_t));
	struct sp_row *r = &t->rows[t->n_rows];
	*r = (struct sp_row){.name = name, .off = (uint32_t)t->n_entries, .n = n};
	t->n_entries += n;
	if (sp_htab_insert(&t->idx, h, (uint32_t)t->n_rows))
		return NULL;
	t->n_rows++;
	return r;
}

static int sp_table_fill(struct sp_table *t, unsigned stack_n, bool python_callers,
			 bool python_stack)
{
	const struct sp_model *m = t->m;
	uint32_t ids[256];
	if (stack_n > sizeof(ids) / sizeof(ids[0]))
		stack_n = sizeof(ids) / sizeof(ids[0]);
	for (size_t i = 0; i < m->n_stacks; i++) {
		const struct sp_mstack *s = &m->stacks[i];
		if (!s->samples)
			continue;
		for (uint32_t p = s->n; p-- > 0;) {
			const struct sp_mframe *f = &m->frames[s->frames[p]];
			uint32_t n = 0;
			if (python_callers || python_stack) {
				if (f->kind == SP_MFRAME_PYTHON) {
					if (python_callers)
						continue;
					if (n < stack_n)
						ids[n++] = s->frames[p]; /* its own line */
				}
				/* the Python lines that called it, innermost first */
				for (uint32_t q = p; q-- > 0 && n < stack_n;)
					if (m->frames[s->frames[q]].kind == SP_MFRAME_PYTHON)
						ids[n++] = s->frames[q];
			} else {
				/* the function's own frame, then its callers toward the root */
				while (n < stack_n && n <= p) {
					ids[n] = s->frames[p - n];
					n++;
				}
			}
			struct sp_row *r = sp_row_get(t, f->func, ids, n);
			if (!r)
				return -ENOMEM;
			if (r->stamp != i + 1) {
				/* recursion: a function counts once per sample */
				r->stamp = i + 1;
				r->total_ns += s->weight_ns;
				r->total_samples += s->samples;
			}
			if (p == s->n - 1) {
				r->self_ns += s->weight_ns;
				r->self_samples += s->samples;
			}
		}
	}
	return 0;
}

/* qsort has no context argument; the sort is not reentrant anyway */
static const struct sp_table *sp_sort_t;
static enum sp_table_sort sp_sort_key;

static uint64_t sp_row_key(const struct sp_row *r)
{
	switch (sp_sort_key) {
	case SP_TABLE_TOTAL:
		return r->total_ns;
	case SP_TABLE_COUNT:
		return r->total_samples;
	default:
		return r->self_ns;
	}
}

static int sp_row_cmp(const void *a, const void *b)
{
	const struct sp_row *x = &sp_sort_t->rows[*(const uint32_t *)a];
	const struct sp_row *y = &sp_sort_t->rows[*(const uint32_t *)b];
	uint64_t kx = sp_row_key(x), ky = sp_row_key(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	/* first seen first: stable across runs because stacks are in profile order */
	return x < y ? -1 : x > y;
}

/* A tab or newline in a symbol would tear the table's columns apart. */
static void sp_flatten(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

/* Source Location text of frame id into b, NUL-terminated. */
static void sp_entry_text(const struct sp_model *m, uint32_t id, struct sp_buf *b)
{
	sp_buf_reset(b);
	sp_label_append(b, &m->frames[id], SP_LABEL_PYTORCH);
	sp_buf_put_u8(b, 0);
	if (!b->oom)
		sp_flatten((char *)b->data);
}

/* Appends s right or left aligned in w columns, then the two spaces of SPACING_SIZE. */
static void sp_cell(FILE *out, const char *s, int w, bool left)
{
	fprintf(out, left ? "%-*s  " : "%*s  ", w, s);
}

static void sp_sep(FILE *out, int name_w, int n_cols, int src_w)
{
	for (int c = 0; c < n_cols; c++) {
		int w = c == 0 ? name_w : SP_COL_W;
		for (int i = 0; i < w; i++)
			putc('-', out);
		fputs("  ", out);
	}
	if (src_w) {
		for (int i = 0; i < src_w; i++)
			putc('-', out);
		fputs("  ", out);
	}
	putc('\n', out);
}

/*
 * Appends n bytes of s cut to at most want bytes (want >= 3) by replacing
 * its middle with "...": head bytes of the start stay, and the rest of the
 * room goes to the end, where a path has its file name, an argument list
 * its close and an unnamed frame its offset. Returns the bytes appended: a
 * cut never splits a UTF-8 character, so it may be a little less than want.
 */
static size_t sp_cut_middle(char *out, const char *s, size_t n, size_t want, size_t head)
{
	if (n <= want) {
		memcpy(out, s, n);
		return n;
	}
	if (head > want - 3)
		head = want - 3;
	size_t tail = want - 3 - head;
	while (head && ((unsigned char)s[head] & 0xc0) == 0x80)
		head--;
	while (tail && ((unsigned char)s[n - tail] & 0xc0) == 0x80)
		tail--;
	memcpy(out, s, head);
	memcpy(out + head, "...", 3);
	memcpy(out + head + 3, s + n - tail, tail);
	return head + 3 + tail;
}

/*
 * Fits a Source Location entry "file(line): function(args)" into w columns
 * (torch keeps the end behind "...", which loses the function's name when
 * the argument list is long). What stays, in this order: the function's
 * name, the file's base name and line, the argument list, the directories.
 * So the middle of the path goes first (its head and its file name stay),
 * then the middle of the argument list, and only a name wider than the
 * column loses its own middle.
 */
static const char *sp_fit(const char *s, int w, char *out, size_t cap)
{
	size_t len = strlen(s), width = (size_t)w;
	if (len <= width || width < 16 || cap <= width)
		return s;
	const char *sep = strstr(s, "): ");
	size_t loc_len = sep ? (size_t)(sep - s) + 3 : 0;
	const char *func = s + loc_len;
	size_t func_len = len - loc_len;
	size_t name_len = strcspn(func, "(");
	if (name_len == 0)
		name_len = func_len; /* "(anonymous namespace)::f": no argument list to cut */
	/* the least each part keeps: "...ceval.c(123): ", and "name(...)" */
	const char *slash = loc_len ? memrchr(s, '/', loc_len) : NULL;
	size_t base_len = slash ? loc_len - (size_t)(slash + 1 - s) : loc_len;
	size_t loc_min = base_len + 3 < loc_len ? base_len + 3 : loc_len;
	size_t func_min = name_len < func_len ? name_len + 5 : func_len;
	size_t loc_want = width > func_len ? width - func_len : 0;
	if (loc_want < loc_min)
		loc_want = loc_min;
	if (loc_want + func_min > width)
		loc_want = 0; /* no room for both: the function wins */
	size_t o = 0;
	if (loc_want) {
		size_t head = (loc_want - 3) / 3;
		if (loc_want - 3 - head < base_len)
			head = loc_want - 3 > base_len ? loc_want - 3 - base_len : 0;
		o = sp_cut_middle(out, s, loc_len, loc_want, head);
	}
	size_t room = width - o;
	if (func_len <= room) {
		memcpy(out + o, func, func_len);
		o += func_len;
	} else if (name_len + 5 <= room) {
		memcpy(out + o, func, name_len);
		o += name_len;
		o += sp_cut_middle(out + o, func + name_len, func_len - name_len, room - name_len,
				   (room - name_len - 3) / 2);
	} else {
		o += sp_cut_middle(out + o, func, func_len, room, (room - 3) / 2);
	}
	out[o] = '\0';
	return out;
}

#define SP_N_COLS 6

/* A weight cell: a time, or a number whose unit is in the column's name. */
static const char *sp_amount(char *out, size_t len, uint64_t v, bool timed)
{
	if (timed)
		return sp_textfmt_time(out, len, v);
	snprintf(out, len, "%" PRIu64, v);
	return out;
}

static void sp_blank_cells(FILE *out, int name_w)
{
	sp_cell(out, "", name_w, false);
	for (int c = 1; c < SP_N_COLS; c++)
		sp_cell(out, "", SP_COL_W, false);
}

int sp_table_write(const struct sp_model *m, const struct sp_table_opts *o, FILE *out)
{
	struct sp_table t = {.m = m};
	struct sp_buf b;
	uint32_t *order = NULL;
	int err = -ENOMEM;
	sp_buf_init(&b);
	sp_htab_init(&t.idx);
	if (!m->total_samples) {
		err = 0;
		goto out;
	}
	if (sp_table_fill(&t, o->stack_n, o->python_callers, o->python_stack))
		goto out;
	order = malloc(t.n_rows * sizeof(*order));
	if (!order)
		goto out;
	for (size_t i = 0; i < t.n_rows; i++)
		order[i] = (uint32_t)i;
	sp_sort_t = &t;
	sp_sort_key = o->sort;
	qsort(order, t.n_rows, sizeof(*order), sp_row_cmp);

	/* widths come from every row, printed or not, as in torch */
	size_t name_w = 0, src_w = 0;
	for (size_t i = 0; i < t.n_rows; i++) {
		size_t len = strlen(t.rows[i].name);
		name_w = len > name_w ? len : name_w;
		for (uint32_t k = 0; k < t.rows[i].n; k++) {
			sp_entry_text(m, t.entries[t.rows[i].off + k], &b);
			len = b.len - 1;
			src_w = len > src_w ? len : src_w;
		}
	}
	if (b.oom)
		goto out;
	name_w = name_w + 4 < SP_NAME_MAX_W ? name_w + 4 : SP_NAME_MAX_W;
	src_w = o->stack_n ? (src_w + 4 < SP_SRC_MAX_W ? src_w + 4 : SP_SRC_MAX_W) : 0;
	int nw = (int)name_w, sw = (int)src_w;

	/* torch's CPU columns for cpu; another kind's weights are named by
	 * their kind when they are time ("Self wall"), else by their unit
	 * ("Self count"), a plain number under it so that bytes fit the column */
	bool cpu = sp_model_is_cpu(m), timed = sp_model_is_timed(m);
	const char *unit = sp_model_unit(m);
	const char *noun = timed ? sp_model_event_name(m) : unit;
	char self_h[SP_COL_W + 1], total_h[SP_COL_W + 1];
	snprintf(self_h, sizeof(self_h), "Self %s", noun);
	snprintf(total_h, sizeof(total_h), "Total %s", noun);
	const char *const headers[SP_N_COLS] = {"Name",
						cpu ? "Self CPU %" : "Self %",
						cpu ? "Self CPU" : self_h,
						cpu ? "CPU total %" : "Total %",
						cpu ? "CPU total" : total_h,
						"Samples"};
	sp_sep(out, nw, SP_N_COLS, sw);
	for (int c = 0; c < SP_N_COLS; c++)
		sp_cell(out, headers[c], c ? SP_COL_W : nw, false);
	if (sw)
		sp_cell(out, "Source Location", sw, true);
	putc('\n', out);
	sp_sep(out, nw, SP_N_COLS, sw);

	double total = (double)m->total_weight_ns;
	size_t limit = o->row_limit && o->row_limit < t.n_rows ? o->row_limit : t.n_rows;
	char name[SP_NAME_MAX_W + 1], tmp[SP_SRC_MAX_W + 1], v[SP_TEXTFMT_LEN];
	err = 0;
	for (size_t i = 0; i < limit && !err; i++) {
		const struct sp_row *r = &t.rows[order[i]];
		/* torch keeps a long name's first 52 characters; two rows that
		 * differ at their end (libtorch_cpu.so+0x..., a template's
		 * arguments) then read the same, so the middle goes instead */
		name[sp_cut_middle(name, r->name, strlen(r->name), SP_NAME_MAX_W,
				   (SP_NAME_MAX_W - 3) / 2)] = '\0';
		sp_flatten(name);
		sp_cell(out, name, nw, false);
		sp_cell(out, sp_textfmt_share(v, sizeof(v), (double)r->self_ns, total), SP_COL_W,
			false);
		sp_cell(out, sp_amount(v, sizeof(v), r->self_ns, timed), SP_COL_W, false);
		sp_cell(out, sp_textfmt_share(v, sizeof(v), (double)r->total_ns, total), SP_COL_W,
			false);
		sp_cell(out, sp_amount(v, sizeof(v), r->total_ns, timed), SP_COL_W, false);
		snprintf(v, sizeof(v), "%" PRIu64, r->total_samples);
		sp_cell(out, v, SP_COL_W, false);
		if (sw) {
			const char *e = "";
			if (r->n) {
				sp_entry_text(m, t.entries[r->off], &b);
				e = sp_fit((char *)b.data, sw, tmp, sizeof(tmp));
			}
			sp_cell(out, e, sw, true);
		}
		putc('\n', out);
		if (sw) {
			for (uint32_t k = 1; k < r->n; k++) {
				sp_blank_cells(out, nw);
				sp_entry_text(m, t.entries[r->off + k], &b);
				sp_cell(out, sp_fit((char *)b.data, sw, tmp, sizeof(tmp)), sw,
					true);
				putc('\n', out);
			}
			sp_blank_cells(out, nw);
			sp_cell(out, "", sw, true);
			putc('\n', out);
		}
		err = sp_textfmt_out_error(out);
	}
	if (!err) {
		sp_sep(out, nw, SP_N_COLS, sw);
		if (cpu)
			fprintf(out, "Self CPU time total: %s\n",
				sp_textfmt_time(v, sizeof(v), m->total_weight_ns));
		else
			fprintf(out, "Self %s total: %s\n", sp_model_event_name(m),
				sp_textfmt_weight(v, sizeof(v), m->total_weight_ns, unit));
		err = sp_textfmt_out_error(out);
	}
	if (b.oom && !err)
		err = -ENOMEM;
out:
	sp_buf_release(&b);
	sp_htab_release(&t.idx);
	free(t.rows);
	free(t.entries);
	free(order);
	return err;
}
