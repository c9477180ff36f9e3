/*
 * cmd-export.c - `stackprof export`: the profile in other tools' formats:
 * pprof (go tool pprof, Pyroscope), Chrome trace JSON (Perfetto,
 * chrome://tracing) and speedscope JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chrome.h"
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "pprof.h"
#include "speedscope.h"

static const char sp_export_usage[] =
    "usage: stackprof export --format FORMAT [options] PROFILE -o FILE\n"
    "\n"
    "Writes the profile for other viewers:\n"
    "  pprof       gzip-compressed profile.proto: go tool pprof, Pyroscope,\n"
    "              speedscope; samples carry thread, thread_id and range labels\n"
    "  chrome      Trace Event JSON: a timeline per thread for ui.perfetto.dev\n"
    "              and chrome://tracing\n"
    "  speedscope  speedscope's own JSON format: one sampled profile per thread\n"
    "\n"
    "options:\n"
    "  -f, --format FORMAT    pprof, chrome or speedscope (required)\n"
    "  -o, --output FILE      write to FILE (default stdout; pprof is binary and\n"
    "                         is not written to a terminal)\n"
    "      --frame STYLE      frame names for chrome and speedscope: 'func' (default;\n"
    "                         file and line go in their own fields), 'func (file:line)'\n"
    "                         or 'pytorch'\n"
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
    "  stackprof export --format pprof rn.prof -o rn.pb.gz && go tool pprof -top rn.pb.gz\n"
    "  stackprof export --format chrome rn.prof -o rn.trace.json   # open in Perfetto\n"
    "  stackprof export --format speedscope rn.prof -o rn.speedscope.json\n";

enum {
	OPT_FRAME = 256,
	OPT_PER_THREAD,
};

static const struct option sp_export_longopts[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"frame", required_argument, NULL, OPT_FRAME},
    {"per-thread", no_argument, NULL, OPT_PER_THREAD},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

enum sp_format { SP_FMT_NONE, SP_FMT_PPROF, SP_FMT_CHROME, SP_FMT_SPEEDSCOPE };

int sp_cmd_export(int argc, char **argv)
{
	struct sp_label_opts lo = {.style = SP_LABEL_FUNC};
	struct sp_model_opts mo = {0};
	enum sp_format fmt = SP_FMT_NONE;
	const char *output = "-";
	int32_t *tids = NULL;
	struct sp_cli_input in = {0};
	FILE *out = NULL;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "f:o:h", sp_export_longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "pprof"))
				fmt = SP_FMT_PPROF;
			else if (!strcmp(optarg, "chrome") || !strcmp(optarg, "perfetto"))
				fmt = SP_FMT_CHROME;
			else if (!strcmp(optarg, "speedscope"))
				fmt = SP_FMT_SPEEDSCOPE;
			else {
				sp_cli_error("--format: '%s' is not pprof, chrome or speedscope",
					     optarg);
				goto out;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_FRAME:
			if (!sp_cli_parse_frame(optarg, &lo.style))
				goto out;
			break;
		case OPT_PER_THREAD:
			mo.per_thread = true;
			break;
		case 'h':
			rc = sp_cli_usage(sp_export_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_export_usage, &rc))
				goto out;
			break;
		}
	}
	if (fmt == SP_FMT_NONE) {
		sp_cli_error("export: --format pprof, chrome or speedscope is required");
		rc = sp_cli_usage(sp_export_usage, true);
		goto out;
	}
	if (!sp_cli_operands(argc, optind, 1, "export: expected one PROFILE", sp_export_usage, &rc))
		goto out;
	if (fmt == SP_FMT_PPROF && !strcmp(output, "-") && isatty(STDOUT_FILENO)) {
		sp_cli_error("export: pprof output is gzip data; give -o FILE or redirect stdout");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_load(argv[optind], &mo, &in))
		goto out;
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err;
	switch (fmt) {
	case SP_FMT_PPROF:
		err = sp_pprof_write(in.model, out);
		break;
	case SP_FMT_CHROME:
		err = sp_chrome_write(in.model, &lo, out);
		break;
	default:
		err = sp_speedscope_write(in.model, &lo, "stackprof " SP_VERSION, out);
		break;
	}
	/* a cut-off profile still exported what it had, but the run must not look clean */
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in));
	out = NULL; /* closed */
out:
	sp_cli_unload(&in);
	free(tids);
	return rc;
}
