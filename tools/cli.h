/*
 * cli.h - what every stackprof subcommand shares: the command table entry,
 * exit codes, error printing and checked output.
 *
 * Exit codes follow elfutils and git: 0 ok, 1 error (bad input, I/O), 2 usage.
 * Only tools/ prints or exits; the layers below return errors.
 */
#ifndef SP_TOOLS_CLI_H
#define SP_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collapse.h"
#include "label.h"
#include "model.h"
#include "profile.h"

#define SP_EXIT_OK    0
#define SP_EXIT_ERROR 1
#define SP_EXIT_USAGE 2

struct sp_command {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the command name */
	const char *summary;
};

/* Prints "stackprof: <msg>\n" to stderr. */
void sp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Reads a profile for a command. On failure prints why and returns NULL. A
 * truncated or corrupt profile is returned with a warning saying what was
 * kept, unless strict is set. The caller frees it with sp_profile_free().
 */
struct sp_profile *sp_cli_read_profile(const char *path);

/* getopt codes of the options every symbolizing command shares. */
enum {
	SP_OPT_THREAD = 0x1000,
	SP_OPT_RANGE,
	SP_OPT_NO_RANGES,
	SP_OPT_NO_INLINE,
	SP_OPT_BASENAMES,
	SP_OPT_SEARCH_DIR,
};

/* Their entries, for a command's struct option table. */
#define SP_CLI_MODEL_LONGOPTS                                                                      \
	{"thread", required_argument, NULL, SP_OPT_THREAD},                                        \
	    {"range", required_argument, NULL, SP_OPT_RANGE},                                      \
	    {"no-ranges", no_argument, NULL, SP_OPT_NO_RANGES},                                    \
	    {"no-inline", no_argument, NULL, SP_OPT_NO_INLINE},                                    \
	    {"basenames", no_argument, NULL, SP_OPT_BASENAMES},                                    \
	{                                                                                          \
		"search-dir", required_argument, NULL, SP_OPT_SEARCH_DIR                           \
	}

/*
 * Applies one of those options to mo, for a command's getopt default case.
 * *tids owns the parsed --thread list (mo->tids points into it; free it when
 * done). Returns 1 if opt was one of them. Otherwise it has printed why
 * (a bad value, or usage for an unknown option), set *rc to the usage exit
 * status, and returns 0.
 */
int sp_cli_model_option(struct sp_model_opts *mo, int32_t **tids, int opt, const char *arg,
			const char *usage, int *rc);

/*
 * Symbolizes prof into a model for a command. On failure prints why and
 * returns NULL. Prints to stderr the symbolizer warnings a user must see
 * (a binary that changed since the run, a missing file), at most a few;
 * "no debug info" notes are left to `stackprof info`.
 */
struct sp_model *sp_cli_build_model(const char *path, const struct sp_profile *prof,
				    const struct sp_model_opts *mo);

/*
 * Flushes and checks stdout (or f). Returns SP_EXIT_OK, or prints the error
 * and returns SP_EXIT_ERROR. A closed pipe (EPIPE, as after `| head`) is
 * quiet success: the reader asked for no more.
 */
int sp_cli_finish_output(FILE *f, const char *name);

/*
 * Ends a command's output, written by a writer that returned err (0 or
 * -errno; -EPIPE, a reader that went away, is quiet success). Closes out
 * unless it is stdout. Returns the exit status: 1 on a write error, and
 * also when partial (the profile was cut off: what it had was printed, but
 * a script must not take the run for clean).
 */
int sp_cli_end_output(FILE *out, const char *name, int err, bool partial);

/* Opens path for writing ("-" is stdout); prints why and returns NULL on error. */
FILE *sp_cli_open_output(const char *path);

/* Parses a non-negative integer option value; prints and returns false on error. */
bool sp_cli_parse_ulong(const char *opt, const char *s, unsigned long min, unsigned long max,
			unsigned long *out);

/* Help text printer: prints text and returns exit status 0, or 2 to stderr if is_error. */
int sp_cli_usage(const char *text, bool is_error);

/*
 * Checks that exactly want operands follow the options. If not, prints what
 * (e.g. "top: expected one PROFILE") and the usage, sets *rc and returns false.
 */
bool sp_cli_operands(int argc, int optind, int want, const char *what, const char *usage, int *rc);

/* --metric us|samples and --frame STYLE: print why and return false if bad. */
bool sp_cli_parse_metric(const char *s, enum sp_metric *out);
bool sp_cli_parse_frame(const char *s, enum sp_label_style *out);

/* A profile read and symbolized for a command. */
struct sp_cli_input {
	struct sp_profile *prof;
	struct sp_model *model;
};

/*
 * Reads path and builds its model with mo (sp_cli_read_profile, then
 * sp_cli_build_model). On failure prints why and returns false; whatever was
 * made stays in *in for sp_cli_unload, which takes a zeroed *in too.
 */
bool sp_cli_load(const char *path, const struct sp_model_opts *mo, struct sp_cli_input *in);
/* Whether in's profile was cut off (its output is then not a clean run's). */
bool sp_cli_partial(const struct sp_cli_input *in);
void sp_cli_unload(struct sp_cli_input *in);

#endif
