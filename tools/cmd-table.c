/*
 * cmd-table.c - `stackprof table`: the key_averages(group_by_stack_n=N).table()
 * summary of torch.profiler, from samples.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "export/model.h"
#include "export/table.h"
#include "export/view.h"

enum {
	OPT_AGGREGATE = 256,
	OPT_PYTHON_STACK,
};

static const struct sp_cli_opt sp_table_opts[] = {
    {'n', 'n', "group-by-stack-n", "N",
     "group rows by the N innermost frames (default 0); by\n"
     "operator, the N Python frames that called it (with\n"
     "none in the profile, the N innermost operators)"},
    {OPT_AGGREGATE, 0, "aggregate-by", "KEY",
     "function (default), op (aten operators, torch's\n"
     "key_averages() rows) or module-path (nn.Module paths\n"
     "from stackprof.torch.label_modules)"},
    {OPT_PYTHON_STACK, 0, "python-stack", NULL,
     "with -n N, a function's Source Location is the N\n"
     "Python lines around it (its own first, if it is\n"
     "Python), as with_stack=True shows them, not its\n"
     "native frames"},
    SP_CLI_OPT_SORT_BY("self_cpu_time_total (default), cpu_time_total or count\n"
		       "(top's self, total and samples are the same keys)"),
    SP_CLI_OPT_ROW_LIMIT("default 100"),
    SP_CLI_OPT_PER_PROCESS,
    SP_CLI_OPT_OUTPUT,
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

/* Whether one of set's models has a Python frame (the profile read Python's frames). */
static bool sp_has_python(const struct sp_cli_set *set)
{
	for (size_t k = 0; k < set->n; k++)
		for (size_t i = 0; i < set->in[k].model->n_frames; i++)
			if (set->in[k].model->frames[i].kind == SP_MFRAME_PYTHON)
				return true;
	return false;
}

static const struct sp_cli_cmd sp_table_cmd = {
    .name = "table",
    .synopsis = "[options] PROFILE...",
    .about = "Prints the summary torch.profiler prints with\n"
	     "prof.key_averages(group_by_stack_n=N).table(sort_by=KEY, row_limit=N):\n"
	     "one row per function (and, with N > 0, per distinct N innermost frames\n"
	     "of the stack from that function outward, listed in the Source Location\n"
	     "column as 'file(line): function'). Self CPU counts samples where the\n"
	     "function is the leaf, CPU total samples where it is anywhere (once per\n"
	     "sample under recursion); Samples is how many samples CPU total covers.\n"
	     "With --event KIND, the columns are that kind's: Self wall and Total wall\n"
	     "for wall time, and for a kind that is not time plain numbers in its\n"
	     "unit (Self count, Total count; Self bytes, Total bytes); the --sort-by\n"
	     "keys keep their names.\n"
	     "Named ranges (record_function) are rows too. A Name longer than 55\n"
	     "characters loses its middle to '...' (torch keeps its start): its end,\n"
	     "an offset or an argument list, tells rows apart. A Source Location too\n"
	     "long for its column is cut in the middle of its path or argument list;\n"
	     "the function name stays.\n"
	     "\n"
	     "--aggregate-by op makes the rows aten operators, as key_averages() has\n"
	     "them: a sample's self time is its innermost at::_ops::NAME::call's\n"
	     "(aten::NAME, whatever code runs under it), its total time every\n"
	     "operator's on its stack; samples with none are one row, '[no operator]'.\n"
	     "With --group-by-stack-n N and Python frames in the profile, an operator's\n"
	     "Source Location is the N Python lines that called it, innermost first, as\n"
	     "with_stack=True shows them, and its rows split by them; without Python\n"
	     "frames, its N innermost operators.\n"
	     "--python-stack does the same for the rows of functions: their Source\n"
	     "Location is the N Python lines that called them, and a Python\n"
	     "function's starts with its own line (so its rows split by line).\n"
	     "--aggregate-by module-path makes them nn.Module paths (ResNet/layer1/0),\n"
	     "self time the innermost module's, total time each enclosing module's;\n"
	     "samples in none are '[no module]'.\n"
	     "Several PROFILEs (a run's PATH and its PATH.<pid> children) are read\n"
	     "as one; --per-process adds each process as a row, a root above its\n"
	     "functions.\n",
    .opts = sp_table_opts,
    .more = "examples:\n"
	    "  stackprof table rn.prof --group-by-stack-n 5 --row-limit 5\n"
	    "  stackprof table rn.prof --sort-by cpu_time_total --row-limit 10\n"
	    "  stackprof table pool.prof pool.prof.* --row-limit 10\n"
	    "  stackprof table torch.prof --aggregate-by op --row-limit 10\n"
	    "  stackprof table torch.prof --aggregate-by op --group-by-stack-n 3\n"
	    "  stackprof table torch.prof --aggregate-by module-path --sort-by cpu_time_total\n",
};

