/*
 * cmd-export.c - `stackprof export`: the profile in other tools' formats:
 * pprof (go tool pprof, Pyroscope), Chrome trace JSON (Perfetto,
 * chrome://tracing) and speedscope JSON.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/chrome.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "export/model.h"
#include "export/pprof.h"
#include "export/speedscope.h"

static const struct sp_cli_opt sp_export_opts[] = {
    {'f', 'f', "format", "FORMAT", "pprof, chrome or speedscope (required)"},
    {'o', 'o', "output", "FILE",
     "write to FILE (default stdout; pprof is binary and\nis not written to a terminal)"},
    SP_CLI_OPT_FRAME("'func' for chrome and speedscope,\nwhich have fields for file and line"),
    SP_CLI_OPT_PER_THREAD,
    SP_CLI_OPTS_FILTERS,
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_export_cmd = {
    .name = "export",
    .synopsis = "--format FORMAT [options] PROFILE -o FILE",
    .about = "Writes the profile for other viewers:\n"
	     "  pprof       gzip-compressed profile.proto: go tool pprof, Pyroscope,\n"
	     "              speedscope; samples carry thread, thread_id and range labels\n"
	     "  chrome      Trace Event JSON: a timeline per thread for ui.perfetto.dev\n"
	     "              and chrome://tracing; kinds of time only (cpu, wall)\n"
	     "  speedscope  speedscope's own JSON format: one sampled profile per thread\n",
    .opts = sp_export_opts,
    .more = "examples:\n"
	    "  stackprof export --format pprof rn.prof -o rn.pb.gz && go tool pprof -top "
	    "rn.pb.gz\n"
	    "  stackprof export --format chrome rn.prof -o rn.trace.json   # open in Perfetto\n"
	    "  stackprof export --format speedscope rn.prof -o rn.speedscope.json\n",
};

enum sp_format { SP_FMT_NONE, SP_FMT_PPROF, SP_FMT_CHROME, SP_FMT_SPEEDSCOPE };

int sp_cmd_export(int argc, char **argv)
{
	struct sp_label_opts lo = {.style = SP_LABEL_FUNC};
	struct sp_cli_filters flt;
	struct sp_cli_args a;
	enum sp_format fmt = SP_FMT_NONE;
	const char *output = "-";
	struct sp_cli_input in = {0};
	FILE *out = NULL;
	int rc = SP_EXIT_USAGE, c;

	memset(&flt, 0, sizeof(flt));
	sp_cli_args_init(&a, &sp_export_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		switch (c) {
		case 'f':
			if (!strcmp(a.value, "pprof"))
				fmt = SP_FMT_PPROF;
			else if (!strcmp(a.value, "chrome") || !strcmp(a.value, "perfetto"))
				fmt = SP_FMT_CHROME;
			else if (!strcmp(a.value, "speedscope"))
				fmt = SP_FMT_SPEEDSCOPE;
			else {
				sp_cli_bad(&a, "--format: '%s' is not pprof, chrome or speedscope",
					   a.value);
				goto out;
			}
			break;
		case 'o':
			output = a.value;
			break;
		case SP_OPT_FRAME:
			if (!sp_cli_frame(&a, &lo.style))
				goto out;
			break;
		case SP_OPT_PER_THREAD:
			flt.mo.per_thread = true;
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
	if (fmt == SP_FMT_NONE) {
		sp_cli_bad(&a, "--format pprof, chrome or speedscope is required");
		goto out;
	}
	if (!sp_cli_operands(&a, 1, "one PROFILE"))
		goto out;
	if (fmt == SP_FMT_PPROF && !strcmp(output, "-") && isatty(STDOUT_FILENO)) {
		sp_cli_bad(&a, "pprof output is gzip data; give -o FILE or redirect stdout");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_output_ok(output))
		goto out;
	if (!sp_cli_load(a.operands[0], &flt, &in)) {
		rc = in.rc;
		goto out;
	}
	if (fmt == SP_FMT_CHROME && !sp_model_is_timed(in.model)) {
		/* a trace is a timeline: a count or bytes has no duration to draw
		 * (export/chrome.h); checked before -o FILE is created */
		sp_cli_error("--format chrome draws time, and %s samples weigh %s; use "
			     "--format speedscope or pprof for them",
			     sp_model_event_name(in.model), sp_model_unit(in.model));
		rc = SP_EXIT_USAGE;
		goto out;
	}
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
out:
	sp_cli_unload(&in);
	sp_cli_filters_release(&flt);
	sp_cli_args_release(&a);
	return rc;
}
