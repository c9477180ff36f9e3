#include "export/rollup.h"
#include "format/buf.h"
#include "export/label.h"
#include "export/view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sp_rollup_by_parse(const char *s, enum sp_rollup_by *out)
{
	static const char *const names[] = {"function",	   "file", "module", "thread",	   "op",
					    "module-path", "line", "python", "python-line"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum sp_rollup_by)i;
			return 0;
		}
	return -EINVAL;
}

const char *sp_rollup_by_noun(enum sp_rollup_by by, bool plural)
{
	static const char *const nouns[][2] = {
	    {"function", "functions"},
	    {"file", "files"},
	    {"module", "modules"},
	    {"thread", "threads"},
	    {"operator", "operators"},
	    {"module path", "module paths"},
	    {"line", "lines"},
	    {"Python function", "Python functions"},
	    {"Python line", "Python lines"},
	};
	return nouns[by][plural];
}

/* The key text of frame f, or NULL when f has no key under by. */
static const char *sp_key(const struct sp_mframe *f, enum sp_rollup_by by, char *tmp, size_t len)
{
	bool code = sp_mframe_is_code(f);
	switch (by) {
	case SP_ROLLUP_FUNCTION:
		return f->func && f->func[0] ? f->func : "[unknown]";
	case SP_ROLLUP_FILE:
		if (!code)
			return NULL;
		if (f->file && f->file[0])
			return f->file;
		if (f->module) {
			snprintf(tmp, len, "[%s]", f->module);
			return tmp;
		}
		return f->kind == SP_FRAME_JIT ? "[jit]" : "[unknown]";
	case SP_ROLLUP_MODULE:
		if (!code)
			return NULL;
		if (f->module && f->module[0])
			return f->module;
		return f->kind == SP_FRAME_JIT ? "[jit]" : "[unknown]";
	case SP_ROLLUP_LINE:
		/* a line of code, with its function: "leaf (split.py:12)" */
		if (!code)
			return NULL;
		if (!f->file || !f->file[0] || !f->line)
			return f->func && f->func[0] ? f->func : "[unknown]";
		snprintf(tmp, len, "%s (%s:%u)", f->func ? f->func : "[unknown]", f->file, f->line);
		return tmp;
	case SP_ROLLUP_PYTHON:
	case SP_ROLLUP_PYTHON_LINE:
		if (f->kind != SP_MFRAME_PYTHON)
			return NULL;
		if (by == SP_ROLLUP_PYTHON)
			snprintf(tmp, len, "%s (%s)", f->func ? f->func : "[unknown]",
				 f->file ? f->file : "?");
		else
			snprintf(tmp, len, "%s (%s:%u)", f->func ? f->func : "[unknown]",
				 f->file ? f->file : "?", f->line);
		return tmp;
	default:
		return NULL;
	}
}

/* The row index for name, adding a zeroed row (and stamp) when new; -ENOMEM. */
static int64_t sp_row_of(struct sp_rollup *r, const char *name, size_t *cap, size_t **stamp)
{
	int64_t id = sp_labels_find(r->names_, name, strlen(name));
	if (id >= 0)
		return id;
	if (r->n_rows == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		void *p = realloc(r->rows, c * sizeof(*r->rows));
		if (!p)
			return -ENOMEM;
		r->rows = p;
		p = realloc(*stamp, c * sizeof(**stamp));
		if (!p)
			return -ENOMEM;
		*stamp = p;
		*cap = c;
	}
	id = sp_labels_intern(r->names_, name, strlen(name));
	if (id < 0)
		return id;
	r->rows[r->n_rows] = (struct sp_rollup_row){0};
	(*stamp)[r->n_rows] = 0;
	r->n_rows++;
	return id;
}

/*
 * The row key of key in a per-thread rollup: "<thread label id in hex>:key",
 * in b, NUL-terminated; key itself otherwise. NULL on ENOMEM.
 */
static const char *sp_thread_key(struct sp_buf *b, int64_t thread, const char *key)
{
	if (thread < 0)
		return key;
	char id[24];
	int n = snprintf(id, sizeof(id), "%llx:", (unsigned long long)thread);
	sp_buf_reset(b);
	sp_buf_put_bytes(b, id, (size_t)n);
	sp_buf_put_bytes(b, key, strlen(key) + 1);
	return b->oom ? NULL : (const char *)b->data;
}

/* Adds a sample's weight to the row of key: self if self, total once per stack i. */
static int sp_count(struct sp_rollup *r, const char *key, const struct sp_mstack *s, size_t i,
		    bool self, size_t *cap, size_t **stamp)
{
	if (!key)
		return -ENOMEM;
	int64_t id = sp_row_of(r, key, cap, stamp);
	if (id < 0)
		return (int)id;
	struct sp_rollup_row *row = &r->rows[id];
	if (self) {
		row->self_ns += s->weight_ns;
		row->self_samples += s->samples;
	}
	if ((*stamp)[id] != i + 1) {
		(*stamp)[id] = i + 1;
		row->total_ns += s->weight_ns;
		row->total_samples += s->samples;
	}
	return 0;
}