int sp_cmd_table(int argc, char **argv)
{
	struct sp_table_opts to = {.row_limit = 100};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	const char *output = "-";
	struct sp_cli_set set = {0};
	enum sp_rollup_by by = SP_ROLLUP_FUNCTION;
	bool per_process = false;
	FILE *out = NULL;
	unsigned long v;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	sp_cli_args_init(&a, &sp_table_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case 'n':
			if (!sp_cli_ulong(&a, 0, 256, &v))
				goto out;
			to.stack_n = (unsigned)v;
			break;
		case SP_OPT_SORT_BY:
			if (sp_table_sort_parse(a.value, &to.sort)) {
				sp_cli_bad(&a,
					   "%s: '%s' is not self_cpu_time_total, "
					   "cpu_time_total or count",
					   a.spelled, a.value);
				goto out;
			}
			break;
		case SP_OPT_ROW_LIMIT:
			if (!sp_cli_row_limit(&a, &to.row_limit))
				goto out;
			break;
		case OPT_PYTHON_STACK:
			to.python_stack = true;
			break;
		case OPT_AGGREGATE:
			if (sp_rollup_by_parse(a.value, &by) ||
			    (by != SP_ROLLUP_FUNCTION && by != SP_ROLLUP_OP &&
			     by != SP_ROLLUP_MODULE_PATH)) {
				sp_cli_bad(
				    &a, "--aggregate-by: '%s' is not function, op or module-path",
				    a.value);
				goto out;
			}
			break;
		case SP_OPT_PER_PROCESS:
			per_process = true;
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
	if (to.python_stack && by == SP_ROLLUP_MODULE_PATH) {
		sp_cli_bad(&a, "--python-stack: module paths have no stack entries; it "
			       "applies to functions and operators");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	if (!sp_cli_load_set(a.operands, (size_t)a.n_operands, &flt, &set)) {
		rc = set.rc;
		goto out;
	}
	/* operators by their Python callers, as with_stack groups them, when
	 * the profile has Python frames to show */
	bool python = sp_has_python(&set);
	to.python_callers = by == SP_ROLLUP_OP && to.stack_n && python;
	if (to.python_stack && to.stack_n && by == SP_ROLLUP_FUNCTION && !python)
		sp_cli_warn("%s: --python-stack: the profile has no Python frames; the "
			    "Source Location lists native ones",
			    a.operands[0]);
	to.python_stack = to.python_stack && by == SP_ROLLUP_FUNCTION && python;
	enum sp_view_by vb = to.python_callers		   ? SP_VIEW_OP_PYTHON
			     : by == SP_ROLLUP_MODULE_PATH ? SP_VIEW_MODULE_PATH
							   : SP_VIEW_OP;
	if (!sp_cli_set_merge(&set, a.operands, per_process,
			      to.python_callers || by != SP_ROLLUP_FUNCTION ? &vb : NULL))
		goto out;
	if (!set.model->total_samples)
		sp_cli_warn("%s: no samples%s", a.operands[0],
			    flt.threads || flt.mo.range ? " match the filters" : "");
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_table_write(set.model, &to, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_set_partial(&set));
out:
	sp_cli_set_release(&set);
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
