#include "export/diff.h"
#include "export/textfmt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum sp_change { SP_ADDED, SP_REMOVED, SP_INCREASED, SP_DECREASED, SP_UNCHANGED };

static const char *const sp_change_names[] = {"added", "removed", "increased", "decreased",
					      "unchanged"};

struct sp_drow {
	const char *name;
	double base_ns, new_ns; /* new is scaled when normalizing */
	double base_n, new_n;
	enum sp_change change;
};

int sp_diff_sort_parse(const char *s, enum sp_diff_sort *out)
{
	static const char *const names[] = {"delta", "abs", "base", "new", "name"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum sp_diff_sort)i;
			return 0;
		}
	return -EINVAL;
}

static enum sp_diff_sort sp_sort_by;

static double sp_sort_key(const struct sp_drow *r)
{
	switch (sp_sort_by) {
	case SP_DIFF_ABS:
		return fabs(r->new_ns - r->base_ns);
	case SP_DIFF_BASE:
		return r->base_ns;
	case SP_DIFF_NEW:
		return r->new_ns;
	default:
		return r->new_ns - r->base_ns;
	}
}

static int sp_drow_cmp(const void *a, const void *b)
{
	const struct sp_drow *x = a, *y = b;
	if (sp_sort_by != SP_DIFF_NAME) {
		double kx = sp_sort_key(x), ky = sp_sort_key(y);
		if (kx != ky)
			return kx > ky ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

static void sp_put_name(FILE *out, const char *s)
{
	for (; *s; s++)
		putc((unsigned char)*s < 0x20 ? ' ' : *s, out);
}

static void sp_side(const struct sp_rollup_row *row, bool total, double scale, double *ns,
		    double *n)
{
	*ns = row ? (double)(total ? row->total_ns : row->self_ns) * scale : 0;
	*n = row ? (double)(total ? row->total_samples : row->self_samples) * scale : 0;
}

/*
 * A weight column: a time, or a number whose unit is in the column's name,
 * whole unless --normalize scaled it (2 counts x 0.6364 is 1.27, not 1).
 */
static const char *sp_amount(char *out, size_t len, double v, bool timed)
{
	if (timed)
		return sp_textfmt_time(out, len, (uint64_t)llround(v));
	snprintf(out, len, v == round(v) ? "%.0f" : "%.2f", v);
	return out;
}

static const char *sp_delta(char *out, size_t len, double v, bool timed)
{
	if (timed)
		return sp_textfmt_delta(out, len, (int64_t)llround(v));
	if (fabs(v) < 0.005)
		snprintf(out, len, "0"); /* not "-0.00" */
	else
		snprintf(out, len, v == round(v) ? "%+.0f" : "%+.2f", v);
	return out;
}

int sp_diff_write(const struct sp_model *base, const struct sp_model *cur,
		  const struct sp_diff_opts *o, FILE *out)
{
	struct sp_rollup rb, rn;
	struct sp_drow *rows = NULL;
	size_t n = 0, counts[5] = {0};
	char t1[SP_TEXTFMT_LEN], t2[SP_TEXTFMT_LEN], t3[SP_TEXTFMT_LEN], p[SP_TEXTFMT_LEN];
	memset(&rn, 0, sizeof(rn));
	int err = sp_rollup_build(&rb, base, o->by, false);
	if (!err)
		err = sp_rollup_build(&rn, cur, o->by, false);
	if (err)
		goto out;
	err = -ENOMEM;
	rows = calloc(rb.n_rows + rn.n_rows + 1, sizeof(*rows));
	if (!rows)
		goto out;

	double scale = 1;
	if (o->normalize && rn.total_ns)
		scale = (double)rb.total_ns / (double)rn.total_ns;
	double threshold = o->threshold_pct / 100.0 * (double)rb.total_ns;
	/* every base row, then the new rows the base does not have */
	for (int side = 0; side < 2; side++) {
		const struct sp_rollup *r = side ? &rn : &rb;
		for (size_t i = 0; i < r->n_rows; i++) {
			const char *name = r->rows[i].name;
			int64_t bi = side ? sp_rollup_find(&rb, name) : (int64_t)i;
			if (side && bi >= 0)
				continue;
			if (o->name_re && regexec(o->name_re, name, 0, NULL, 0) != 0)
				continue;
			int64_t ni = side ? (int64_t)i : sp_rollup_find(&rn, name);
			const struct sp_rollup_row *b = bi >= 0 ? &rb.rows[bi] : NULL;
			const struct sp_rollup_row *c = ni >= 0 ? &rn.rows[ni] : NULL;
			struct sp_drow *d = &rows[n++];
			d->name = name;
			sp_side(b, o->total, 1, &d->base_ns, &d->base_n);
			sp_side(c, o->total, scale, &d->new_ns, &d->new_n);
			double delta = d->new_ns - d->base_ns;
			/* callers with no self time on either side (or only on one side's
			 * stacks) say nothing about self time */
			if (d->base_ns == 0 && d->new_ns == 0) {
				n--;
				continue;
			}
			/* judged on the compared time: a function that was on the
			 * stack but never the leaf in BASE had no self time to grow */
			if (!b || !b->total_samples || d->base_ns == 0)
				d->change = SP_ADDED;
			else if (!c || !c->total_samples || d->new_ns == 0)
				d->change = SP_REMOVED;
			else if (fabs(delta) <= threshold)
				d->change = SP_UNCHANGED;
			else
				d->change = delta > 0 ? SP_INCREASED : SP_DECREASED;
			counts[d->change]++;
		}
	}
	sp_sort_by = o->sort;
	qsort(rows, n, sizeof(*rows), sp_drow_cmp);

	/* weights in the kind's unit, as top prints them: "13.000ms CPU",
	 * "7 count of user"; an amount's columns hold plain numbers */
	bool cpu = sp_model_is_cpu(base), timed = sp_model_is_timed(base);
	const char *unit = sp_model_unit(base), *kind = sp_model_event_name(base);
	const char *noun = timed ? "time" : unit;
	fprintf(out, "base: %s  %s %s%s in %llu samples\n", o->base_name ? o->base_name : "base",
		sp_textfmt_weight(t1, sizeof(t1), rb.total_ns, unit), cpu ? "CPU" : "of ",
		cpu ? "" : kind, (unsigned long long)rb.total_samples);
	fprintf(out, "new:  %s  %s %s%s in %llu samples", o->new_name ? o->new_name : "new",
		sp_textfmt_weight(t1, sizeof(t1), rn.total_ns, unit), cpu ? "CPU" : "of ",
		cpu ? "" : kind, (unsigned long long)rn.total_samples);
	if (scale != 1)
		fprintf(out, " (normalized: new values x %.4f)", scale);
	static const char *const order[] = {"biggest growth first", "largest change first",
					    "by base", "by new", "by name"};
	bool by_side = o->sort == SP_DIFF_BASE || o->sort == SP_DIFF_NEW;
	fprintf(out, "\ncomparing %s %s per %s, %s%s%s", o->total ? "total" : "self", noun,
		sp_rollup_by_noun(o->by, false), order[o->sort], by_side ? " " : "",
		by_side ? noun : "");
	if (o->name_re)
		fprintf(out, "; names matching '%s' only", o->name_pattern ? o->name_pattern : "");
	if (o->threshold_pct > 0)
		fprintf(out, "; changes within %.2f%% of the base total are unchanged",
			o->threshold_pct);
	char base_h[SP_TEXTFMT_LEN], new_h[SP_TEXTFMT_LEN];
	snprintf(base_h, sizeof(base_h), "Base %s", noun);
	snprintf(new_h, sizeof(new_h), "New %s", noun);
	fprintf(out, "\n\n%-9s  %8s  %8s  %12s  %12s  %12s  %8s  %s\n", "Status", "Base #", "New #",
		base_h, new_h, "Delta", "Delta %", "Name");
	size_t shown = o->limit && o->limit < n ? o->limit : n;
	err = 0;
	for (size_t i = 0; i < shown && !err; i++) {
		const struct sp_drow *d = &rows[i];
		double delta = d->new_ns - d->base_ns;
		if (d->change == SP_ADDED)
			snprintf(p, sizeof(p), "new");
		else if (d->base_ns > 0)
			snprintf(p, sizeof(p), "%+.2f%%", delta * 100.0 / d->base_ns);
		else
			snprintf(p, sizeof(p), "-");
		fprintf(out, "%-9s  %8.0f  %8.0f  %12s  %12s  %12s  %8s  ",
			sp_change_names[d->change], d->base_n, d->new_n,
			sp_amount(t1, sizeof(t1), d->base_ns, timed),
			sp_amount(t2, sizeof(t2), d->new_ns, timed),
			sp_delta(t3, sizeof(t3), delta, timed), p);
		sp_put_name(out, d->name);
		putc('\n', out);
		err = sp_textfmt_out_error(out);
	}
	if (!err) {
		fprintf(out, "\n");
		for (int c = 0; c < 5; c++)
			fprintf(out, "%s%s %zu", c ? ", " : "", sp_change_names[c], counts[c]);
		fprintf(out, "\n");
		err = sp_textfmt_out_error(out);
	}
out:
	sp_rollup_release(&rb);
	sp_rollup_release(&rn);
	free(rows);
	return err;
}
