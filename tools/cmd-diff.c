/*
 * cmd-diff.c - `stackprof diff`: compare two profiles, function by function
 * (HTA TraceDiff style), or as a two-column folded file for a differential
 * flame graph.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collapse.h"
#include "commands.h"
#include "diff.h"
#include "model.h"

static const char sp_diff_usage[] =
    "usage: stackprof diff [options] BASE NEW\n"
    "\n"
    "Compares two profiles like HTA's TraceDiff: every function is added,\n"
    "removed, increased, decreased or unchanged, with its sample count and\n"
    "time in each profile and the change. With --collapsed, prints instead\n"
    "the two-column folded form 'stack base new' that flamegraph.pl draws as\n"
    "a differential flame graph (red grew, blue shrank).\n"
    "\n"
    "options:\n"
    "      --sort KEY         delta (default: biggest growth first), abs, base, new,\n"
    "                         name\n"
    "      --compare self|total  compare self time (default) or total time\n"
    "      --aggregate-by KEY function (default), file, module or thread\n"
    "      --threshold P      changes within P% of the base total count as unchanged\n"
    "                         (default 0)\n"
    "      --normalize        scale NEW to BASE's total CPU time first\n"
    "  -t, --limit N          print at most N rows (default: all)\n"
    "      --collapsed        print 'stack base new' lines instead of the table\n"
    "      --metric us|samples  values of --collapsed lines (default us)\n"
    "      --frame STYLE      frame text of --collapsed: 'func (file:line)' (default),\n"
    "                         'func' or 'pytorch'\n"
    "      --per-thread       root --collapsed stacks at their thread\n"
    "  -o, --output FILE      write to FILE instead of stdout\n"
    "      --thread TID[,TID] keep only these threads (in both profiles)\n"
    "      --range NAME       keep only samples inside a range named NAME\n"
    "      --no-ranges        leave named ranges out\n"
    "      --no-inline        one frame per address: no inlined frames\n"
    "      --search-dir DIR   look for binaries missing at their recorded path in DIR\n"
    "      --basenames        file names without directories\n"
    "  -h, --help             show this help\n"
    "\n"
    "examples:\n"
    "  stackprof diff before.prof after.prof --threshold 0.5\n"
    "  stackprof diff before.prof after.prof --sort abs -t 20 --normalize\n"
    "  stackprof diff --collapsed --frame func before.prof after.prof > d.folded\n"
    "  flamegraph.pl d.folded > diff.svg   # or: stackprof flamegraph --diff\n";

enum {
	OPT_SORT = 256,
	OPT_COMPARE,
	OPT_AGGREGATE,
	OPT_THRESHOLD,
	OPT_NORMALIZE,
	OPT_COLLAPSED,
	OPT_METRIC,
	OPT_FRAME,
	OPT_PER_THREAD,
};

static const struct option sp_diff_longopts[] = {
    {"sort", required_argument, NULL, OPT_SORT},
    {"compare", required_argument, NULL, OPT_COMPARE},
    {"aggregate-by", required_argument, NULL, OPT_AGGREGATE},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"normalize", no_argument, NULL, OPT_NORMALIZE},
    {"limit", required_argument, NULL, 't'},
    {"collapsed", no_argument, NULL, OPT_COLLAPSED},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"frame", required_argument, NULL, OPT_FRAME},
    {"per-thread", no_argument, NULL, OPT_PER_THREAD},
    {"output", required_argument, NULL, 'o'},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int sp_cmd_diff(int argc, char **argv)
{
	struct sp_diff_opts dopt = {0};
	struct sp_collapse_opts co = {0};
	struct sp_model_opts mo = {0};
	bool collapsed = false;
	const char *output = "-";
	int32_t *tids = NULL;
	struct sp_cli_input in[2] = {{0}, {0}};
	FILE *out = NULL;
	unsigned long v;
	char *end;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "t:o:h", sp_diff_longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SORT:
			if (sp_diff_sort_parse(optarg, &dopt.sort)) {
				sp_cli_error("--sort: '%s' is not delta, abs, base, new or name",
					     optarg);
				goto out;
			}
			break;
		case OPT_COMPARE:
			if (strcmp(optarg, "self") && strcmp(optarg, "total")) {
				sp_cli_error("--compare: '%s' is not self or total", optarg);
				goto out;
			}
			dopt.total = !strcmp(optarg, "total");
			break;
		case OPT_AGGREGATE:
			if (sp_rollup_by_parse(optarg, &dopt.by)) {
				sp_cli_error(
				    "--aggregate-by: '%s' is not function, file, module or "
				    "thread",
				    optarg);
				goto out;
			}
			break;
		case OPT_THRESHOLD:
			errno = 0;
			dopt.threshold_pct = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(dopt.threshold_pct >= 0) ||
			    dopt.threshold_pct > 100) {
				sp_cli_error("--threshold: '%s' is not a percentage from 0 to 100",
					     optarg);
				goto out;
			}
			break;
		case OPT_NORMALIZE:
			dopt.normalize = co.normalize = true;
			break;
		case 't':
			if (!sp_cli_parse_ulong("--limit", optarg, 0, 1000000000, &v))
				goto out;
			dopt.limit = v;
			break;
		case OPT_COLLAPSED:
			collapsed = true;
			break;
		case OPT_METRIC:
			if (!sp_cli_parse_metric(optarg, &co.metric))
				goto out;
			break;
		case OPT_FRAME:
			if (!sp_cli_parse_frame(optarg, &co.label.style))
				goto out;
			break;
		case OPT_PER_THREAD:
			mo.per_thread = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			rc = sp_cli_usage(sp_diff_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_diff_usage, &rc))
				goto out;
			break;
		}
	}
	if (!sp_cli_operands(argc, optind, 2, "diff: expected BASE and NEW profiles", sp_diff_usage,
			     &rc))
		goto out;

	rc = SP_EXIT_ERROR;
	for (int i = 0; i < 2; i++)
		if (!sp_cli_load(argv[optind + i], &mo, &in[i]))
			goto out;
	dopt.base_name = argv[optind];
	dopt.new_name = argv[optind + 1];
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = collapsed ? sp_collapse_write_diff(in[0].model, in[1].model, &co, out)
			    : sp_diff_write(in[0].model, in[1].model, &dopt, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in[0]) || sp_cli_partial(&in[1]));
	out = NULL; /* closed */
out:
	for (int i = 0; i < 2; i++)
		sp_cli_unload(&in[i]);
	free(tids);
	return rc;
}
