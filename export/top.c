#include "export/top.h"
#include "export/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int sp_top_col_parse(const char *s, enum sp_top_col *out, bool *ascending)
{
	/* torch's sort keys name the same columns */
	static const struct {
		const char *name;
		enum sp_top_col col;
	} names[] = {
	    {"self", SP_TOP_SELF},
	    {"total", SP_TOP_TOTAL},
	    {"samples", SP_TOP_SAMPLES},
	    {"name", SP_TOP_NAME},
	    {"self_cpu_time_total", SP_TOP_SELF},
	    {"cpu_time_total", SP_TOP_TOTAL},
	    {"count", SP_TOP_SAMPLES},
	};
	*ascending = s[0] == '+';
	if (*ascending)
		s++;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*out = names[i].col;
			/* names read best A to Z unless asked otherwise */
			if (*out == SP_TOP_NAME)
				*ascending = !*ascending;
			return 0;
		}
	return -EINVAL;
}

static const struct sp_rollup_row *sp_sort_rows;
static enum sp_top_col sp_sort_col;
static bool sp_sort_asc;

static int sp_top_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct sp_rollup_row *x = &sp_sort_rows[i], *y = &sp_sort_rows[j];
	int c = 0;
	switch (sp_sort_col) {
	case SP_TOP_SELF:
		c = (x->self_ns > y->self_ns) - (x->self_ns < y->self_ns);
		break;
	case SP_TOP_TOTAL:
		c = (x->total_ns > y->total_ns) - (x->total_ns < y->total_ns);
		break;
	case SP_TOP_SAMPLES:
		c = (x->total_samples > y->total_samples) - (x->total_samples < y->total_samples);
		break;
	case SP_TOP_NAME:
		c = strcmp(x->name, y->name);
		break;
	}
	if (!sp_sort_asc)
		c = -c;
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c && x->thread && y->thread)
		c = strcmp(x->thread, y->thread);
	return c ? c : (i > j) - (i < j);
}

/* Names go last on the line; control characters would break it. Pads to width. */
static void sp_put_name(FILE *out, const char *s, size_t width)
{
	size_t n = 0;
	for (; *s; s++, n++)
		putc((unsigned char)*s < 0x20 ? ' ' : *s, out);
	for (; n < width; n++)
		putc(' ', out);
}

int sp_top_write(const struct sp_model *m, const struct sp_top_opts *o, FILE *out)
{
	struct sp_rollup r;
	uint32_t *keep = NULL;
	size_t n = 0;
	char t1[SP_TEXTFMT_LEN], t2[SP_TEXTFMT_LEN], p1[SP_TEXTFMT_LEN], p2[SP_TEXTFMT_LEN];
	int err = sp_rollup_build(&r, m, o->viewed ? SP_ROLLUP_FUNCTION : o->by,
				  o->per_thread || o->per_process);
	if (err)
		goto out;
	err = -ENOMEM;
	keep = malloc((r.n_rows ? r.n_rows : 1) * sizeof(*keep));
	if (!keep)
		goto out;
	double total = (double)r.total_ns;
	for (size_t i = 0; i < r.n_rows; i++) {
		const struct sp_rollup_row *row = &r.rows[i];
		if (o->name_re && regexec(o->name_re, row->name, 0, NULL, 0) != 0)
			continue;
		if (row->self_ns < o->min_ns || (o->max_ns && row->self_ns > o->max_ns))
			continue;
		if (o->percent_above >= 0 &&
		    !(total > 0 && (double)row->self_ns * 100.0 / total > o->percent_above))
			continue;
		keep[n++] = (uint32_t)i;
	}
	sp_sort_rows = r.rows;
	sp_sort_col = o->order;
	sp_sort_asc = o->ascending;
	qsort(keep, n, sizeof(*keep), sp_top_cmp);
	size_t shown = o->top && o->top < n ? o->top : n;
	/* the Thread column: as wide as the widest thread shown */
	bool threads = r.n_rows && r.rows[0].thread;
	const char *group =
	    o->per_process ? (o->per_thread ? "Process/Thread" : "Process") : "Thread";
	size_t thread_w = strlen(group);
	for (size_t i = 0; threads && i < shown; i++) {
		size_t w = strlen(r.rows[keep[i]].thread);
		thread_w = w > thread_w ? w : thread_w;
	}

	/* weights in the model's kind's unit: "6.136s CPU", "7 count of user" */
	const struct sp_prof_event *ev = m->event;
	bool cpu = !ev || ev->id == SP_EVENT_CPU;
	const char *unit = ev ? ev->unit : "ns";
	fprintf(out, "%zu of %zu %s%s, %s %s%s in %" PRIu64 " samples\n", shown, r.n_rows,
		sp_rollup_by_noun(o->by, true),
		!threads	? ""
		: o->per_thread ? " per thread"
				: " per process",
		sp_textfmt_weight(t1, sizeof(t1), r.total_ns, unit), cpu ? "CPU" : "of ",
		cpu ? "" : ev->name, r.total_samples);
	fprintf(out, "%12s  %7s  %12s  %7s  %8s  ", "Self", "Self %", "Total", "Total %",
		"Samples");
	if (threads)
		fprintf(out, "%-*s  ", (int)thread_w, group);
	fputs("Name\n", out);
	err = 0;
	for (size_t i = 0; i < shown && !err; i++) {
		const struct sp_rollup_row *row = &r.rows[keep[i]];
		fprintf(out, "%12s  %7s  %12s  %7s  %8" PRIu64 "  ",
			sp_textfmt_weight(t1, sizeof(t1), row->self_ns, unit),
			sp_textfmt_share(p1, sizeof(p1), (double)row->self_ns, total),
			sp_textfmt_weight(t2, sizeof(t2), row->total_ns, unit),
			sp_textfmt_share(p2, sizeof(p2), (double)row->total_ns, total),
			row->total_samples);
		if (threads) {
			sp_put_name(out, row->thread, thread_w);
			fputs("  ", out);
		}
		sp_put_name(out, row->name, 0);
		putc('\n', out);
		err = sp_textfmt_out_error(out);
	}
out:
	sp_rollup_release(&r);
	free(keep);
	return err;
}
