/*
 * cmd-collapse.c - `stackprof collapse`: collapsed stacks for flamegraph.pl,
 * in the format of PyTorch's export_stacks.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "export/collapse.h"
#include "tools/commands.h"
#include "export/model.h"
#include "export/view.h"

enum {
	OPT_OPS = 256,
};

static const struct sp_cli_opt sp_collapse_opts[] = {
    SP_CLI_OPT_OUTPUT,
    SP_CLI_OPT_METRIC,
    SP_CLI_OPT_FRAME("'func (file:line)'"),
    SP_CLI_OPT_PER_THREAD,
    SP_CLI_OPT_PER_PROCESS,
    SP_CLI_OPT_INLINE_MARK,
    {OPT_OPS, 0, "ops", NULL,
     "stacks of aten operators only (aten::conv2d;...),\n"
     "'[no_operator]' for samples outside every operator"},
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_collapse_cmd = {
    .name = "collapse",
    .synopsis = "[options] PROFILE...",
    .about = "Prints one line per distinct stack: frames root first joined by ';', a\n"
	     "space, and the stack's self CPU time in microseconds (PyTorch's\n"
	     "export_stacks format, read by flamegraph.pl, speedscope and inferno).\n"
	     "Spaces, ';', tabs and newlines inside a frame become '_'. The frames\n"
	     "read 'func (file:line)'; --frame pytorch writes them as export_stacks\n"
	     "does, 'file(line): func' with its space made '_', Python files by their\n"
	     "import path (torch/nn/modules/conv.py(459):_Conv2d._conv_forward).\n"
	     "File names are shortened as --strip-path auto does (a build tree's\n"
	     "root goes; --strip-path none keeps every name whole). With --ops, the\n"
	     "frames are the aten operators on each stack (at::_ops::NAME::call,\n"
	     "named aten::NAME), outermost first: a flame graph of the model's\n"
	     "operators. Several PROFILEs (a run's PATH and its PATH.<pid>\n"
	     "children) are read as one; --per-process roots each stack at its\n"
	     "process.\n",
    .opts = sp_collapse_opts,
    .more = "examples:\n"
	    "  stackprof collapse rn.prof > rn.folded && flamegraph.pl rn.folded > rn.svg\n"
	    "  stackprof collapse --frame pytorch torch.prof > torch.folded\n"
	    "  stackprof collapse --frame func --per-thread rn.prof | sort -k2 -n | tail\n"
	    "  stackprof collapse --metric samples --range 'LINEAR PASS' rn.prof\n"
	    "  stackprof collapse --ops torch.prof > ops.folded\n"
	    "  stackprof collapse --per-process pool.prof pool.prof.* > pool.folded\n"
	    "  stackprof collapse --event user steps.prof      (samples of another kind)\n",
};

int sp_cmd_collapse(int argc, char **argv)
{
	struct sp_collapse_opts co = {0};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	const char *output = "-";
	struct sp_cli_set set = {0};
	const enum sp_view_by by_op = SP_VIEW_OP;
	bool ops = false, per_process = false;
	FILE *out = NULL;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	/* flamegraph.pl draws these frames in narrow boxes, as our own SVG
	 * does: a build tree's root (/build/reproducible-path/...) says nothing */
	flt.mo.short_paths = true;
	sp_cli_args_init(&a, &sp_collapse_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case 'o':
			output = a.value;
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
		case SP_OPT_PER_PROCESS:
			per_process = true;
			break;
		case SP_OPT_INLINE_MARK:
			co.label.inline_mark = true;
			break;
		case OPT_OPS:
			ops = true;
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

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	if (!sp_cli_load_set(a.operands, (size_t)a.n_operands, &flt, &set) ||
	    !sp_cli_set_merge(&set, a.operands, per_process, ops ? &by_op : NULL)) {
		rc = set.rc;
		goto out;
	}
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_collapse_write(set.model, &co, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_set_partial(&set));
out:
	sp_cli_set_release(&set);
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
