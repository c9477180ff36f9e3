#include "export/speedscope.h"
#include "export/json.h"
#include "export/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int sp_speedscope_write(const struct sp_model *m, const struct sp_label_opts *lo,
			const char *exporter, FILE *out)
{
	struct sp_label_opts o = *lo;
	o.folded = false;
	struct sp_labels *labels = sp_labels_new(&o);
	uint32_t *lab = NULL, *order = NULL;
	int32_t *first = NULL; /* per label: a model frame that has it */
	int err = -ENOMEM;
	if (!labels || !(lab = sp_labels_map(labels, m)) ||
	    !(order = sp_model_samples_by_thread(m)))
		goto out;
	size_t n_labels = sp_labels_count(labels);
	first = malloc((n_labels ? n_labels : 1) * sizeof(*first));
	if (!first)
		goto out;
	memset(first, 0xff, (n_labels ? n_labels : 1) * sizeof(*first));
	for (size_t i = 0; i < m->n_frames; i++)
		if (first[lab[i]] < 0)
			first[lab[i]] = (int32_t)i;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", out);
	fputs("\"shared\":{\"frames\":[\n", out);
	for (size_t i = 0; i < n_labels; i++) {
		const struct sp_mframe *f = first[i] >= 0 ? &m->frames[first[i]] : NULL;
		fputs(i ? ",\n{\"name\":" : "{\"name\":", out);
		sp_json_str(out, sp_labels_text(labels, (uint32_t)i));
		if (f && f->file && sp_mframe_is_code(f)) {
			fputs(",\"file\":", out);
			sp_json_str(out, f->file);
			/* a label that merges several lines of a function has no one
			 * line, but a Python function has a first line (py-spy's
			 * --function frames carry it too) */
			if (f->line && o.style != SP_LABEL_FUNC)
				fprintf(out, ",\"line\":%u", f->line);
			else if (f->kind == SP_MFRAME_PYTHON && f->def_line)
				fprintf(out, ",\"line\":%u", f->def_line);
		}
		putc('}', out);
	}
	fputs("]},\n\"profiles\":[", out);
	err = sp_textfmt_out_error(out);

	/* speedscope's units: the time ones, "bytes", and "none" for the rest (counts) */
	const char *unit = sp_model_is_timed(m)			? "nanoseconds"
			   : !strcmp(sp_model_unit(m), "bytes") ? "bytes"
								: "none";
	bool first_profile = true;
	char name[300];
	for (size_t i = 0; i < m->n_samples && !err;) {
		uint32_t t = m->samples[order[i]].thread;
		size_t end = i;
		uint64_t total = 0;
		while (end < m->n_samples && m->samples[order[end]].thread == t)
			total += m->samples[order[end++]].weight_ns;
		fputs(first_profile ? "\n{\"type\":\"sampled\",\"name\":"
				    : ",\n{\"type\":\"sampled\",\"name\":",
		      out);
		first_profile = false;
		sp_json_str(out, sp_model_thread_label(&m->threads[t], name, sizeof(name)));
		fprintf(out,
			",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
			",\n\"samples\":[",
			unit, total);
		/* consecutive samples of one stack are one entry: the timeline is the same */
		size_t n_entries = 0;
		for (size_t k = i; k < end && !err; k++) {
			uint32_t st = m->samples[order[k]].stack;
			if (k > i && m->samples[order[k - 1]].stack == st)
				continue;
			const struct sp_mstack *s = &m->stacks[st];
			fputs(n_entries++ ? ",[" : "[", out);
			for (uint32_t f = 0; f < s->n; f++)
				fprintf(out, f ? ",%u" : "%u", lab[s->frames[f]]);
			putc(']', out);
			err = sp_textfmt_out_error(out);
		}
		fputs("],\n\"weights\":[", out);
		n_entries = 0;
		for (size_t k = i; k < end && !err;) {
			uint32_t st = m->samples[order[k]].stack;
			uint64_t w = 0;
			while (k < end && m->samples[order[k]].stack == st)
				w += m->samples[order[k++]].weight_ns;
			fprintf(out, n_entries++ ? ",%" PRIu64 : "%" PRIu64, w);
		}
		fputs("]}", out);
		err = sp_textfmt_out_error(out);
		i = end;
	}
	if (!err) {
		const char *cmd = m->prof && m->prof->header.cmdline ? m->prof->header.cmdline : "";
		fputs("],\n\"name\":", out);
		sp_json_str(out, cmd[0] ? cmd : "stackprof profile");
		fputs(",\"activeProfileIndex\":0,\"exporter\":", out);
		sp_json_str(out, exporter);
		fputs("}\n", out);
		err = sp_textfmt_out_error(out);
	}
out:
	sp_labels_free(labels);
	free(lab);
	free(order);
	free(first);
	return err;
}
