/*
 * cmd-top.c - `stackprof top`: the heaviest functions, files, modules or
 * threads, filtered and ordered the way MegEngine's profile_analyze does.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "export/model.h"
#include "export/textfmt.h"
#include "export/top.h"

enum {
	OPT_NAME = 256,
	OPT_AGGREGATE,
	OPT_MIN_TIME,
	OPT_MAX_TIME,
	OPT_PERCENT,
};

static const struct sp_cli_opt sp_top_opts[] = {
    SP_CLI_OPT_ROW_LIMIT("default 20"),
    SP_CLI_OPT_SORT_BY("self (default), total, samples or name; descending,\n"
		       "or ascending with a leading '+' (+self); name sorts\n"
		       "A to Z, +name Z to A; torch's self_cpu_time_total,\n"
		       "cpu_time_total and count are self, total and samples"),
    {OPT_NAME, 0, "name", "REGEX", "keep names matching the POSIX extended REGEX"},
    {OPT_AGGREGATE, 0, "aggregate-by", "KEY",
     "function (default), file, line (file:line, a Python\n"
     "line included), module, thread, op (aten operators:\n"
     "self time to the innermost, total to every one on the\n"
     "stack), module-path (nn.Module paths from\n"
     "stackprof.torch.label_modules: ResNet/layer1/0/conv1),\n"
     "python or python-line (Python code only, as py-spy\n"
     "counts it: self time to a sample's innermost Python\n"
     "frame, with the native code it called)"},
    {OPT_MIN_TIME, 0, "min-time", "TIME",
     "keep rows with at least TIME self time (10ms, 1.5s,\n200us, 500ns; a bare number is "
     "seconds)"},
    {OPT_MAX_TIME, 0, "max-time", "TIME", "keep rows with at most TIME self time"},
    {OPT_PERCENT, 0, "percent-above", "P",
     "keep rows whose self time is more than P% of the total"},
    {SP_OPT_PER_THREAD, 0, "per-thread", NULL,
     "a row per thread and KEY: the same function in two\n"
     "threads is two rows, its thread (\"name-tid\", as\n"
     "the other views' roots read) in a Thread column"},
    {SP_OPT_PER_PROCESS, 0, "per-process", NULL,
     "a row per process and KEY, its process (\"python3\n"
     "(pid N)\") in a Process column: the PROFILEs of one\n"
     "run side by side"},
    SP_CLI_OPT_OUTPUT,
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_top_cmd = {
    .name = "top",
    .synopsis = "[options] PROFILE...",
    .about = "Lists the functions (or files, modules, threads, aten operators, nn.Module\n"
	     "paths) with the most CPU time, in the spirit of MegEngine's profile_analyze.\n"
	     "Self time counts samples where the function is the leaf; total time\n"
	     "samples where it appears at all (once per sample under recursion). By\n"
	     "operator, a sample is its innermost at::_ops::NAME::call's (aten::NAME),\n"
	     "whatever runs under it; samples with none are '[no operator]'.\n"
	     "Several PROFILEs (a run's PATH and its PATH.<pid> children) are read\n"
	     "as one: their samples add up, function by function.\n",
    .opts = sp_top_opts,
    .more = "examples:\n"
	    "  stackprof top rn.prof --row-limit 10\n"
	    "  stackprof top pool.prof pool.prof.* --per-process\n"
	    "  stackprof top rn.prof --name '^(conv|gemm)' --sort-by total\n"
	    "  stackprof top rn.prof --aggregate-by module --percent-above 1\n"
	    "  stackprof top rn.prof --min-time 10ms --sort-by +self\n"
	    "  stackprof top rn.prof --per-thread --thread 'worker pool'\n"
	    "  stackprof top torch.prof --aggregate-by op --row-limit 10\n"
	    "  stackprof top torch.prof --aggregate-by module-path --sort-by total\n"
	    "  stackprof top torch.prof --aggregate-by python-line --sort-by total\n",
};

int sp_cmd_top(int argc, char **argv)
{
	struct sp_top_opts to = {.top = 20, .percent_above = -1};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	const char *output = "-";
	struct sp_cli_set set = {0};
	bool per_process = false;
	FILE *out = NULL;
	regex_t re;
	bool have_re = false;
	char *end;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	sp_cli_args_init(&a, &sp_top_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case SP_OPT_ROW_LIMIT:
			if (!sp_cli_row_limit(&a, &to.top))
				goto out;
			break;
		case SP_OPT_SORT_BY:
			if (sp_top_col_parse(a.value, &to.order, &to.ascending)) {
				sp_cli_bad(&a, "%s: '%s' is not [+]self, total, samples or name",
					   a.spelled, a.value);
				goto out;
			}
			break;
		case OPT_NAME:
			if (!sp_cli_regex(&a, &re, &have_re))
				goto out;
			to.name_re = &re;
			break;
		case OPT_AGGREGATE:
			if (sp_rollup_by_parse(a.value, &to.by)) {
				sp_cli_bad(&a, "--aggregate-by: '%s' is not " SP_ROLLUP_KEYS,
					   a.value);
				goto out;
			}
			break;
		case OPT_MIN_TIME:
		case OPT_MAX_TIME:
			if (sp_textfmt_parse_duration(a.value, c == OPT_MIN_TIME ? &to.min_ns
										 : &to.max_ns)) {
				sp_cli_bad(&a, "%s: '%s' is not a time such as 10ms, 1.5s or 200us",
					   a.spelled, a.value);
				goto out;
			}
			break;
		case OPT_PERCENT:
			errno = 0;
			to.percent_above = strtod(a.value, &end);
			if (end == a.value || *end || errno || !(to.percent_above >= 0) ||
			    to.percent_above > 100) {
				sp_cli_bad(
				    &a, "--percent-above: '%s' is not a percentage from 0 to 100",
				    a.value);
				goto out;
			}
			break;
		case SP_OPT_PER_THREAD:
			flt.mo.per_thread = to.per_thread = true;
			break;
		case SP_OPT_PER_PROCESS:
			per_process = to.per_process = true;
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
	if (!sp_cli_operands_some(&a, "a PROFILE, or several"))
		goto out;
	if (to.max_ns && to.max_ns < to.min_ns) {
		sp_cli_bad(&a, "--max-time is below --min-time: no row can match");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	/* merged, an operator or module-path view is made per profile first */
	enum sp_view_by vb = to.by == SP_ROLLUP_OP ? SP_VIEW_OP : SP_VIEW_MODULE_PATH;
	to.viewed = (a.n_operands > 1 || per_process) &&
		    (to.by == SP_ROLLUP_OP || to.by == SP_ROLLUP_MODULE_PATH);
	if (!sp_cli_load_set(a.operands, (size_t)a.n_operands, &flt, &set) ||
	    !sp_cli_set_merge(&set, a.operands, per_process, to.viewed ? &vb : NULL)) {
		rc = set.rc;
		goto out;
	}
	if (!to.viewed)
		sp_cli_hint_by(a.operands[0], set.in[0].prof, to.by);
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_top_write(set.model, &to, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_set_partial(&set));
out:
	if (have_re)
		regfree(&re);
	sp_cli_set_release(&set);
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