int sp_rollup_build(struct sp_rollup *r, const struct sp_model *m, enum sp_rollup_by by,
		    bool per_thread)
{
	size_t cap = 0;
	size_t *stamp = NULL; /* per row: the last stack counted in total, + 1 */
	char tmp[512];
	struct sp_buf kb;
	int err = -ENOMEM;
	if (by == SP_ROLLUP_OP || by == SP_ROLLUP_MODULE_PATH) {
		/* the view's frames are the keys: a function rollup of the view */
		struct sp_view *v =
		    sp_view_new(m, by == SP_ROLLUP_OP ? SP_VIEW_OP : SP_VIEW_MODULE_PATH);
		if (!v) {
			memset(r, 0, sizeof(*r));
			return -ENOMEM;
		}
		err = sp_rollup_build(r, sp_view_model(v), SP_ROLLUP_FUNCTION, per_thread);
		sp_view_free(v);
		return err;
	}
	memset(r, 0, sizeof(*r));
	sp_buf_init(&kb);
	r->names_ = sp_labels_new(NULL);
	r->threads_ = sp_labels_new(NULL);
	if (!r->names_ || !r->threads_)
		goto out;
	r->total_ns = m->total_weight_ns;
	r->total_samples = m->total_samples;
	/* by thread, the rows are threads already */
	per_thread = per_thread && by != SP_ROLLUP_THREAD;

	if (by == SP_ROLLUP_THREAD) {
		for (size_t i = 0; i < m->n_threads; i++) {
			const struct sp_mthread *t = &m->threads[i];
			if (!t->samples)
				continue;
			const char *label = sp_model_thread_label(t, tmp, sizeof(tmp));
			int64_t id = sp_row_of(r, label, &cap, &stamp);
			if (id < 0)
				goto out;
			struct sp_rollup_row *row = &r->rows[id];
			row->self_ns = row->total_ns += t->weight_ns;
			row->self_samples = row->total_samples += t->samples;
		}
	} else {
		/* Python keys: self to the innermost keyed frame, not the leaf */
		bool innermost = by == SP_ROLLUP_PYTHON || by == SP_ROLLUP_PYTHON_LINE;
		for (size_t i = 0; i < m->n_stacks; i++) {
			const struct sp_mstack *s = &m->stacks[i];
			if (!s->samples)
				continue;
			/* per thread: the root thread frame names the rows, and is none */
			int64_t thread = -1;
			uint32_t first = 0;
			if (per_thread) {
				/* a merged model's process root, then the thread root */
				const char *proc = NULL, *thr = NULL;
				if (first < s->n &&
				    m->frames[s->frames[first]].kind == SP_MFRAME_PROCESS)
					proc = m->frames[s->frames[first++]].func;
				if (first < s->n &&
				    m->frames[s->frames[first]].kind == SP_MFRAME_THREAD)
					thr = m->frames[s->frames[first++]].func;
				char both[512];
				const char *label = thr ? thr : proc ? proc : "[no thread]";
				if (proc && thr) {
					snprintf(both, sizeof(both), "%s/%s", proc, thr);
					label = both;
				}
				thread = sp_labels_intern(r->threads_, label, strlen(label));
				if (thread < 0)
					goto out;
			}
			bool self_given = false;
			for (uint32_t p = s->n; p-- > first;) {
				const struct sp_mframe *f = &m->frames[s->frames[p]];
				const char *key = sp_key(f, by, tmp, sizeof(tmp));
				if (!key)
					continue;
				bool self = p == s->n - 1 || (innermost && !self_given);
				if (sp_count(r, sp_thread_key(&kb, thread, key), s, i, self, &cap,
					     &stamp))
					goto out;
				self_given = true;
			}
			if (innermost && !self_given &&
			    sp_count(r, sp_thread_key(&kb, thread, "[no Python frame]"), s, i, true,
				     &cap, &stamp))
				goto out;
		}
	}
	for (size_t i = 0; i < r->n_rows; i++) {
		const char *name = sp_labels_text(r->names_, (uint32_t)i);
		if (per_thread) {
			char *end;
			unsigned long t = strtoul(name, &end, 16);
			r->rows[i].thread = sp_labels_text(r->threads_, (uint32_t)t);
			name = end + 1;
		}
		r->rows[i].name = name;
	}
	err = 0;
out:
	sp_buf_release(&kb);
	free(stamp);
	return err;
}

void sp_rollup_release(struct sp_rollup *r)
{
	free(r->rows);
	sp_labels_free(r->names_);
	sp_labels_free(r->threads_);
	memset(r, 0, sizeof(*r));
}

int64_t sp_rollup_find(const struct sp_rollup *r, const char *name)
{
	return sp_labels_find(r->names_, name, strlen(name));
}
