#include "export/rollup.h"
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

int sp_rollup_build(struct sp_rollup *r, const struct sp_model *m, enum sp_rollup_by by)
{
	size_t cap = 0;
	size_t *stamp = NULL; /* per row: the last stack counted in total, + 1 */
	char tmp[512];
	int err = -ENOMEM;
	if (by == SP_ROLLUP_OP || by == SP_ROLLUP_MODULE_PATH) {
		/* the view's frames are the keys: a function rollup of the view */
		struct sp_view *v =
		    sp_view_new(m, by == SP_ROLLUP_OP ? SP_VIEW_OP : SP_VIEW_MODULE_PATH);
		if (!v) {
			memset(r, 0, sizeof(*r));
			return -ENOMEM;
		}
		err = sp_rollup_build(r, sp_view_model(v), SP_ROLLUP_FUNCTION);
		sp_view_free(v);
		return err;
	}
	memset(r, 0, sizeof(*r));
	r->names_ = sp_labels_new(NULL);
	if (!r->names_)
		return -ENOMEM;
	r->total_ns = m->total_weight_ns;
	r->total_samples = m->total_samples;

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
			bool self_given = false;
			for (uint32_t p = s->n; p-- > 0;) {
				const struct sp_mframe *f = &m->frames[s->frames[p]];
				const char *key = sp_key(f, by, tmp, sizeof(tmp));
				if (!key)
					continue;
				int64_t id = sp_row_of(r, key, &cap, &stamp);
				if (id < 0)
					goto out;
				struct sp_rollup_row *row = &r->rows[id];
				if (p == s->n - 1 || (innermost && !self_given)) {
					row->self_ns += s->weight_ns;
					row->self_samples += s->samples;
				}
				self_given = true;
				if (stamp[id] != i + 1) {
					stamp[id] = i + 1;
					row->total_ns += s->weight_ns;
					row->total_samples += s->samples;
				}
			}
			if (innermost && !self_given) {
				int64_t id = sp_row_of(r, "[no Python frame]", &cap, &stamp);
				if (id < 0)
					goto out;
				struct sp_rollup_row *row = &r->rows[id];
				row->self_ns += s->weight_ns;
				row->total_ns += s->weight_ns;
				row->self_samples += s->samples;
				row->total_samples += s->samples;
			}
		}
	}
	for (size_t i = 0; i < r->n_rows; i++)
		r->rows[i].name = sp_labels_text(r->names_, (uint32_t)i);
	err = 0;
out:
	free(stamp);
	return err;
}

void sp_rollup_release(struct sp_rollup *r)
{
	free(r->rows);
	sp_labels_free(r->names_);
	memset(r, 0, sizeof(*r));
}

int64_t sp_rollup_find(const struct sp_rollup *r, const char *name)
{
	return sp_labels_find(r->names_, name, strlen(name));
}
