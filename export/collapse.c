#include "export/collapse.h"
#include "export/folded.h"
#include "export/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Whether m's weights are nanoseconds (cpu, wall), printed as microseconds;
 * other kinds' weights (bytes, counts) are printed as they are. */
static bool sp_weight_is_time(const struct sp_model *m)
{
	return !m->event || !m->event->unit || !strcmp(m->event->unit, "ns");
}

static uint64_t sp_value(const struct sp_fstack *s, int side, enum sp_metric metric, double scale,
			 bool time)
{
	if (metric == SP_METRIC_SAMPLES)
		return (uint64_t)llround((double)s->samples[side] * scale);
	/* sum the nanoseconds of the merged stack first, then round once */
	return (uint64_t)llround((double)s->weight_ns[side] * scale / (time ? 1e3 : 1));
}

static int sp_collapse_run(const struct sp_model *a, const struct sp_model *b,
			   const struct sp_collapse_opts *o, FILE *out)
{
	struct sp_label_opts lo = o->label;
	lo.folded = true;
	struct sp_labels *labels = sp_labels_new(&lo);
	struct sp_folded f;
	int err = -ENOMEM;
	sp_folded_init(&f, labels);
	if (!labels || sp_folded_add(&f, a, 0) || (b && sp_folded_add(&f, b, 1)) ||
	    sp_folded_sort(&f))
		goto out;

	double scale = 1;
	if (b && o->normalize) {
		bool samples = o->metric == SP_METRIC_SAMPLES;
		double tb = samples ? (double)f.total_samples[0] : (double)f.total_ns[0];
		double tn = samples ? (double)f.total_samples[1] : (double)f.total_ns[1];
		if (tn > 0)
			scale = tb / tn;
	}
	bool time = sp_weight_is_time(a);
	err = 0;
	for (size_t i = 0; i < f.n_stacks && !err; i++) {
		const struct sp_fstack *s = &f.stacks[i];
		uint64_t v0 = sp_value(s, 0, o->metric, 1, time);
		uint64_t v1 = b ? sp_value(s, 1, o->metric, scale, time) : 0;
		if (!v0 && !v1)
			continue;
		for (uint32_t k = 0; k < s->n; k++) {
			if (k)
				putc(';', out);
			fputs(sp_labels_text(labels, f.ids[s->off + k]), out);
		}
		if (b)
			fprintf(out, " %" PRIu64 " %" PRIu64 "\n", v0, v1);
		else
			fprintf(out, " %" PRIu64 "\n", v0);
		err = sp_textfmt_out_error(out);
	}
out:
	sp_folded_release(&f);
	sp_labels_free(labels);
	return err;
}

int sp_collapse_write(const struct sp_model *m, const struct sp_collapse_opts *o, FILE *out)
{
	return sp_collapse_run(m, NULL, o, out);
}

int sp_collapse_write_diff(const struct sp_model *base, const struct sp_model *cur,
			   const struct sp_collapse_opts *o, FILE *out)
{
	return sp_collapse_run(base, cur, o, out);
}
