/*
 * commands.h - one entry point per subcommand, each in tools/cmd-<name>.c
 * with its own usage text and examples (perf's builtin-*.c, git's commands[]).
 * Each returns an exit code: 0 ok, 1 error, 2 usage.
 */
#ifndef SP_TOOLS_COMMANDS_H
#define SP_TOOLS_COMMANDS_H

int sp_cmd_run(int argc, char **argv);
int sp_cmd_info(int argc, char **argv);
int sp_cmd_collapse(int argc, char **argv);
int sp_cmd_table(int argc, char **argv);
int sp_cmd_top(int argc, char **argv);
int sp_cmd_diff(int argc, char **argv);
int sp_cmd_flamegraph(int argc, char **argv);
int sp_cmd_export(int argc, char **argv);
int sp_cmd_symbolize(int argc, char **argv);
int sp_cmd_cache(int argc, char **argv);

#endif
