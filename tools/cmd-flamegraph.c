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
	struct sp_profile *prof = NULL, *bprof = NULL;
	struct sp_model *model = NULL, *bmodel = NULL;
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
			if (strcmp(optarg, "us") && strcmp(optarg, "samples")) {
				sp_cli_error("--metric: '%s' is not us or samples", optarg);
				goto out;
			}
			fo.metric = strcmp(optarg, "us") ? SP_METRIC_SAMPLES : SP_METRIC_US;
			break;
		case OPT_FRAME:
			if (sp_label_style_parse(optarg, &fo.label.style)) {
				sp_cli_error("--frame: '%s' is not 'func', 'func (file:line)' or "
					     "'pytorch'",
					     optarg);
				goto out;
			}
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
	if (optind != argc - 1) {
		sp_cli_error("flamegraph: expected one PROFILE");
		rc = sp_cli_usage(sp_flamegraph_usage, true);
		goto out;
	}
	if (fo.normalize && !base_path) {
		sp_cli_error("--normalize needs --diff BASE");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	prof = sp_cli_read_profile(argv[optind]);
	if (!prof)
		goto out;
	model = sp_cli_build_model(argv[optind], prof, &mo);
	if (!model)
		goto out;
	if (base_path) {
		bprof = sp_cli_read_profile(base_path);
		if (!bprof)
			goto out;
		bmodel = sp_cli_build_model(base_path, bprof, &mo);
		if (!bmodel)
			goto out;
	}
	if (!model->total_samples)
		sp_cli_warn("%s: no samples%s; the graph is empty", argv[optind],
			    mo.n_tids || mo.range ? " match the filters" : "");
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_flamegraph_write(model, bmodel, &fo, out);
	/* a cut-off profile still drew what it had, but the run must not look clean */
	rc = sp_cli_end_output(
	    out, output, err, prof->status != SP_READ_OK || (bprof && bprof->status != SP_READ_OK));
	out = NULL; /* closed */
out:
	sp_model_free(model);
	sp_model_free(bmodel);
	sp_profile_free(prof);
	sp_profile_free(bprof);
	free(tids);
	return rc;
}
