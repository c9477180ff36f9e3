/*
 * cmd-flamegraph.c - `stackprof flamegraph`: an interactive SVG flame graph
 * written by stackprof itself, plain, icicle or differential.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "export/flamegraph.h"
#include "export/model.h"
#include "export/view.h"

enum {
	OPT_TITLE = 256,
	OPT_SUBTITLE,
	OPT_REVERSE,
	OPT_WIDTH,
	OPT_MINWIDTH,
	OPT_DIFF,
	OPT_NORMALIZE,
	OPT_OPS,
};

static const struct sp_cli_opt sp_flamegraph_opts[] = {
    {'o', 'o', "output", "FILE", "write to FILE (default stdout, unless it is a terminal)"},
    {OPT_TITLE, 0, "title", "TEXT", "the title (default \"Flame Graph\")"},
    {OPT_SUBTITLE, 0, "subtitle", "TEXT", "the line under it (default: command line and totals)"},
    {OPT_REVERSE, 0, "reverse", NULL, "icicle graph: the root at the top (also --inverted)"},
    {OPT_REVERSE, 0, "inverted", NULL, NULL},
    {OPT_WIDTH, 0, "width", "PX", "image width (default 1200)"},
    {OPT_MINWIDTH, 0, "minwidth", "W",
     "leave out frames narrower than W px, or W% of the\nwidth with a % sign (default 0.1%)"},
    {OPT_DIFF, 0, "diff", "BASE",
     "differential graph against the profile BASE: widths\nfrom PROFILE, red where it grew, "
     "blue where it shrank"},
    {OPT_NORMALIZE, 0, "normalize", NULL, "with --diff, scale BASE to PROFILE's total first"},
    {OPT_OPS, 0, "ops", NULL,
     "a graph of aten operators only (as collapse --ops):\n"
     "the model's operators, '[no operator]' for the rest"},
    SP_CLI_OPT_METRIC,
    SP_CLI_OPT_FRAME("'func (file:line)'"),
    SP_CLI_OPT_INLINE_MARK,
    SP_CLI_OPT_PER_THREAD,
    SP_CLI_OPT_PER_PROCESS,
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_flamegraph_cmd = {
    .name = "flamegraph",
    .synopsis = "[options] PROFILE... -o OUT.svg",
    .about = "Writes a self-contained interactive flame graph (SVG with a small\n"
	     "script; open it in a browser): click a frame to zoom, 'Reset Zoom' to\n"
	     "go back, Search (or Ctrl-F) highlights frames matching a regular\n"
	     "expression and shows their share, tooltips show time (or the --event\n"
	     "kind's unit, '12 count') and percentage.\n"
	     "Frames narrower than --minwidth are left out so that huge profiles stay\n"
	     "small and fast. File names are shortened as --strip-path auto does\n"
	     "(--strip-path none keeps them whole). Several PROFILEs (a run's PATH\n"
	     "and its PATH.<pid> children) are drawn as one; --per-process puts each\n"
	     "process at the root.\n",
    .opts = sp_flamegraph_opts,
    .more = "examples:\n"
	    "  stackprof flamegraph rn.prof -o rn.svg\n"
	    "  stackprof flamegraph rn.prof --frame func --reverse --title ResNet18 -o icicle.svg\n"
	    "  stackprof flamegraph after.prof --diff before.prof --normalize -o diff.svg\n"
	    "  stackprof flamegraph torch.prof --ops --title 'ResNet18 operators' -o ops.svg\n"
	    "  stackprof flamegraph pool.prof pool.prof.* --per-process -o pool.svg\n",
};

/* "2", "0.5px" or "0.1%". */
static bool sp_parse_minwidth(const char *s, struct sp_flamegraph_opts *o)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || v > 1e6)
		return false;
	o->minwidth = v;
	o->minwidth_pct = !strcmp(end, "%");
	return !*end || !strcmp(end, "px") || o->minwidth_pct;
}

int sp_cmd_flamegraph(int argc, char **argv)
{
	struct sp_flamegraph_opts fo = {.minwidth = 0.1, .minwidth_pct = true};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	const char *output = "-", *base_path = NULL;
	struct sp_cli_set set = {0}, base = {0};
	const enum sp_view_by by_op = SP_VIEW_OP;
	const struct sp_model *models[2];
	bool ops = false, per_process = false;
	FILE *out = NULL;
	unsigned long v;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	/* boxes are narrow: a build tree's root says nothing a label has room for */
	flt.mo.short_paths = true;
	sp_cli_args_init(&a, &sp_flamegraph_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case 'o':
			output = a.value;
			break;
		case OPT_TITLE:
			fo.title = a.value;
			break;
		case OPT_SUBTITLE:
			fo.subtitle = a.value;
			break;
		case OPT_REVERSE:
			fo.inverted = true;
			break;
		case OPT_WIDTH:
			if (!sp_cli_ulong(&a, 100, 100000, &v))
				goto out;
			fo.width = (unsigned)v;
			break;
		case OPT_MINWIDTH:
			if (!sp_parse_minwidth(a.value, &fo)) {
				sp_cli_bad(
				    &a, "--minwidth: '%s' is not a width such as 0.5, 2px or 0.1%%",
				    a.value);
				goto out;
			}
			break;
		case OPT_DIFF:
			base_path = a.value;
			break;
		case OPT_NORMALIZE:
			fo.normalize = true;
			break;
		case OPT_OPS:
			ops = true;
			break;
		case SP_OPT_METRIC:
			if (!sp_cli_metric(&a, &fo.metric))
				goto out;
			break;
		case SP_OPT_FRAME:
			if (!sp_cli_frame(&a, &fo.label.style))
				goto out;
			break;
		case SP_OPT_INLINE_MARK:
			fo.label.inline_mark = true;
			break;
		case SP_OPT_PER_THREAD:
			flt.mo.per_thread = true;
			break;
		case SP_OPT_PER_PROCESS:
			per_process = true;
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
	if (fo.normalize && !base_path) {
		sp_cli_bad(&a, "--normalize needs --diff BASE");
		goto out;
	}
	if (!strcmp(output, "-") && isatty(STDOUT_FILENO)) {
		/* pages of SVG on a terminal help nobody */
		sp_cli_bad(&a, "a flame graph is an SVG file for a browser; give -o FILE.svg or "
			       "redirect stdout");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	/* the base of a --diff is one profile, as given */
	char *base_paths[1] = {(char *)base_path};
	if (!sp_cli_load_set(a.operands, (size_t)a.n_operands, &flt, &set) ||
	    !sp_cli_set_merge(&set, a.operands, per_process, ops ? &by_op : NULL) ||
	    (base_path &&
	     (!sp_cli_load_set(base_paths, 1, &flt, &base) ||
	      !sp_cli_set_merge(&base, base_paths, per_process, ops ? &by_op : NULL)))) {
		rc = base.rc == SP_EXIT_USAGE ? base.rc : set.rc;
		goto out;
	}
	if (!set.model->total_samples)
		sp_cli_warn("%s: no samples%s; the graph is empty", a.operands[0],
			    flt.threads || flt.mo.range ? " match the filters" : "");
	models[0] = set.model;
	models[1] = base_path ? base.model : NULL;
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_flamegraph_write(models[0], models[1], &fo, out);
	/* a cut-off profile still drew what it had, but the run must not look clean */
	rc = sp_cli_end_output(out, output, err,
			       sp_cli_set_partial(&set) || sp_cli_set_partial(&base));
out:
	sp_cli_set_release(&set);
	sp_cli_set_release(&base);
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
