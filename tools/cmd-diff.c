/*
 * cmd-diff.c - `stackprof diff`: compare two profiles, function by function
 * (HTA TraceDiff style), or as a two-column folded file for a differential
 * flame graph.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "export/collapse.h"
#include "tools/commands.h"
#include "export/diff.h"
#include "export/model.h"
#include "export/view.h"

enum {
	OPT_COMPARE = 256,
	OPT_AGGREGATE,
	OPT_THRESHOLD,
	OPT_NORMALIZE,
	OPT_COLLAPSED,
	OPT_NAME,
};

static const struct sp_cli_opt sp_diff_opts[] = {
    SP_CLI_OPT_SORT_BY("abs (default: largest change first, either way), delta\n"
		       "(biggest growth first), base, new, name"),
    SP_CLI_OPT_ROW_LIMIT("default: all"),
    {OPT_COMPARE, 0, "compare", "self|total", "compare self time (default) or total time"},
    {OPT_AGGREGATE, 0, "aggregate-by", "KEY",
     "function (default), file, line (file:line), module,\n"
     "thread, op (aten operators), module-path (nn.Module\n"
     "paths), python or python-line (Python code, self\n"
     "time to the innermost Python frame); with --collapsed,\n"
     "op and module-path fold their stacks"},
    {OPT_NAME, 0, "name", "REGEX",
     "compare only names matching the POSIX extended REGEX\n"
     "(as top --name; not with --collapsed)"},
    {OPT_THRESHOLD, 0, "threshold", "P",
     "changes within P% of the base total count as unchanged\n(default 0)"},
    {OPT_NORMALIZE, 0, "normalize", NULL,
     "scale NEW to BASE's total (CPU time, or the\n--event kind's) first"},
    {OPT_COLLAPSED, 0, "collapsed", NULL, "print 'stack base new' lines instead of the table"},
    SP_CLI_OPT_METRIC,
    SP_CLI_OPT_FRAME("'func (file:line)'"),
    SP_CLI_OPT_PER_THREAD,
    SP_CLI_OPT_OUTPUT,
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_diff_cmd = {
    .name = "diff",
    .synopsis = "[options] BASE NEW",
    .about = "Compares two profiles like HTA's TraceDiff: every function is added,\n"
	     "removed, increased, decreased or unchanged, with its sample count and\n"
	     "time in each profile and the change. A function whose compared time is\n"
	     "0 in BASE is added, 0 in NEW removed. With --collapsed, prints instead\n"
	     "the two-column folded form 'stack base new' that flamegraph.pl draws as\n"
	     "a differential flame graph (red grew, blue shrank); --metric, --frame\n"
	     "and --per-thread shape those lines. Filters apply to both profiles.\n",
    .opts = sp_diff_opts,
    .more = "examples:\n"
	    "  stackprof diff before.prof after.prof --threshold 0.5\n"
	    "  stackprof diff before.prof after.prof --sort-by abs --row-limit 20 --normalize\n"
	    "  stackprof diff --aggregate-by op --normalize resnet-a.prof resnet-b.prof\n"
	    "  stackprof diff --aggregate-by op --name '^aten::(conv|mkldnn)' a.prof b.prof\n"
	    "  stackprof diff --collapsed --frame func before.prof after.prof > d.folded\n"
	    "  flamegraph.pl d.folded > diff.svg   # or: stackprof flamegraph --diff\n",
};

int sp_cmd_diff(int argc, char **argv)
{
	/* largest change first, growth or shrink: a shrink sorted after every
	 * growth hid the biggest change under --row-limit (helper-15) */
	struct sp_diff_opts dopt = {.sort = SP_DIFF_ABS};
	struct sp_collapse_opts co = {0};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	bool collapsed = false;
	const char *output = "-";
	struct sp_cli_input in[2] = {{0}, {0}};
	struct sp_view *views[2] = {NULL, NULL};
	const struct sp_model *models[2];
	FILE *out = NULL;
	regex_t re;
	bool have_re = false;
	char *end;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	sp_cli_args_init(&a, &sp_diff_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case SP_OPT_SORT_BY:
			if (sp_diff_sort_parse(a.value, &dopt.sort)) {
				sp_cli_bad(&a, "%s: '%s' is not abs, delta, base, new or name",
					   a.spelled, a.value);
				goto out;
			}
			break;
		case SP_OPT_ROW_LIMIT:
			if (!sp_cli_row_limit(&a, &dopt.limit))
				goto out;
			break;
		case OPT_COMPARE:
			if (strcmp(a.value, "self") && strcmp(a.value, "total")) {
				sp_cli_bad(&a, "--compare: '%s' is not self or total", a.value);
				goto out;
			}
			dopt.total = !strcmp(a.value, "total");
			break;
		case OPT_AGGREGATE:
			if (sp_rollup_by_parse(a.value, &dopt.by)) {
				sp_cli_bad(&a, "--aggregate-by: '%s' is not " SP_ROLLUP_KEYS,
					   a.value);
				goto out;
			}
			break;
		case OPT_THRESHOLD:
			errno = 0;
			dopt.threshold_pct = strtod(a.value, &end);
			if (end == a.value || *end || errno || !(dopt.threshold_pct >= 0) ||
			    dopt.threshold_pct > 100) {
				sp_cli_bad(&a,
					   "--threshold: '%s' is not a percentage from 0 to 100",
					   a.value);
				goto out;
			}
			break;
		case OPT_NORMALIZE:
			dopt.normalize = co.normalize = true;
			break;
		case OPT_COLLAPSED:
			collapsed = true;
			break;
		case OPT_NAME:
			if (!sp_cli_regex(&a, &re, &have_re))
				goto out;
			dopt.name_re = &re;
			dopt.name_pattern = a.value;
			break;
		case SP_OPT_METRIC:
			if (!sp_cli_metric(&a, &co.metric))
				goto out;
			break;
		case SP_OPT_FRAME:
			if (!sp_cli_frame(&a, &co.label.style))
				goto out;
			break;
		case SP_OPT_PER_THREAD:
			flt.mo.per_thread = true;
			break;
		case 'o':
			output = a.value;
			break;
		default:
			if (sp_cli_filter(&a, c, &flt) < 0)
				goto out;
			break;
		}
	}
	if (c < 0) {
		rc = a.rc;
		goto out;
	}
	if (!sp_cli_operands(&a, 2, "BASE and NEW profiles"))
		goto out;
	if (collapsed && have_re) {
		/* a stack has many names: which to keep is flamegraph's search */
		sp_cli_bad(&a, "--name selects rows of the table; --collapsed prints whole stacks");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	for (int i = 0; i < 2; i++) {
		if (!sp_cli_load(a.operands[i], &flt, &in[i])) {
			rc = in[i].rc;
			goto out;
		}
		models[i] = in[i].model;
		/* the table's rollup makes its own; the folded stacks need the view */
		if (collapsed && (dopt.by == SP_ROLLUP_OP || dopt.by == SP_ROLLUP_MODULE_PATH)) {
			views[i] = sp_cli_view(a.operands[i], in[i].model, dopt.by);
			if (!views[i])
				goto out;
			models[i] = sp_view_model(views[i]);
		}
	}
	dopt.base_name = a.operands[0];
	dopt.new_name = a.operands[1];
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = collapsed ? sp_collapse_write_diff(models[0], models[1], &co, out)
			    : sp_diff_write(models[0], models[1], &dopt, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in[0]) || sp_cli_partial(&in[1]));
out:
	if (have_re)
		regfree(&re);
	for (int i = 0; i < 2; i++) {
		sp_view_free(views[i]);
		sp_cli_unload(&in[i]);
	}
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
