/*
 * cmd-table.c - `stackprof table`: the key_averages(group_by_stack_n=N).table()
 * summary of torch.profiler, from samples.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "model.h"
#include "table.h"

static const char sp_table_usage[] =
    "usage: stackprof table [options] PROFILE\n"
    "\n"
    "Prints the summary torch.profiler prints with\n"
    "prof.key_averages(group_by_stack_n=N).table(sort_by=KEY, row_limit=N):\n"
    "one row per function (and, with N > 0, per distinct N innermost frames\n"
    "of the stack from that function outward, listed in the Source Location\n"
    "column as 'file(line): function'). Self CPU counts samples where the\n"
    "function is the leaf, CPU total samples where it is anywhere (once per\n"
    "sample under recursion); Samples is how many samples CPU total covers.\n"
    "Named ranges (record_function) are rows too.\n"
    "\n"
    "options:\n"
    "  -n, --group-by-stack-n N  group rows by the N innermost frames (default 0)\n"
    "  -s, --sort-by KEY      self_cpu_time_total (default), cpu_time_total, count\n"
    "  -l, --row-limit N      print at most N rows (default 100; 0 for all)\n"
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
    "  stackprof table rn.prof --group-by-stack-n 5 --row-limit 5\n"
    "  stackprof table rn.prof --sort-by cpu_time_total --row-limit 10\n";

static const struct option sp_table_longopts[] = {
    {"group-by-stack-n", required_argument, NULL, 'n'},
    {"sort-by", required_argument, NULL, 's'},
    {"row-limit", required_argument, NULL, 'l'},
    {"output", required_argument, NULL, 'o'},
    SP_CLI_MODEL_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int sp_cmd_table(int argc, char **argv)
{
	struct sp_table_opts to = {.row_limit = 100};
	struct sp_model_opts mo = {0};
	const char *output = "-";
	int32_t *tids = NULL;
	struct sp_cli_input in = {0};
	FILE *out = NULL;
	unsigned long v;
	int rc = SP_EXIT_USAGE, c;

	while ((c = getopt_long(argc, argv, "n:s:l:o:h", sp_table_longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!sp_cli_parse_ulong("--group-by-stack-n", optarg, 0, 256, &v))
				goto out;
			to.stack_n = (unsigned)v;
			break;
		case 's':
			if (sp_table_sort_parse(optarg, &to.sort)) {
				sp_cli_error("--sort-by: '%s' is not self_cpu_time_total, "
					     "cpu_time_total or count",
					     optarg);
				goto out;
			}
			break;
		case 'l':
			/* torch spells "no limit" -1 */
			if (!strcmp(optarg, "-1"))
				v = 0;
			else if (!sp_cli_parse_ulong("--row-limit", optarg, 0, 1000000000, &v))
				goto out;
			to.row_limit = v;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			rc = sp_cli_usage(sp_table_usage, false);
			goto out;
		default:
			/* the options every symbolizing command shares */
			if (!sp_cli_model_option(&mo, &tids, c, optarg, sp_table_usage, &rc))
				goto out;
			break;
		}
	}
	if (!sp_cli_operands(argc, optind, 1, "table: expected one PROFILE", sp_table_usage, &rc))
		goto out;

	rc = SP_EXIT_ERROR;
	if (!sp_cli_load(argv[optind], &mo, &in))
		goto out;
	if (!in.model->total_samples)
		sp_cli_warn("%s: no samples%s", argv[optind],
			    mo.n_tids || mo.range ? " match the filters" : "");
	out = sp_cli_open_output(output);
	if (!out)
		goto out;
	int err = sp_table_write(in.model, &to, out);
	rc = sp_cli_end_output(out, output, err, sp_cli_partial(&in));
	out = NULL; /* closed */
out:
	sp_cli_unload(&in);
	free(tids);
	return rc;
}
