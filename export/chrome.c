#include "export/chrome.h"
#include "export/json.h"
#include "export/textfmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sp_slice {
	uint64_t start, end;
	uint32_t frame; /* model frame */
	uint32_t depth;
};

struct sp_chrome {
	const struct sp_model *m;
	struct sp_labels *labels;
	uint32_t *lab;
	FILE *out;
	struct sp_slice *slices; /* of the current thread */
	size_t n_slices, cap;
	uint32_t *open; /* frames open now, root first */
	uint64_t *open_start;
	uint32_t n_open;
	int pid;
	bool first_event;
	bool merged_lines; /* one label per function: a slice may span several lines */
};

static int sp_slice_cmp(const void *a, const void *b)
{
	const struct sp_slice *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* parents first, so that viewers nest equal-start slices the right way */
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Closes open frames down to depth keep, at time t. */
static int sp_close(struct sp_chrome *c, uint32_t keep, uint64_t t)
{
	while (c->n_open > keep) {
		c->n_open--;
		if (c->n_slices == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 1024;
			void *p = realloc(c->slices, cap * sizeof(*c->slices));
			if (!p)
				return -ENOMEM;
			c->slices = p;
			c->cap = cap;
		}
		c->slices[c->n_slices++] = (struct sp_slice){
		    .start = c->open_start[c->n_open],
		    .end = t,
		    .frame = c->open[c->n_open],
		    .depth = c->n_open,
		};
	}
	return 0;
}

static void sp_event_head(struct sp_chrome *c)
{
	fputs(c->first_event ? "\n" : ",\n", c->out);
	c->first_event = false;
}

static void sp_meta(struct sp_chrome *c, int tid, const char *what, const char *name)
{
	sp_event_head(c);
	fprintf(c->out,
		"{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", c->pid,
		tid, what);
	sp_json_str(c->out, name);
	fputs("}}", c->out);
}

static int sp_flush_thread(struct sp_chrome *c, int tid)
{
	FILE *out = c->out;
	qsort(c->slices, c->n_slices, sizeof(*c->slices), sp_slice_cmp);
	for (size_t i = 0; i < c->n_slices; i++) {
		const struct sp_slice *s = &c->slices[i];
		const struct sp_mframe *f = &c->m->frames[s->frame];
		sp_event_head(c);
		fprintf(out, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", c->pid, tid);
		sp_json_us(out, s->start);
		fputs(",\"dur\":", out);
		sp_json_us(out, s->end - s->start);
		fputs(",\"name\":", out);
		sp_json_str(out, sp_labels_text(c->labels, c->lab[s->frame]));
		fprintf(out, ",\"cat\":\"%s\"",
			f->kind == SP_MFRAME_RANGE    ? "range"
			: f->kind == SP_MFRAME_PYTHON ? "python"
						      : "native");
		if (sp_mframe_is_code(f) && (f->file || f->module)) {
			const char *sep = "";
			fputs(",\"args\":{", out);
			if (f->file) {
				fputs("\"file\":", out);
				sp_json_str(out, f->file);
				/* a Python slice of several lines: its function's first line */
				fprintf(out, ",\"line\":%u",
					c->merged_lines && f->kind == SP_MFRAME_PYTHON &&
						f->def_line
					    ? f->def_line
					    : f->line);
				sep = ",";
			}
			if (f->module) {
				fprintf(out, "%s\"module\":", sep);
				sp_json_str(out, f->module);
			}
			putc('}', out);
		}
		putc('}', out);
		int err = sp_textfmt_out_error(out);
		if (err)
			return err;
	}
	c->n_slices = 0;
	return 0;
}

int sp_chrome_write(const struct sp_model *m, const struct sp_label_opts *lo, FILE *out)
{
	struct sp_label_opts o = *lo;
	o.folded = false;
	struct sp_chrome c = {
	    .m = m, .out = out, .first_event = true, .merged_lines = o.style == SP_LABEL_FUNC};
	uint32_t *order = NULL;
	uint32_t max_n = 1;
	int err = -EDOM;
	if (!sp_model_is_timed(m))
		goto out;
	err = -ENOMEM;
	c.pid = m->prof ? m->prof->header.pid : 1;
	for (size_t i = 0; i < m->n_stacks; i++)
		max_n = m->stacks[i].n > max_n ? m->stacks[i].n : max_n;
	c.labels = sp_labels_new(&o);
	c.open = malloc(max_n * sizeof(*c.open));
	c.open_start = malloc(max_n * sizeof(*c.open_start));
	order = sp_model_samples_by_thread(m);
	if (!c.labels || !c.open || !c.open_start || !order ||
	    !(c.lab = sp_labels_map(c.labels, m)))
		goto out;

	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":\"stackprof\"", out);
	if (m->prof && m->prof->header.cmdline) {
		fputs(",\"command\":", out);
		sp_json_str(out, m->prof->header.cmdline);
	}
	fputs("},\n\"traceEvents\":[", out);
	const char *cmd = m->prof && m->prof->header.cmdline ? m->prof->header.cmdline : "";
	sp_meta(&c, c.pid, "process_name", cmd[0] ? cmd : "profiled process");

	err = 0;
	char name[300];
	for (size_t i = 0; i < m->n_samples && !err;) {
		uint32_t t = m->samples[order[i]].thread;
		const struct sp_mthread *th = &m->threads[t];
		sp_meta(&c, th->tid, "thread_name", sp_model_thread_label(th, name, sizeof(name)));
		uint64_t prev_end = 0;
		c.n_open = 0;
		for (; i < m->n_samples && m->samples[order[i]].thread == t && !err; i++) {
			const struct sp_msample *s = &m->samples[order[i]];
			const struct sp_mstack *st = &m->stacks[s->stack];
			uint64_t start = s->time_ns > s->weight_ns ? s->time_ns - s->weight_ns : 0;
			if (c.n_open && start > prev_end + s->weight_ns)
				/* the thread was off the CPU: what it ran before has ended */
				err = sp_close(&c, 0, prev_end);
			else if (c.n_open)
				start = prev_end; /* one stretch of running: no seams */
			if (start < prev_end)
				start = prev_end;
			uint32_t common = 0;
			while (common < c.n_open && common < st->n &&
			       c.lab[c.open[common]] == c.lab[st->frames[common]])
				common++;
			if (!err)
				err = sp_close(&c, common, start);
			for (uint32_t k = c.n_open; k < st->n; k++) {
				c.open[k] = st->frames[k];
				c.open_start[k] = start;
			}
			c.n_open = st->n;
			prev_end = s->time_ns > start ? s->time_ns : start + 1;
		}
		if (!err)
			err = sp_close(&c, 0, prev_end);
		if (!err)
			err = sp_flush_thread(&c, th->tid);
	}
	if (!err) {
		fputs("\n]}\n", out);
		err = sp_textfmt_out_error(out);
	}
out:
	sp_labels_free(c.labels);
	free(c.lab);
	free(c.open);
	free(c.open_start);
	free(c.slices);
	free(order);
	return err;
}
