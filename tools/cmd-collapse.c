/*
 * cmd-collapse.c - `stackprof collapse`: collapsed stacks for flamegraph.pl,
 * in the format of PyTorch's export_stacks.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collapse.h"
#include "commands.h"
#include "model.h"

static const char sp_collapse_usage[] =
    "usage: stackprof collapse [options] PROFILE\n"
    "\n"
    "Prints one line per distinct stack: frames root first joined by ';', a\n"
    "space, and the stack's self CPU time in microseconds (PyTorch's\n"
    "export_stacks format, read by flamegraph.pl, speedscope and inferno).\n"
    "Spaces, ';', tabs and newlines inside a frame become '_'.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE      write to FILE instead of stdout\n"
    "      --metric us|samples  value per line: CPU microseconds (default) or samples\n"
    "      --frame STYLE      frame text: 'func (file:line)' (default), 'func',\n"
    "                         or 'pytorch' for PyTorch's 'file(line): func'\n"
    "      --per-thread       root every stack at its thread (\"name-tid\")\n"
    "      --inline-mark      append _[i] to inlined frames (flamegraph.pl --color=java\n"
    "                         shows them in aqua, as perf's --inline output)\n"
    "      --thread TID[,TID] keep only these threads\n"
    "      --range NAME       keep only samples inside a range named NAME\n"
    "      --no-ranges        leave named ranges out of the stacks\n"
    "      --no-inline        one frame per address: no inlined frames\n"
    "      --basenames        file names without directories\n"
    "      --search-dir DIR   look for binaries missing at their recorded path in DIR\n"
    "  -h, --help             show this help\n"
    "\n"
    "examples:\n"
    "  stackprof collapse rn.prof > rn.folded && flamegraph.pl rn.folded > rn.svg\n"
    "  stackprof collapse --frame func --per-thread rn.prof | sort -k2 -n | tail\n"
    "  stackprof collapse --metric samples --range 'LINEAR PASS' rn.prof\n";

enum {
	OPT_METRIC = 256,
	OPT_FRAME,
	OPT_PER_THREAD,
	OPT_INLINE_MARK,
};

static const struct option sp_collapse_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"frame", required_argument, NULL, OPT_FRAME},
    {"per-thread", no_argument, NULL, OPT_PER_THREAD},
    {"inline-mark", no_argument, NULL, OPT_INLINE_MARK},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int sp_cmd_collapse(int argc, char **argv)
{
	struct sp_collapse_opts co = {0};
	struct sp_model_opts mo = {0};
	const char *output = "-";
	int32_t *tids = NULL;
	struct sp_cli_input in = {0};
	FILE *out = NULL;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "o:h", sp_collapse_longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
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
		case OPT_INLINE_MARK:
			co.label.inline_mark = true;
			break;
		case 'h':
			rc = sp_cli_usage(sp_collapse_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_collapse_usage, &rc))
				goto out;
			break;
		}
	}
	if (!sp_cli_operands(argc, optind, 1, "collapse: expected one PROFILE", sp_collapse_usage,
			     &rc))
		goto out;

	rc = SP_EXIT_ERROR;
	if (!sp_cli_load(argv[optind], &mo, &in))
		goto out;
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_collapse_write(in.model, &co, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in));
	out = NULL; /* closed */
out:
	sp_cli_unload(&in);
	free(tids);
	return rc;
}
