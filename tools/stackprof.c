/*
 * stackprof.c - the CLI's front door: a table of subcommands.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const struct sp_command sp_commands[] = {
    {"run", sp_cmd_run, "run a program under the profiler, then print a summary"},
    {"info", sp_cmd_info, "print a profile's header, modules, threads and counts"},
    {"collapse", sp_cmd_collapse, "collapsed stacks for flamegraph.pl (PyTorch export_stacks)"},
    {"table", sp_cmd_table, "key_averages(group_by_stack_n=N).table() style summary"},
    {"top", sp_cmd_top, "top functions, files, modules or threads (profile_analyze style)"},
    {"diff", sp_cmd_diff, "compare two profiles (TraceDiff style)"},
    {"flamegraph", sp_cmd_flamegraph, "write an interactive flame graph SVG"},
    {"export", sp_cmd_export, "write pprof, Chrome trace (Perfetto) or speedscope files"},
    {"symbolize", sp_cmd_symbolize, "addr2line-compatible address lookup (-e ELF ADDR...)"},
    {"cache", sp_cmd_cache, "keep copies of binaries by build-id, for after a rebuild"},
};

static const char sp_usage_head[] =
    "usage: stackprof <command> [options] [args]\n"
    "\n"
    "A sampling CPU profiler for native and model-inference programs. It is\n"
    "injected with LD_PRELOAD, samples each thread on a timer of its CPU time, and resolves\n"
    "frames to function (file:line) with libdw after the run.\n"
    "\n"
    "commands:\n";

static const char sp_usage_tail[] =
    "\n"
    "examples:\n"
    "  stackprof run -o rn.prof -- ./resnet18 --batch 8\n"
    "  stackprof collapse rn.prof > rn.folded && flamegraph.pl rn.folded > rn.svg\n"
    "  stackprof flamegraph rn.prof -o rn.svg\n"
    "  stackprof table rn.prof --group-by-stack-n 5 --row-limit 10\n"
    "\n"
    "'stackprof help <command>' (or 'stackprof <command> --help') shows a command's\n"
    "options.\n";

static int sp_usage(FILE *f)
{
	fputs(sp_usage_head, f);
	for (size_t i = 0; i < sizeof(sp_commands) / sizeof(sp_commands[0]); i++)
		fprintf(f, "  %-11s %s\n", sp_commands[i].name, sp_commands[i].summary);
	fputs(sp_usage_tail, f);
	return f == stdout ? SP_EXIT_OK : SP_EXIT_USAGE;
}

static const struct sp_command *sp_find(const char *name)
{
	for (size_t i = 0; i < sizeof(sp_commands) / sizeof(sp_commands[0]); i++)
		if (!strcmp(name, sp_commands[i].name))
			return &sp_commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	/* `stackprof collapse p | head` must end quietly: EPIPE is handled per write */
	signal(SIGPIPE, SIG_IGN);

	if (argc < 2)
		return sp_usage(stderr);
	const char *cmd = argv[1];
	if (!strcmp(cmd, "help") && argc > 2) {
		/* `stackprof help run` is `stackprof run --help` */
		const struct sp_command *c = sp_find(argv[2]);
		if (!c) {
			sp_cli_error("'%s' is not a stackprof command; see 'stackprof --help'",
				     argv[2]);
			return SP_EXIT_USAGE;
		}
		static char help_opt[] = "--help";
		char *hv[] = {argv[2], help_opt, NULL};
		return c->fn(2, hv);
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
		return sp_usage(stdout);
	if (!strcmp(cmd, "--version")) {
		printf("stackprof %s\n", SP_VERSION);
		return SP_EXIT_OK;
	}
	const struct sp_command *c = sp_find(cmd);
	if (c)
		return c->fn(argc - 1, argv + 1);
	sp_cli_error("'%s' is not a stackprof command; see 'stackprof --help'", cmd);
	return SP_EXIT_USAGE;
}
