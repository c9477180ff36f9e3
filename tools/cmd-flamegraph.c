/*
 * cmd-flamegraph.c - `stackprof flamegraph`: an interactive SVG flame graph
 * written by stackprof itself, plain, icicle or differential.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "flamegraph.h"
#include "model.h"

static const char sp_flamegraph_usage[] =
    "usage: stackprof flamegraph [options] PROFILE -o OUT.svg\n"
    "\n"
    "Writes a self-contained interactive flame graph (SVG with a small\n"
    "script; open it in a browser): click a frame to zoom, 'Reset Zoom' to\n"
    "go back, Search (or Ctrl-F) highlights frames matching a regular\n"
    "expression and shows their share, tooltips show time and percentage.\n"
    "Frames narrower than --minwidth are left out so that huge profiles stay\n"
    "small and fast.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE      write to FILE (default stdout)\n"
    "      --title TEXT       the title (default \"Flame Graph\")\n"
    "      --subtitle TEXT    the line under it (default: command line and totals)\n"
    "      --reverse, --inverted  icicle graph: the root at the top\n"
    "      --width PX         image width (default 1200)\n"
    "      --minwidth W       leave out frames narrower than W px, or W% of the\n"
    "                         width with a % sign (default 0.1%)\n"
    "      --diff BASE        differential graph against the profile BASE: widths\n"
    "                         from PROFILE, red where it grew, blue where it shrank\n"
    "      --normalize        with --diff, scale BASE to PROFILE's total first\n"
    "      --metric us|samples  frame widths by CPU time (default) or samples\n"
    "      --frame STYLE      'func (file:line)' (default), 'func' or 'pytorch'\n"
    "      --inline-mark      append _[i] to inlined frames (and colour them aqua)\n"
    "      --per-thread       root every stack at its thread\n"
    "      --thread TID[,TID] keep only these threads\n"
    "      --range NAME       keep only samples inside a range named NAME\n"
    "      --no-ranges        leave named ranges out\n"
    "      --no-inline        one frame per address: no inlined frames\n"
    "      --basenames        file names without directories\n"
    "      --search-dir DIR   look for binaries missing at their recorded path in DIR\n"
    "  -h, --help             show this help\n"
    "\n"
    "examples:\n"
    "  stackprof flamegraph rn.prof -o rn.svg\n"
    "  stackprof flamegraph rn.prof --frame func --reverse --title ResNet18 -o icicle.svg\n"
    "  stackprof flamegraph after.prof --diff before.prof --normalize -o diff.svg\n";

enum {
	OPT_TITLE = 256,
	OPT_SUBTITLE,
	OPT_REVERSE,
	OPT_WIDTH,
	OPT_MINWIDTH,
	OPT_DIFF,
	OPT_NORMALIZE,
	OPT_METRIC,
	OPT_FRAME,
	OPT_INLINE_MARK,
	OPT_PER_THREAD,
};

static const struct option sp_flamegraph_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"title", required_argument, NULL, OPT_TITLE},
    {"subtitle", required_argument, NULL, OPT_SUBTITLE},
    {"reverse", no_argument, NULL, OPT_REVERSE},
    {"inverted", no_argument, NULL, OPT_REVERSE},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"minwidth", required_argument, NULL, OPT_MINWIDTH},
    {"diff", required_argument, NULL, OPT_DIFF},
    {"normalize", no_argument, NULL, OPT_NORMALIZE},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"frame", required_argument, NULL, OPT_FRAME},
    {"inline-mark", no_argument, NULL, OPT_INLINE_MARK},
    {"per-thread", no_argument, NULL, OPT_PER_THREAD},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
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
	struct sp_model_opts mo = {0};
	const char *output = "-", *base_path = NULL;
	int32_t *tids = NULL;
	struct sp_cli_input in = {0}, base = {0};
	FILE *out = NULL;
	unsigned long v;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "o:h", sp_flamegraph_longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case OPT_TITLE:
			fo.title = optarg;
			break;
		case OPT_SUBTITLE:
			fo.subtitle = optarg;
			break;
		case OPT_REVERSE:
			fo.inverted = true;
			break;
		case OPT_WIDTH:
			if (!sp_cli_parse_ulong("--width", optarg, 100, 100000, &v))
				goto out;
			fo.width = (unsigned)v;
			break;
		case OPT_MINWIDTH:
			if (!sp_parse_minwidth(optarg, &fo)) {
				sp_cli_error("--minwidth: '%s' is not a width such as 0.5, 2px or "
					     "0.1%%",
					     optarg);
				goto out;
			}
			break;
		case OPT_DIFF:
			base_path = optarg;
			break;
		case OPT_NORMALIZE:
			fo.normalize = true;
			break;
		case OPT_METRIC:
			if (!sp_cli_parse_metric(optarg, &fo.metric))
				goto out;
			break;
		case OPT_FRAME:
			if (!sp_cli_parse_frame(optarg, &fo.label.style))
				goto out;
			break;
		case OPT_INLINE_MARK:
			fo.label.inline_mark = true;
			break;
		case OPT_PER_THREAD:
			mo.per_thread = true;
			break;
		case 'h':
			rc = sp_cli_usage(sp_flamegraph_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_flamegraph_usage, &rc))
				goto out;
			break;
		}
	}
	if (!sp_cli_operands(argc, optind, 1, "flamegraph: expected one PROFILE",
			     sp_flamegraph_usage, &rc))
		goto out;
	if (fo.normalize && !base_path) {
		sp_cli_error("--normalize needs --diff BASE");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_load(argv[optind], &mo, &in) ||
	    (base_path && !sp_cli_load(base_path, &mo, &base)))
		goto out;
	if (!in.model->total_samples)
		sp_cli_warn("%s: no samples%s; the graph is empty", argv[optind],
			    mo.n_tids || mo.range ? " match the filters" : "");
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_flamegraph_write(in.model, base.model, &fo, out);
	/* a cut-off profile still drew what it had, but the run must not look clean */
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in) || sp_cli_partial(&base));
	out = NULL; /* closed */
out:
	sp_cli_unload(&in);
	sp_cli_unload(&base);
	free(tids);
	return rc;
}
