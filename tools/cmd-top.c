/*
 * cmd-top.c - `stackprof top`: the heaviest functions, files, modules or
 * threads, filtered and ordered the way MegEngine's profile_analyze does.
 */
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "model.h"
#include "textfmt.h"
#include "top.h"

static const char sp_top_usage[] =
    "usage: stackprof top [options] PROFILE\n"
    "\n"
    "Lists the functions (or files, modules, threads) with the most CPU time,\n"
    "in the spirit of MegEngine's profile_analyze. Self time counts samples\n"
    "where the function is the leaf; total time samples where it appears at\n"
    "all (once per sample under recursion).\n"
    "\n"
    "options:\n"
    "  -t, --top N            print N rows (default 20; 0 for all)\n"
    "      --name REGEX       keep names matching the POSIX extended REGEX\n"
    "      --aggregate-by KEY function (default), file, module or thread\n"
    "      --order-by COL     self (default), total, samples or name; descending,\n"
    "                         or ascending with a leading '+' (+self); name sorts\n"
    "                         A to Z, +name Z to A\n"
    "      --min-time TIME    keep rows with at least TIME self time (10ms, 1.5s,\n"
    "                         200us, 500ns; a bare number is seconds)\n"
    "      --max-time TIME    keep rows with at most TIME self time\n"
    "      --percent-above P  keep rows whose self time is more than P% of the total\n"
    "  -o, --output FILE      write to FILE instead of stdout\n"
    "      --thread TID[,TID] keep only these threads\n"
    "      --range NAME       keep only samples inside a range named NAME\n"
    "      --no-ranges        leave named ranges out\n"
    "      --no-inline        one frame per address: no inlined frames\n"
    "      --basenames        file names without directories\n"
    "      --search-dir DIR   look for binaries missing at their recorded path in DIR\n"
    "  -h, --help             show this help\n"
    "\n"
    "examples:\n"
    "  stackprof top rn.prof -t 10\n"
    "  stackprof top rn.prof --name '^(conv|gemm)' --order-by total\n"
    "  stackprof top rn.prof --aggregate-by module --percent-above 1\n"
    "  stackprof top rn.prof --min-time 10ms --order-by +self\n";

enum {
	OPT_NAME = 256,
	OPT_AGGREGATE,
	OPT_ORDER,
	OPT_MIN_TIME,
	OPT_MAX_TIME,
	OPT_PERCENT,
};

static const struct option sp_top_longopts[] = {
    {"top", required_argument, NULL, 't'},
    {"name", required_argument, NULL, OPT_NAME},
    {"aggregate-by", required_argument, NULL, OPT_AGGREGATE},
    {"order-by", required_argument, NULL, OPT_ORDER},
    {"min-time", required_argument, NULL, OPT_MIN_TIME},
    {"max-time", required_argument, NULL, OPT_MAX_TIME},
    {"percent-above", required_argument, NULL, OPT_PERCENT},
    {"output", required_argument, NULL, 'o'},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int sp_cmd_top(int argc, char **argv)
{
	struct sp_top_opts to = {.top = 20, .percent_above = -1};
	struct sp_model_opts mo = {0};
	const char *output = "-";
	int32_t *tids = NULL;
	struct sp_cli_input in = {0};
	FILE *out = NULL;
	regex_t re;
	bool have_re = false;
	unsigned long v;
	char *end;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "t:o:h", sp_top_longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!sp_cli_parse_ulong("--top", optarg, 0, 1000000000, &v))
				goto out;
			to.top = v;
			break;
		case OPT_NAME: {
			if (have_re)
				regfree(&re);
			int e = regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB);
			if (e) {
				char msg[256];
				regerror(e, &re, msg, sizeof(msg));
				sp_cli_error("--name: '%s': %s", optarg, msg);
				goto out;
			}
			have_re = true;
			to.name_re = &re;
			break;
		}
		case OPT_AGGREGATE:
			if (sp_rollup_by_parse(optarg, &to.by)) {
				sp_cli_error(
				    "--aggregate-by: '%s' is not function, file, module or "
				    "thread",
				    optarg);
				goto out;
			}
			break;
		case OPT_ORDER:
			if (sp_top_col_parse(optarg, &to.order, &to.ascending)) {
				sp_cli_error("--order-by: '%s' is not [+]self, total, samples or "
					     "name",
					     optarg);
				goto out;
			}
			break;
		case OPT_MIN_TIME:
		case OPT_MAX_TIME:
			if (sp_textfmt_parse_duration(optarg, c == OPT_MIN_TIME ? &to.min_ns
										: &to.max_ns)) {
				sp_cli_error("%s: '%s' is not a time such as 10ms, 1.5s or 200us",
					     c == OPT_MIN_TIME ? "--min-time" : "--max-time",
					     optarg);
				goto out;
			}
			break;
		case OPT_PERCENT:
			errno = 0;
			to.percent_above = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(to.percent_above >= 0) ||
			    to.percent_above > 100) {
				sp_cli_error("--percent-above: '%s' is not a percentage from 0 to "
					     "100",
					     optarg);
				goto out;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			rc = sp_cli_usage(sp_top_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_top_usage, &rc))
				goto out;
			break;
		}
	}
	if (!sp_cli_operands(argc, optind, 1, "top: expected one PROFILE", sp_top_usage, &rc))
		goto out;
	if (to.max_ns && to.max_ns < to.min_ns) {
		sp_cli_error("--max-time is below --min-time: no row can match");
		goto out;
	}

	rc = SP_EXIT_ERROR;
	if (!sp_cli_load(argv[optind], &mo, &in))
		goto out;
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_top_write(in.model, &to, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in));
	out = NULL; /* closed */
out:
	if (have_re)
		regfree(&re);
	sp_cli_unload(&in);
	free(tids);
	return rc;
}
